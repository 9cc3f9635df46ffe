//===- ImportONNX.h - ONNX models to tg forward functions -------*- C++ -*-===//
//
// Translates an ONNX model (a .onnx file, opsets 13 to 17) into a module
// holding one tg forward function (docs/Importing.md):
//
//   * graph inputs become `tg.input` arguments (or `tg.label` where they
//     feed a loss's labels);
//   * floating-point initializers become `tg.param` arguments whose initial
//     value, `tg.init`, is the initializer's data (a dense resource blob),
//     unless frozen; the other initializers become constants;
//   * nodes become tg ops located at `loc("<node name>"("<file>":<n>:0))`,
//     n the node's 1-based index in the graph, so reports and precision
//     overrides use the model's own layer names;
//   * graph outputs are returned (`tg.output = "<name>"`, `tg.loss` for a
//     loss the graph computes).
//
// The decomposed forms exporters emit for LayerNorm, GELU and softmax are
// raised to the tg ops (tg-raise-decomposed-ops), because mixed-precision
// decisions depend on knowing what a region computes.
//
//===----------------------------------------------------------------------===//

#ifndef MP_TARGET_ONNX_IMPORTONNX_H
#define MP_TARGET_ONNX_IMPORTONNX_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mp {

struct OnnxImportOptions {
  /// Shapes for graph inputs whose dimensions are symbolic or unknown
  /// (a dynamic batch size): input name -> dimensions.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// The size of the first dimension of inputs whose first dimension is
  /// symbolic or unknown (and not given in inputShapes); 0 for none.
  int64_t batchSize = 0;
  /// Floating-point initializers whose name matches one of these globs
  /// stay constants instead of becoming trained parameters.
  std::vector<std::string> freeze;
  /// Labels to add for training on a model that returns predictions:
  /// `none`, `classes` (an i32 class index per row of the prediction,
  /// for softmax cross-entropy), `targets` (a tensor of the prediction's
  /// type, for MSE) or `auto` (classes when the graph computes no loss of
  /// its own). The labels argument is named "labels"; the prediction is
  /// then returned as `tg.output = "logits"`.
  std::string labels = "none";
  /// Computes in f64 where the model computes in f32 (for finite-difference
  /// gradient checks).
  bool useF64 = false;
  /// Raise decomposed LayerNorm, GELU and softmax subgraphs to tg ops.
  bool raiseDecomposedOps = true;
  /// The name of the function; by default "model".
  std::string functionName = "model";
  /// Graph inputs bound to constant values: input name -> a serialized
  /// TensorProto file. A bound input is no argument; the importer folds it
  /// like an initializer (shape and axes operands, for instance).
  std::map<std::string, std::string> constantInputs;
};

/// Parses "name=64x784" into `options.inputShapes`.
llvm::Error parseInputShape(llvm::StringRef spec, OnnxImportOptions &options);

/// Imports the model at `path`. Diagnostics (an unsupported op names its
/// type, opset and node) go to the context's handler; returns null on
/// failure. The context must have the tg and func dialects loaded or
/// registered.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(llvm::StringRef path,
                                                  mlir::MLIRContext *context,
                                                  const OnnxImportOptions &options);

/// What a model holds, read without shape inference or import.
struct OnnxGraphSummary {
  /// The op type of every node, in graph order.
  std::vector<std::string> opTypes;
  /// The graph inputs that are not initializers, in order, and whether
  /// each is floating-point.
  std::vector<std::string> inputs;
  std::vector<bool> floatInputs;
  std::vector<std::string> outputs;
};
llvm::Expected<OnnxGraphSummary> summarizeOnnxModel(llvm::StringRef path);

/// Reads a serialized TensorProto (the .pb files of ONNX's backend tests)
/// as an attribute of the element type the importer gives it (f64 for
/// FLOAT with `useF64`).
llvm::Expected<mlir::DenseElementsAttr>
readOnnxTensor(llvm::StringRef path, mlir::MLIRContext *context,
               bool useF64 = false);

/// The op types the importer translates (for the conformance driver and
/// the docs).
std::vector<std::string> getSupportedOnnxOps();

} // namespace mp

#endif // MP_TARGET_ONNX_IMPORTONNX_H
