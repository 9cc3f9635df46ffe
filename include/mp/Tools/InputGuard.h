//===- InputGuard.h - checks run on input before the MLIR parser -*- C++ -*-===//
//
// MLIR's textual parser is recursive descent: input that nests brackets tens
// of thousands of levels deep overflows the stack before any diagnostic is
// emitted. Real training graphs nest a handful of levels, so mp's tools
// reject text nested deeper than a fixed bound, with a located error, before
// parsing it.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_INPUTGUARD_H
#define MP_TOOLS_INPUTGUARD_H

#include "llvm/Support/LogicalResult.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace mp {

/// The deepest bracket nesting the tools accept. The parser, verifier and
/// printer stay well inside an 8 MiB stack at this depth.
constexpr unsigned kMaxInputNesting = 1000;

/// Fails, printing `<buffer>:<line>:<col>: error: ...` to `os`, when textual
/// `buffer` nests (), [], {} or <> deeper than `maxDepth`. Strings and
/// comments are skipped; bytecode is accepted unchecked.
llvm::LogicalResult checkInputNesting(llvm::MemoryBufferRef buffer,
                                      llvm::raw_ostream &os,
                                      unsigned maxDepth = kMaxInputNesting);

} // namespace mp

#endif // MP_TOOLS_INPUTGUARD_H
