//===- Memory.h - sizes checked before they are allocated -------*- C++ -*-===//
//
// A size read from a file or an option (an ONNX initializer's shape, a batch
// size, a sample count) can ask for more memory than the machine will ever
// have; allocating it aborts the process (LLVM's out-of-memory handler).
// mp checks such sizes first and reports what asked for how much.
//
//===----------------------------------------------------------------------===//

#ifndef MP_SUPPORT_MEMORY_H
#define MP_SUPPORT_MEMORY_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace mp {

/// The most memory this process can ever hold: physical memory plus swap,
/// or the address-space limit (ulimit -v) or its container's memory limit
/// (cgroup v1 or v2) where that is lower.
uint64_t memoryCeiling();

/// "512 B", "3.0 KiB", "1.5 GiB".
std::string formatBytes(uint64_t bytes);

/// An error saying that `what` needs `bytes`, more than memoryCeiling(),
/// or success.
llvm::Error checkAllocation(uint64_t bytes, const llvm::Twine &what);

} // namespace mp

#endif // MP_SUPPORT_MEMORY_H
