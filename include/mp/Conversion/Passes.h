//===- Passes.h - mp conversion passes --------------------------*- C++ -*-===//
//
// Conversions out of the tg dialect, and the pipeline from a tg training
// step to the LLVM dialect that the runner JIT-compiles and `mp-compile`
// turns into an object file.
//
//===----------------------------------------------------------------------===//

#ifndef MP_CONVERSION_PASSES_H
#define MP_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

namespace mp {

#define GEN_PASS_DECL
#include "mp/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "mp/Conversion/Passes.h.inc"

/// Adds the passes from tg (after any mixed-precision passes) to the LLVM
/// dialect: convert-tg-to-runtime, then upstream's memref (generic
/// allocation functions, served by the runtime), arith, func (bare-pointer
/// memref arguments, so a compiled step takes one pointer per tensor) and
/// control-flow lowerings.
void buildTGLowerToLLVMPipeline(mlir::OpPassManager &pm);

/// Registers `tg-lower-to-llvm`.
void registerTGLowerToLLVMPipeline();

} // namespace mp

#endif // MP_CONVERSION_PASSES_H
