//===- HostTensor.cpp - host tensors, .npy and safetensors ----------------===//

#include "mp/Runner/HostTensor.h"

#include "mp/Support/FileOutput.h"
#include "mp/Support/Json.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

#include <cstring>

using namespace mp;
using namespace mp::runner;
using llvm::createStringError;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

HostTensor::HostTensor(mpElementType type, std::vector<int64_t> shape)
    : type(type), shape(std::move(shape)) {
  storage.assign((byteSize() + 7) / 8, 0);
}

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double HostTensor::getFloat(int64_t i) const {
  switch (type) {
  case MP_F32: return as<float>()[i];
  case MP_F64: return as<double>()[i];
  case MP_F16: return mpF16ToF32(as<uint16_t>()[i]);
  case MP_BF16: return mpBF16ToF32(as<uint16_t>()[i]);
  default: return static_cast<double>(getInt(i));
  }
}

void HostTensor::setFloat(int64_t i, double value) {
  switch (type) {
  case MP_F32: as<float>()[i] = static_cast<float>(value); return;
  case MP_F64: as<double>()[i] = value; return;
  case MP_F16: as<uint16_t>()[i] = mpF32ToF16(static_cast<float>(value)); return;
  case MP_BF16:
    as<uint16_t>()[i] = mpF32ToBF16(static_cast<float>(value));
    return;
  default: setInt(i, static_cast<int64_t>(value)); return;
  }
}

int64_t HostTensor::getInt(int64_t i) const {
  switch (type) {
  case MP_I32: return as<int32_t>()[i];
  case MP_I64: return as<int64_t>()[i];
  case MP_I1: return as<uint8_t>()[i] != 0;
  default: return static_cast<int64_t>(getFloat(i));
  }
}

void HostTensor::setInt(int64_t i, int64_t value) {
  switch (type) {
  case MP_I32: as<int32_t>()[i] = static_cast<int32_t>(value); return;
  case MP_I64: as<int64_t>()[i] = value; return;
  case MP_I1: as<uint8_t>()[i] = value != 0; return;
  default: setFloat(i, static_cast<double>(value)); return;
  }
}

std::string HostTensor::describe() const { return describeShape(type, shape); }

std::string runner::describeShape(mpElementType type,
                                  llvm::ArrayRef<int64_t> shape) {
  std::string s = elementTypeName(type);
  s += "[";
  for (size_t d = 0; d < shape.size(); ++d)
    s += (d ? ", " : "") + std::to_string(shape[d]);
  return s + "]";
}

std::optional<uint64_t> runner::checkedByteSize(mpElementType type,
                                                llvm::ArrayRef<int64_t> shape) {
  uint64_t bytes = mpElementSize(type);
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(bytes, uint64_t(d), &bytes))
      return std::nullopt;
  return bytes;
}

llvm::Error runner::assignElements(HostTensor &t, mlir::ElementsAttr init,
                                   llvm::StringRef name) {
  if (auto resource = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(init)) {
    mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return createStringError(std::errc::invalid_argument,
                               "the tg.init of '%s' names resource '%s', "
                               "which the file does not define",
                               name.str().c_str(),
                               resource.getRawHandle().getKey().str().c_str());
    llvm::ArrayRef<char> data = blob->getData();
    if (data.size() != t.byteSize())
      return createStringError(std::errc::invalid_argument,
                               "the tg.init of '%s' holds %zu bytes, %s needs "
                               "%zu",
                               name.str().c_str(), data.size(),
                               t.describe().c_str(), t.byteSize());
    if (!data.empty())
      std::memcpy(t.data(), data.data(), data.size());
    return llvm::Error::success();
  }
  auto dense = llvm::cast<mlir::DenseElementsAttr>(init);
  bool isFloat = llvm::isa<mlir::FloatType>(dense.getElementType());
  int64_t i = 0;
  if (dense.isSplat()) {
    double v = isFloat ? dense.getSplatValue<llvm::APFloat>().convertToDouble()
                       : double(dense.getSplatValue<llvm::APInt>().getSExtValue());
    for (; i < t.numElements(); ++i)
      isFloat ? t.setFloat(i, v) : t.setInt(i, int64_t(v));
  } else if (isFloat) {
    for (const llvm::APFloat &v : dense.getValues<llvm::APFloat>())
      t.setFloat(i++, v.convertToDouble());
  } else {
    for (const llvm::APInt &v : dense.getValues<llvm::APInt>())
      t.setInt(i++, v.getSExtValue());
  }
  return llvm::Error::success();
}

std::optional<mpElementType> runner::toElementType(mlir::Type type) {
  if (type.isF32()) return MP_F32;
  if (type.isF16()) return MP_F16;
  if (type.isBF16()) return MP_BF16;
  if (type.isF64()) return MP_F64;
  if (type.isInteger(32)) return MP_I32;
  if (type.isInteger(64)) return MP_I64;
  if (type.isInteger(1)) return MP_I1;
  return std::nullopt;
}

const char *runner::elementTypeName(mpElementType type) {
  return mpElementTypeName(type);
}

//===----------------------------------------------------------------------===//
// .npy
//===----------------------------------------------------------------------===//

static std::optional<mpElementType> npyType(StringRef descr) {
  if (descr.size() == 3 && descr[0] == '>' && descr.substr(1) != "b1" &&
      descr.substr(1) != "u1")
    return std::nullopt; // big-endian
  StringRef kind = descr.drop_front(descr.size() == 3 ? 1 : 0);
  if (kind == "f4") return MP_F32;
  if (kind == "f2") return MP_F16;
  if (kind == "f8") return MP_F64;
  if (kind == "i4") return MP_I32;
  if (kind == "i8") return MP_I64;
  if (kind == "b1") return MP_I1;
  return std::nullopt;
}

static const char *npyDescr(mpElementType type) {
  switch (type) {
  case MP_F32: return "<f4";
  case MP_F16: return "<f2";
  case MP_F64: return "<f8";
  case MP_I32: return "<i4";
  case MP_I64: return "<i8";
  case MP_I1: return "|b1";
  case MP_BF16: return nullptr; // NumPy has no bf16
  }
  return nullptr;
}

Expected<HostTensor> runner::readNpy(StringRef path) {
  auto fail = [&](const llvm::Twine &why) {
    return createStringError(std::errc::invalid_argument,
                             "%s: %s", path.str().c_str(), why.str().c_str());
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return fail("cannot read: " + buffer.getError().message());
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 10 || !bytes.starts_with("\x93NUMPY"))
    return fail("not a .npy file");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLength, offset;
  if (major == 1) {
    headerLength = static_cast<unsigned char>(bytes[8]) |
                   static_cast<unsigned char>(bytes[9]) << 8;
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return fail("truncated header");
    headerLength = 0;
    for (int k = 0; k < 4; ++k)
      headerLength |= size_t(static_cast<unsigned char>(bytes[8 + k])) << (8 * k);
    offset = 12;
  } else {
    return fail("unsupported .npy version " + llvm::Twine(major));
  }
  if (offset + headerLength > bytes.size())
    return fail("truncated header");
  StringRef header = bytes.substr(offset, headerLength);
  auto field = [&](StringRef key) -> StringRef {
    size_t at = header.find(("'" + key + "'").str());
    if (at == StringRef::npos)
      return {};
    StringRef rest = header.substr(at + key.size() + 2).ltrim(" :");
    return rest;
  };
  StringRef descr = field("descr");
  if (!descr.consume_front("'"))
    return fail("header has no 'descr'");
  descr = descr.take_until([](char c) { return c == '\''; });
  std::optional<mpElementType> type = npyType(descr);
  if (!type)
    return fail("unsupported dtype '" + descr +
                "' (use f2, f4, f8, i4, i8 or b1, little-endian)");
  StringRef order = field("fortran_order");
  if (order.starts_with("True"))
    return fail("Fortran-ordered arrays are not supported");
  if (!order.starts_with("False"))
    return fail("header has no 'fortran_order'");
  StringRef shapeText = field("shape");
  if (!shapeText.consume_front("("))
    return fail("header has no 'shape'");
  shapeText = shapeText.take_until([](char c) { return c == ')'; });
  std::vector<int64_t> shape;
  llvm::SmallVector<StringRef> parts;
  shapeText.split(parts, ',');
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t d;
    if (part.getAsInteger(10, d) || d < 0)
      return fail("bad dimension '" + part + "'");
    shape.push_back(d);
  }
  size_t dataOffset = offset + headerLength;
  uint64_t dataBytes = bytes.size() - dataOffset;
  // The header's size is checked against the file before anything is
  // allocated, without overflow, whatever its dimensions claim.
  std::optional<uint64_t> claimed = checkedByteSize(*type, shape);
  if (!claimed || *claimed != dataBytes)
    return fail("holds " + llvm::Twine(dataBytes) +
                " data bytes, but its header says " +
                describeShape(*type, shape) + " (" +
                (claimed ? llvm::Twine(*claimed) + " bytes"
                         : llvm::Twine("more bytes than a file can hold")) +
                ")");
  HostTensor tensor(*type, shape);
  if (tensor.byteSize()) // an empty array's storage may be null
    std::memcpy(tensor.data(), bytes.data() + dataOffset, tensor.byteSize());
  return tensor;
}

Error runner::writeNpy(StringRef path, const HostTensor &tensor) {
  const char *descr = npyDescr(tensor.type);
  if (!descr)
    return createStringError(std::errc::invalid_argument,
                             "%s: NumPy cannot store %s", path.str().c_str(),
                             elementTypeName(tensor.type));
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': (";
  for (int64_t d : tensor.shape)
    header += std::to_string(d) + ", ";
  if (!tensor.shape.empty())
    header.resize(header.size() - (tensor.shape.size() == 1 ? 1 : 2));
  header += "), }";
  while ((10 + header.size() + 1) % 64)
    header += ' ';
  header += '\n';
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
       << char(header.size() >> 8) << header;
    os.write(static_cast<const char *>(tensor.data()), tensor.byteSize());
    return Error::success();
  });
}

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

static const char *safetensorsDType(mpElementType type) {
  switch (type) {
  case MP_F32: return "F32";
  case MP_F16: return "F16";
  case MP_BF16: return "BF16";
  case MP_F64: return "F64";
  case MP_I32: return "I32";
  case MP_I64: return "I64";
  case MP_I1: return "BOOL";
  }
  return "?";
}

Expected<Checkpoint> runner::readSafetensors(StringRef path) {
  auto fail = [&](const llvm::Twine &why) {
    return createStringError(std::errc::invalid_argument, "%s: %s",
                             path.str().c_str(), why.str().c_str());
  };
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buffer)
    return fail("cannot read: " + buffer.getError().message());
  StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 8)
    return fail("not a safetensors file (too short)");
  uint64_t headerLength = 0;
  for (int k = 0; k < 8; ++k)
    headerLength |= uint64_t(static_cast<unsigned char>(bytes[k])) << (8 * k);
  if (headerLength > bytes.size() - 8)
    return fail("corrupt: header length " + llvm::Twine(headerLength) +
                " exceeds the file");
  Expected<llvm::json::Value> header =
      mp::parseJson(bytes.substr(8, headerLength));
  if (!header)
    return fail("corrupt header: " + llvm::toString(header.takeError()));
  auto *object = header->getAsObject();
  if (!object)
    return fail("corrupt header: not a JSON object");
  StringRef data = bytes.substr(8 + headerLength);
  Checkpoint ckpt;
  for (auto &[key, value] : *object) {
    auto *entry = value.getAsObject();
    if (!entry)
      return fail("corrupt entry '" + key.str() + "'");
    if (key == "__metadata__") {
      for (auto &[k, v] : *entry)
        if (auto s = v.getAsString())
          ckpt.metadata[k.str()] = s->str();
      continue;
    }
    std::optional<StringRef> dtype = entry->getString("dtype");
    const llvm::json::Array *shape = entry->getArray("shape");
    const llvm::json::Array *offsets = entry->getArray("data_offsets");
    if (!dtype || !shape || !offsets || offsets->size() != 2)
      return fail("corrupt entry '" + key.str() + "'");
    std::optional<mpElementType> type;
    for (mpElementType t :
         {MP_F32, MP_F16, MP_BF16, MP_F64, MP_I32, MP_I64, MP_I1})
      if (*dtype == safetensorsDType(t))
        type = t;
    if (!type)
      return fail("tensor '" + key.str() + "' has unsupported dtype " + *dtype);
    std::vector<int64_t> dims;
    for (const llvm::json::Value &d : *shape) {
      std::optional<int64_t> n = d.getAsInteger();
      if (!n || *n < 0)
        return fail("tensor '" + key.str() + "' has a bad shape");
      dims.push_back(*n);
    }
    std::optional<int64_t> begin = (*offsets)[0].getAsInteger(),
                           end = (*offsets)[1].getAsInteger();
    // Checked before anything is allocated, without overflow.
    std::optional<uint64_t> claimed = checkedByteSize(*type, dims);
    if (!begin || !end || *begin < 0 || *end < *begin ||
        static_cast<uint64_t>(*end) > data.size() || !claimed ||
        static_cast<uint64_t>(*end - *begin) != *claimed)
      return fail("corrupt: tensor '" + key.str() +
                  "' has data offsets outside the file or not matching " +
                  describeShape(*type, dims));
    HostTensor tensor(*type, dims);
    if (tensor.byteSize()) // an empty tensor's storage may be null
      std::memcpy(tensor.data(), data.data() + *begin, tensor.byteSize());
    ckpt.tensors[key.str()] = std::move(tensor);
  }
  return ckpt;
}

int64_t runner::countNonFinite(const HostTensor &tensor, int64_t *first) {
  if (tensor.type != MP_F32 && tensor.type != MP_F64 &&
      tensor.type != MP_F16 && tensor.type != MP_BF16)
    return 0;
  int64_t count = 0;
  for (int64_t i = 0, n = tensor.numElements(); i < n; ++i)
    if (!std::isfinite(tensor.getFloat(i)) && count++ == 0 && first)
      *first = i;
  return count;
}

Error runner::writeSafetensors(StringRef path, const Checkpoint &ckpt) {
  if (ckpt.tensors.count(kSafetensorsMetadataKey))
    return createStringError(std::errc::invalid_argument,
                             "cannot write '%s': a tensor is named '%s', "
                             "which safetensors reserves for its metadata",
                             path.str().c_str(), kSafetensorsMetadataKey);
  llvm::json::Object header;
  uint64_t offset = 0;
  for (auto &[name, tensor] : ckpt.tensors) {
    llvm::json::Array shape;
    for (int64_t d : tensor.shape)
      shape.push_back(d);
    header[name] = llvm::json::Object{
        {"dtype", safetensorsDType(tensor.type)},
        {"shape", std::move(shape)},
        {"data_offsets",
         llvm::json::Array{int64_t(offset), int64_t(offset + tensor.byteSize())}}};
    offset += tensor.byteSize();
  }
  llvm::json::Object metadata;
  for (auto &[k, v] : ckpt.metadata)
    metadata[k] = v;
  header["__metadata__"] = std::move(metadata);
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(header));
  while (text.size() % 8)
    text += ' ';
  return writeFileAtomically(path, [&](llvm::raw_ostream &os) {
    uint64_t n = text.size();
    for (int k = 0; k < 8; ++k)
      os << char((n >> (8 * k)) & 0xff);
    os << text;
    for (auto &[name, tensor] : ckpt.tensors)
      os.write(static_cast<const char *>(tensor.data()), tensor.byteSize());
    return Error::success();
  });
}
