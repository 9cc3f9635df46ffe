//===- HostTensor.h - host tensors, .npy and safetensors --------*- C++ -*-===//
//
// The runner keeps every step argument in a HostTensor: row-major bytes with
// a runtime element type and shape. Loading and saving go through two
// formats: NumPy's .npy (datasets) and safetensors (checkpoints). Both are
// written through a temporary file renamed into place (mp/Support), so a
// crash or a full disk never leaves half a file; both are read defensively:
// a header's sizes are checked against the file, without overflow, before
// anything is allocated.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNNER_HOSTTENSOR_H
#define MP_RUNNER_HOSTTENSOR_H

#include "mp/Runtime/MPRuntime.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mp::runner {

struct HostTensor {
  mpElementType type = MP_F32;
  std::vector<int64_t> shape;
  /// 8-byte aligned storage of numElements() elements.
  std::vector<uint64_t> storage;

  HostTensor() = default;
  HostTensor(mpElementType type, std::vector<int64_t> shape);

  int64_t numElements() const;
  size_t byteSize() const { return numElements() * mpElementSize(type); }
  void *data() { return storage.data(); }
  const void *data() const { return storage.data(); }
  template <typename T> T *as() { return reinterpret_cast<T *>(data()); }
  template <typename T> const T *as() const {
    return reinterpret_cast<const T *>(data());
  }
  /// Element `i` of a floating-point tensor as a double.
  double getFloat(int64_t i) const;
  void setFloat(int64_t i, double value);
  /// Element `i` of an integer (or i1) tensor.
  int64_t getInt(int64_t i) const;
  void setInt(int64_t i, int64_t value);
  std::string describe() const; // "f32[32, 64]"
};

/// "f32[32, 64]".
std::string describeShape(mpElementType type, llvm::ArrayRef<int64_t> shape);
/// The bytes of a tensor of `shape`, or nothing when a dimension is negative
/// or the size overflows 64 bits (an untrusted file's header).
std::optional<uint64_t> checkedByteSize(mpElementType type,
                                        llvm::ArrayRef<int64_t> shape);

/// The runtime element type of an MLIR element type, if it has one.
std::optional<mpElementType> toElementType(mlir::Type type);
const char *elementTypeName(mpElementType type);

/// Sets `tensor` (of the attribute's type) to the value of `init`, a
/// tg.init attribute: a dense elements attribute or a dense resource blob.
llvm::Error assignElements(HostTensor &tensor, mlir::ElementsAttr init,
                           llvm::StringRef name);

/// Reads a .npy file (little-endian, C order; f2/f4/f8, i4/i8, b1).
llvm::Expected<HostTensor> readNpy(llvm::StringRef path);
/// Writes a .npy file atomically.
llvm::Error writeNpy(llvm::StringRef path, const HostTensor &tensor);

/// The number of NaN and infinite values of a floating-point tensor (0 for
/// integers), and the index of the first in `first`.
int64_t countNonFinite(const HostTensor &tensor, int64_t *first = nullptr);

/// The name safetensors reserves for its metadata: no tensor can have it.
constexpr const char *kSafetensorsMetadataKey = "__metadata__";

/// A safetensors file: named tensors plus string metadata.
struct Checkpoint {
  std::map<std::string, HostTensor> tensors;
  std::map<std::string, std::string> metadata;
};

llvm::Expected<Checkpoint> readSafetensors(llvm::StringRef path);
/// Writes through a temporary renamed over `path`.
llvm::Error writeSafetensors(llvm::StringRef path, const Checkpoint &ckpt);

} // namespace mp::runner

#endif // MP_RUNNER_HOSTTENSOR_H
