//===- InputGuard.h - checks run on input before the MLIR parser -*- C++
//-*-===//
//
// MLIR's textual parser, printer and bytecode writer are recursive: input
// that nests brackets, affine expressions or attributes tens of thousands of
// levels deep overflows the stack before any diagnostic is emitted. Real
// training graphs nest a handful of levels, so mp's tools reject input
// beyond fixed bounds, with a located error, before anything recursive
// touches it:
//
//  * text: bracket nesting, and the length of each affine_map / affine_set
//    body (the affine parser recurses once per operator), by one linear scan
//    before parsing;
//  * bytecode: the reader itself is iterative, so the module is read and
//    then measured (nesting of attributes and types, and of regions) without
//    recursion, before it is verified or printed.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TOOLS_INPUTGUARD_H
#define MP_TOOLS_INPUTGUARD_H

#include "llvm/Support/LogicalResult.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir {
class DialectRegistry;
class Operation;
} // namespace mlir

namespace mp {

/// The deepest bracket, region or attribute nesting the tools accept. The
/// parser, verifier and printer stay well inside an 8 MiB stack at this
/// depth.
constexpr unsigned kMaxInputNesting = 1000;

/// The most operators (`+ - * floordiv ceildiv mod`) one affine_map or
/// affine_set may hold.
constexpr unsigned kMaxAffineOperators = 1000;

/// Fails, printing `<buffer>:<line>:<col>: error: ...` to `os`, when textual
/// `buffer` nests (), [], {} or <> deeper than `maxDepth` or holds an affine
/// map or set with more than kMaxAffineOperators operators. Strings and
/// comments are skipped. Bytecode passes (see checkBytecodeNesting).
llvm::LogicalResult checkInputNesting(llvm::MemoryBufferRef buffer,
                                      llvm::raw_ostream &os,
                                      unsigned maxDepth = kMaxInputNesting);

/// Fails, printing `<where>: error: ...` to `os`, when the IR under `root`
/// nests regions, or attributes and types (locations included), deeper than
/// `maxDepth`. Uses no recursion, so any depth is measured safely.
llvm::LogicalResult checkIRNesting(mlir::Operation *root, llvm::raw_ostream &os,
                                   llvm::StringRef where,
                                   unsigned maxDepth = kMaxInputNesting);

/// For a bytecode `buffer`: reads it (the bytecode reader is iterative) into
/// a scratch context with the dialects of `registry` and runs
/// checkIRNesting. Text, and bytecode that does not read (its error is left
/// to the real parse), pass.
llvm::LogicalResult checkBytecodeNesting(llvm::MemoryBufferRef buffer,
                                         const mlir::DialectRegistry &registry,
                                         bool allowUnregisteredDialects,
                                         llvm::raw_ostream &os);

} // namespace mp

#endif // MP_TOOLS_INPUTGUARD_H
