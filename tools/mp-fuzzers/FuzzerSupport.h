//===- FuzzerSupport.h - what the fuzz targets share ------------*- C++ -*-===//
//
// The readers mp fuzzes take a path, as users call them: an input is written
// to a file in a directory private to the process, then read back through
// the real code path. Diagnostics are dropped unless MP_FUZZ_VERBOSE is set
// (to see why a replayed input is rejected). A finding is a crash: a
// sanitizer report, an assertion, or reportBug() for an input the code
// accepted but got wrong.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_MP_FUZZERS_FUZZERSUPPORT_H
#define MP_TOOLS_MP_FUZZERS_FUZZERSUPPORT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/ADT/Twine.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace mlir {
class DialectRegistry;
class MLIRContext;
class ModuleOp;
class PassManager;
} // namespace mlir

namespace mp::fuzz {

/// Writes `size` bytes to `name` in the process's private directory and
/// returns its path; reportBug() when that fails (no finding of the code
/// under test, but nothing could be tested).
std::string writeInput(const uint8_t *data, size_t size, llvm::StringRef name);

/// The process's private directory (made on first use, removed at exit).
const std::string &privateDirectory();

/// Whether MP_FUZZ_VERBOSE is set.
bool verbose();

/// Drops the context's diagnostics, or prints them when verbose().
void silenceDiagnostics(mlir::MLIRContext &context);

/// mp's dialects (registerAllDialects), built once.
mlir::DialectRegistry &registry();

/// Runs `pipeline` (the passes of a module's pass manager, without the
/// builtin.module anchor, which would nest) on `module`, with the IR verified
/// after every pass that succeeds in place of the pass manager's own
/// verifier: a pass may fail, but a pass that leaves IR that does not verify
/// is reportBug()ed. Says when verbose() whether the pipeline succeeded.
void runPipeline(mlir::ModuleOp module, llvm::StringRef pipeline);

/// Prints `what` and aborts: libFuzzer saves the input as a crash.
[[noreturn]] void reportBug(const llvm::Twine &what);

} // namespace mp::fuzz

#endif // MP_TOOLS_MP_FUZZERS_FUZZERSUPPORT_H
