//===- Weights.h - initial weights in safetensors files ---------*- C++ -*-===//
//
// A model's initial parameter values travel either in the IR (tg.init, a
// dense resource for an imported model) or in a safetensors file next to
// it (mp-import-onnx writes one for large models; mp-runner reads it with
// --init-weights).
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_WEIGHTS_H
#define MP_RUNNER_WEIGHTS_H

#include "mp/Runner/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace mp::runner {

/// Bytes of the tg.init values of every tg.param argument in `module`.
uint64_t initialWeightBytes(mlir::ModuleOp module);

/// Writes the tg.init values of the tg.param arguments of `module` to a
/// safetensors file at `path` (atomically) and removes them from the IR.
/// Returns how many it moved.
llvm::Expected<unsigned> externaliseWeights(mlir::ModuleOp module,
                                            llvm::StringRef path,
                                            llvm::StringRef source);

} // namespace mp::runner

#endif // MP_RUNNER_WEIGHTS_H
