//===- Known.h - tensors the ONNX importer knows the value of ---*- C++ -*-===//
//
// Shape arithmetic in an ONNX graph (Shape -> Gather -> Concat -> Reshape),
// Constant nodes and initializers that are not trained are values the
// importer knows. It evaluates ops on them itself instead of emitting tg
// ops: the result becomes an op's attribute (a reshape's shape, a slice's
// bounds) or, when a runtime op needs it as an operand, a tg.constant.
//
//===----------------------------------------------------------------------===//

#ifndef MP_LIB_TARGET_ONNX_KNOWN_H
#define MP_LIB_TARGET_ONNX_KNOWN_H

#include "OnnxModel.h"

#include "llvm/ADT/ArrayRef.h"

namespace mp::onnx {

bool isFloatType(DataType type);
bool isIntegerType(DataType type); // including BOOL

/// A tensor value: floating-point types in `f`, integer and boolean types in
/// `i` (int64 exactly).
struct Known {
  DataType type = DataType::Float;
  std::vector<int64_t> dims;
  std::vector<double> f;
  std::vector<int64_t> i;

  bool isFloat() const { return isFloatType(type); }
  int64_t size() const;
  double getFloat(int64_t k) const { return isFloat() ? f[k] : double(i[k]); }
  /// Element `k` as an integer (a float saturates: saturatingInt).
  int64_t getInt(int64_t k) const {
    return isFloat() ? saturatingInt(f[k]) : i[k];
  }
  /// Element `k` set from a double, rounded to the type (integers truncate,
  /// BOOL is x != 0, FLOAT16/BFLOAT16/FLOAT round to their precision).
  void set(int64_t k, double value);
  void setInt(int64_t k, int64_t value);
  /// A tensor of `type` and `dims` filled with zeros.
  static Known zeros(DataType type, std::vector<int64_t> dims);
  static Known fromTensor(const Tensor &tensor);
  static Known ints(std::vector<int64_t> values, std::vector<int64_t> dims,
                    DataType type = DataType::Int64);
  /// The elements as int64 (for shapes, axes, indices).
  std::vector<int64_t> toInts() const;
};

/// Largest number of elements the importer materialises on the host while
/// folding (larger constants must come from initializers).
constexpr int64_t kMaxFoldedElements = int64_t(1) << 26;

/// The number of elements of a tensor of `dims`, saturated at INT64_MAX
/// where the product overflows (no tensor holds that many; the importer's
/// element limits refuse it).
int64_t product(llvm::ArrayRef<int64_t> dims);

/// numpy broadcasting of two shapes; false when they do not broadcast.
bool broadcastShapes(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b,
                     std::vector<int64_t> &out);

/// Whether `opType` is an elementwise op foldElementwise evaluates.
bool isFoldableElementwise(llvm::StringRef opType);

/// Evaluates an elementwise op (with numpy broadcasting) on known inputs.
/// The result type is the inputs' (BOOL for comparisons, the second
/// input's for Where). Errors say why it cannot.
llvm::Expected<Known> foldElementwise(llvm::StringRef opType,
                                      llvm::ArrayRef<const Known *> inputs);

/// Structural ops on known tensors.
Known castKnown(const Known &in, DataType to);
Known reshapeKnown(const Known &in, std::vector<int64_t> dims);
Known transposeKnown(const Known &in, llvm::ArrayRef<int64_t> permutation);
Known concatKnown(llvm::ArrayRef<const Known *> inputs, int64_t axis);
Known sliceKnown(const Known &in, llvm::ArrayRef<int64_t> offsets,
                 llvm::ArrayRef<int64_t> sizes, llvm::ArrayRef<int64_t> strides);
/// numpy take along `axis` with in-range (normalised) indices.
Known gatherKnown(const Known &in, const Known &indices, int64_t axis);
Known broadcastKnown(const Known &in, llvm::ArrayRef<int64_t> dims);

} // namespace mp::onnx

#endif // MP_LIB_TARGET_ONNX_KNOWN_H
