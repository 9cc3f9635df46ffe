//===- Importer.h - the state of one ONNX import ----------------*- C++ -*-===//
//
// The importer walks the graph's nodes in order (ONNX graphs are
// topologically sorted) and gives each node's outputs a value: a tg value,
// or a Known tensor when the value is computable while importing. A
// converter (ConvertOps.cpp) translates one node type; it reads its inputs
// and attributes and defines its outputs through this class.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_TARGET_ONNX_IMPORTER_H
#define MP_LIB_TARGET_ONNX_IMPORTER_H

#include "Known.h"
#include "OnnxModel.h"

#include "mp/Target/ONNX/ImportONNX.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <set>

namespace mp::onnx {

class Importer {
public:
  Importer(mlir::MLIRContext *context, llvm::StringRef path,
           const OnnxImportOptions &options, Model &model);

  mlir::OwningOpRef<mlir::ModuleOp> run();

  //===--------------------------------------------------------------------===//
  // For converters: the node being translated
  //===--------------------------------------------------------------------===//

  const Node &node() const { return *current; }
  /// The opset version of the node's domain.
  int64_t opset() const;
  /// An error at the node, prefixed with its name, type and opset.
  mlir::InFlightDiagnostic error();
  /// The node's location; helper ops get `suffix` appended to the name
  /// ("fc1/Gemm.bias").
  mlir::Location loc(llvm::StringRef suffix = "");

  /// Attributes with defaults. `ints` and `floats` return nothing when the
  /// attribute is absent.
  int64_t attrInt(llvm::StringRef name, int64_t otherwise) const;
  double attrFloat(llvm::StringRef name, double otherwise) const;
  std::string attrString(llvm::StringRef name, llvm::StringRef otherwise) const;
  std::optional<std::vector<int64_t>> attrInts(llvm::StringRef name) const;

  /// Inputs: `k` past the end or an empty name is an omitted optional input.
  unsigned numInputs() const { return current->inputs.size(); }
  bool hasInput(unsigned k) const;
  /// The input's ONNX element type.
  DataType inputType(unsigned k) const;
  /// The input's value when the importer knows it, else null.
  const Known *known(unsigned k) const;
  /// The input's value, which must be known (an error names `what`).
  mlir::FailureOr<const Known *> requireKnown(unsigned k,
                                              llvm::StringRef what);
  /// The input as a tg value (a known input becomes a tg.constant).
  mlir::FailureOr<mlir::Value> value(unsigned k);
  /// The input's static shape.
  std::vector<int64_t> shape(unsigned k) const;

  /// Defines output `k` (a missing optional output is ignored).
  void define(unsigned k, mlir::Value value, DataType type);
  void define(unsigned k, Known value);
  /// Whether output `k` is present and used by a node or the graph.
  bool isOutputUsed(unsigned k) const;
  unsigned numOutputs() const { return current->outputs.size(); }

  /// The MLIR element type of an ONNX element type, or an error at the
  /// node.
  mlir::FailureOr<mlir::Type> elementType(DataType type);
  /// A tg.constant holding `known`.
  mlir::Value constant(const Known &known, llvm::StringRef suffix = "");
  mlir::Value constantAt(const Known &known, mlir::Location loc);
  /// A rank-0 tg.constant of `element` holding `value`.
  mlir::Value scalar(mlir::Type element, double value,
                     llvm::StringRef suffix = "");

  mlir::OpBuilder builder;
  const OnnxImportOptions &options;
  /// Marks the loss outputs (SoftmaxCrossEntropyLoss) of the graph.
  std::set<std::string> lossValues;
  /// New values of state arguments (running statistics), by state name,
  /// returned as `tg.update` results.
  std::vector<std::pair<std::string, mlir::Value>> stateUpdates;
  /// Initializers that are state: updated by the graph, not trained.
  std::set<std::string> stateNames;

  /// The seed of training-mode dropouts: a `tg.state` argument
  /// "dropout.seed" (initially 0) added on first use, whose update is its
  /// `tg.next_seed`.
  mlir::Value dropoutSeed();
  /// A new stream for the next dropout (0, 1, ...).
  int64_t nextDropoutStream() { return dropoutStreams++; }

private:
  mlir::LogicalResult createFunction();
  mlir::LogicalResult convertNode(const Node &node, unsigned index);
  mlir::LogicalResult finishFunction();
  /// The role of each float initializer: trained or constant.
  void classifyInitializers();
  mlir::LogicalResult addLabels(llvm::StringRef predictionName, bool classes);

  mlir::MLIRContext *context;
  std::string path;
  Model &model;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::Operation *function = nullptr;
  mlir::Value seed;
  int64_t dropoutStreams = 0;
  const Node *current = nullptr;
  unsigned currentIndex = 0;
  std::map<std::string, mlir::Value> values;
  std::map<std::string, Known> knowns;
  std::map<std::string, DataType> types;
  std::set<std::string> trained, labelInputs, usedNames;
  /// The constants materialised for known values, by value name.
  std::map<std::string, mlir::Value> materialised;
};

/// Translates the current node of `importer`.
using Converter = mlir::LogicalResult (*)(Importer &importer);

/// The converters, by ONNX op type (default domain).
const llvm::StringMap<Converter> &getConverters();

/// Inputs of an op type that must be known while importing (shapes, axes,
/// exponents, indices of a constant gather...), so initializers read there
/// are never trained parameters.
bool isConstantOperand(llvm::StringRef opType, unsigned input);

} // namespace mp::onnx

#endif // MP_LIB_TARGET_ONNX_IMPORTER_H
