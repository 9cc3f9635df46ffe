//===- OnnxModel.h - an ONNX model as plain C++ data ------------*- C++ -*-===//
//
// The ONNX protobuf messages are read in one translation unit
// (OnnxReader.cpp), the only one that includes protobuf and ONNX headers and
// is compiled with exceptions (ONNX's shape inference throws). The importer
// works on the plain structures below.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_TARGET_ONNX_ONNXMODEL_H
#define MP_LIB_TARGET_ONNX_ONNXMODEL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cmath>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mp::onnx {

/// TensorProto.DataType values mp reads.
enum class DataType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  String = 8,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

/// "FLOAT", "INT64", ... for messages.
const char *dataTypeName(DataType type);
/// Bytes per element, 0 for types mp does not hold.
size_t dataTypeSize(DataType type);

/// `value` truncated to an integer, saturated at int64's bounds (NaN is 0):
/// converting a double outside int64's range is undefined behaviour, and
/// ONNX leaves such conversions undefined too.
inline int64_t saturatingInt(double value) {
  double t = std::trunc(value);
  return std::isnan(t)    ? 0
         : t >= 0x1p63    ? INT64_MAX
         : t <= -0x1p63   ? INT64_MIN
                          : static_cast<int64_t>(t);
}

/// A tensor's value: little-endian, row-major bytes of its element type.
struct Tensor {
  std::string name;
  DataType type = DataType::Undefined;
  std::vector<int64_t> dims;
  std::vector<char> bytes;

  int64_t numElements() const;
  /// Element `i` of an integer or boolean tensor.
  int64_t getInt(int64_t i) const;
  /// Element `i` of a floating-point tensor.
  double getFloat(int64_t i) const;
};

struct Attribute {
  enum class Kind { Float, Int, String, Tensor, Floats, Ints, Strings, Other };
  std::string name;
  Kind kind = Kind::Other;
  double f = 0;
  int64_t i = 0;
  std::string s;
  Tensor t;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
};

struct Node {
  std::string name, opType, domain;
  std::vector<std::string> inputs, outputs; // "" for an omitted optional one
  std::vector<Attribute> attributes;

  const Attribute *attribute(llvm::StringRef name) const;
};

/// The type of a value: element type and dimensions (-1 where unknown, with
/// the symbolic name, if any, in `symbols`).
struct ValueType {
  DataType type = DataType::Undefined;
  std::optional<std::vector<int64_t>> dims; // none: unknown rank
  std::vector<std::string> symbols;
};

struct Model {
  int64_t irVersion = 0;
  /// Opset version per domain ("" is the default ONNX domain).
  std::map<std::string, int64_t> opsets;
  std::string producer, graphName;
  std::vector<Node> nodes;
  std::vector<Tensor> initializers;
  /// Graph inputs that are not initializers, and outputs, with their types.
  std::vector<std::pair<std::string, ValueType>> inputs, outputs;
  /// Every value's type after shape inference.
  std::map<std::string, ValueType> types;
};

struct ReadOptions {
  /// Shapes for inputs with symbolic or unknown dimensions.
  std::map<std::string, std::vector<int64_t>> inputShapes;
  /// The first dimension of inputs where it is symbolic or unknown.
  int64_t batchSize = 0;
  /// Graph inputs bound to constants: input name -> serialized TensorProto.
  /// They become initializers before shape inference.
  std::map<std::string, std::string> constantInputs;
};

/// Reads `path` (a .onnx model), loads external tensor data from files next
/// to it, applies `inputShapes`, and runs ONNX shape inference. Errors name
/// the file and what is wrong.
llvm::Expected<Model> readModel(llvm::StringRef path,
                                const ReadOptions &options);

/// What a model holds, read without shape inference: the op type of every
/// node and the graph inputs that are not initializers, in order.
struct GraphSummary {
  std::vector<std::string> opTypes;
  std::vector<std::pair<std::string, DataType>> inputs;
  std::vector<std::string> outputs;
};
llvm::Expected<GraphSummary> readGraphSummary(llvm::StringRef path);

/// Reads a serialized TensorProto (the .pb files of ONNX's backend tests).
llvm::Expected<Tensor> readTensor(llvm::StringRef path);

} // namespace mp::onnx

#endif // MP_LIB_TARGET_ONNX_ONNXMODEL_H
