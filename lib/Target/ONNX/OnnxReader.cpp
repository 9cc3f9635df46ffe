//===- OnnxReader.cpp - ONNX protobuf messages to plain data --------------===//
//
// The one translation unit that includes protobuf and ONNX: it parses a
// ModelProto, loads external tensor data, fixes the shapes of inputs the
// user gave, runs ONNX's shape inference (which reports by throwing: this
// file is compiled with exceptions and catches them all), and copies what
// the importer needs into OnnxModel.h's structures. Nothing thrown leaves
// this file.
//
//===----------------------------------------------------------------------===//

#include "OnnxModel.h"

#include "mp/Support/Memory.h"

#include "onnx/defs/schema.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/ADT/ScopeExit.h"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <map>
#include <set>

using namespace mp::onnx;
using llvm::createStringError;
using llvm::Error;
using llvm::Expected;
using llvm::StringRef;

const char *mp::onnx::dataTypeName(DataType type) {
  switch (type) {
  case DataType::Float: return "FLOAT";
  case DataType::UInt8: return "UINT8";
  case DataType::Int8: return "INT8";
  case DataType::UInt16: return "UINT16";
  case DataType::Int16: return "INT16";
  case DataType::Int32: return "INT32";
  case DataType::Int64: return "INT64";
  case DataType::String: return "STRING";
  case DataType::Bool: return "BOOL";
  case DataType::Float16: return "FLOAT16";
  case DataType::Double: return "DOUBLE";
  case DataType::UInt32: return "UINT32";
  case DataType::UInt64: return "UINT64";
  case DataType::BFloat16: return "BFLOAT16";
  case DataType::Undefined: break;
  }
  return "UNDEFINED";
}

size_t mp::onnx::dataTypeSize(DataType type) {
  switch (type) {
  case DataType::Bool:
  case DataType::UInt8:
  case DataType::Int8: return 1;
  case DataType::UInt16:
  case DataType::Int16:
  case DataType::Float16:
  case DataType::BFloat16: return 2;
  case DataType::Float:
  case DataType::Int32:
  case DataType::UInt32: return 4;
  case DataType::Double:
  case DataType::Int64:
  case DataType::UInt64: return 8;
  default: return 0;
  }
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

int64_t Tensor::getInt(int64_t i) const {
  const char *p = bytes.data() + i * dataTypeSize(type);
  switch (type) {
  case DataType::Bool:
  case DataType::UInt8: return *reinterpret_cast<const uint8_t *>(p);
  case DataType::Int8: return *reinterpret_cast<const int8_t *>(p);
  case DataType::UInt16: return *reinterpret_cast<const uint16_t *>(p);
  case DataType::Int16: return *reinterpret_cast<const int16_t *>(p);
  case DataType::Int32: return *reinterpret_cast<const int32_t *>(p);
  case DataType::UInt32: return *reinterpret_cast<const uint32_t *>(p);
  case DataType::Int64:
  case DataType::UInt64: {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default: return saturatingInt(getFloat(i));
  }
}

double Tensor::getFloat(int64_t i) const {
  const char *p = bytes.data() + i * dataTypeSize(type);
  switch (type) {
  case DataType::Float: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DataType::Double: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DataType::BFloat16: {
    uint32_t bits = uint32_t(*reinterpret_cast<const uint16_t *>(p)) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  }
  case DataType::Float16: {
    uint16_t h = *reinterpret_cast<const uint16_t *>(p);
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    double v = exp == 0    ? std::ldexp(double(mant), -24)
               : exp == 31 ? (mant ? NAN : INFINITY)
                           : std::ldexp(double(mant | 0x400), exp - 25);
    return sign ? -v : v;
  }
  default: return static_cast<double>(getInt(i));
  }
}

const Attribute *Node::attribute(StringRef name) const {
  for (const Attribute &a : attributes)
    if (a.name == name)
      return &a;
  return nullptr;
}

namespace {

Error fail(StringRef where, const llvm::Twine &what) {
  return createStringError(std::errc::invalid_argument, "%s: %s",
                           where.str().c_str(), what.str().c_str());
}

/// A tensor's element count and bytes from its shape and type, or an error
/// naming it (an unsupported type, a bad shape, a size past 64 bits).
Expected<std::pair<uint64_t, uint64_t>>
shapeSize(const ::onnx::TensorProto &t, StringRef where) {
  DataType type = static_cast<DataType>(t.data_type());
  size_t size = dataTypeSize(type);
  if (!size)
    return fail(where, "tensor '" + t.name() + "' has element type " +
                           dataTypeName(type) + ", which mp does not support");
  uint64_t count = 1;
  for (int64_t d : t.dims())
    if (d < 0 || __builtin_mul_overflow(count, uint64_t(d), &count))
      return fail(where, "tensor '" + t.name() + "' has a bad shape");
  uint64_t bytes;
  if (__builtin_mul_overflow(count, uint64_t(size), &bytes))
    return fail(where, "tensor '" + t.name() + "' is too large");
  return std::make_pair(count, bytes);
}

/// Copies a TensorProto's value (raw or typed fields) into `out`.
Error convertTensor(const ::onnx::TensorProto &t, StringRef where,
                    Tensor &out) {
  out.name = t.name();
  out.type = static_cast<DataType>(t.data_type());
  out.dims.assign(t.dims().begin(), t.dims().end());
  size_t size = dataTypeSize(out.type);
  Expected<std::pair<uint64_t, uint64_t>> sizes = shapeSize(t, where);
  if (!sizes)
    return sizes.takeError();
  uint64_t count = sizes->first, bytes = sizes->second;
  auto expect = [&](uint64_t have) -> Error {
    if (have != count)
      return fail(where, "tensor '" + t.name() + "' holds " +
                             llvm::Twine(have) + " values; its shape needs " +
                             llvm::Twine(count));
    return Error::success();
  };
  if (t.has_raw_data()) {
    if (t.raw_data().size() != bytes)
      return fail(where, "tensor '" + t.name() + "' holds " +
                             llvm::Twine(t.raw_data().size()) +
                             " bytes of data; its shape needs " +
                             llvm::Twine(bytes));
    out.bytes.assign(t.raw_data().begin(), t.raw_data().end());
    return Error::success();
  }
  // The values are in the message: their count, checked before anything is
  // allocated, bounds the size by the model file's.
  int have;
  switch (out.type) {
  case DataType::Float: have = t.float_data_size(); break;
  case DataType::Double: have = t.double_data_size(); break;
  case DataType::Int64: have = t.int64_data_size(); break;
  case DataType::UInt32:
  case DataType::UInt64: have = t.uint64_data_size(); break;
  default: have = t.int32_data_size(); break;
  }
  if (Error e = expect(uint64_t(have)))
    return e;
  out.bytes.assign(bytes, 0);
  // An empty tensor: its repeated field's data() may be null, which memcpy
  // must not be given even for no bytes.
  if (bytes == 0)
    return Error::success();
  char *dst = out.bytes.data();
  switch (out.type) {
  case DataType::Float:
    std::memcpy(dst, t.float_data().data(), bytes);
    return Error::success();
  case DataType::Double:
    std::memcpy(dst, t.double_data().data(), bytes);
    return Error::success();
  case DataType::Int64:
    std::memcpy(dst, t.int64_data().data(), bytes);
    return Error::success();
  case DataType::UInt32:
  case DataType::UInt64:
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t v = t.uint64_data(i);
      std::memcpy(dst + i * size, &v, size);
    }
    return Error::success();
  default:
    // INT32, INT16, INT8, UINT16, UINT8, BOOL, FLOAT16, BFLOAT16: int32_data
    // holds each value (the 16-bit float types as their bit patterns).
    for (uint64_t i = 0; i < count; ++i) {
      int32_t v = t.int32_data(i);
      std::memcpy(dst + i * size, &v, size);
    }
    return Error::success();
  }
}

/// The bytes a tensor's shape and element type need, or an error naming
/// the tensor (a bad shape, an unsupported type, more than the machine can
/// hold).
Expected<uint64_t> declaredBytes(const ::onnx::TensorProto &t,
                                 StringRef where) {
  Expected<std::pair<uint64_t, uint64_t>> sizes = shapeSize(t, where);
  if (!sizes)
    return sizes.takeError();
  uint64_t bytes = sizes->second;
  if (Error e = mp::checkAllocation(bytes, "tensor '" + t.name() + "'"))
    return fail(where, llvm::toString(std::move(e)));
  return bytes;
}

/// Whether `path` (resolved) is `dir` (resolved) or inside it.
bool isInside(StringRef path, StringRef dir) {
  if (path == dir)
    return true;
  std::string prefix = dir.str();
  if (!StringRef(prefix).ends_with("/"))
    prefix += "/";
  return path.starts_with(prefix);
}

/// Replaces external data (data_location: EXTERNAL) by the bytes it names,
/// for a tensor of the model (or serialized tensor) at `modelPath`. Models
/// come from the internet, so the rules are onnxruntime's: the location is
/// relative and has no `..`, and once every symbolic link is resolved it is
/// a regular file inside the model's directory, or inside the directory of
/// the file the model itself links to (the Hugging Face hub's cache links
/// both the model and its data into blobs/). Only the bytes the tensor's
/// shape needs are read, from the one descriptor that was checked, after
/// checking that the file holds them.
Error loadExternalData(::onnx::TensorProto &t, StringRef modelPath) {
  if (t.data_location() != ::onnx::TensorProto::EXTERNAL)
    return Error::success();
  StringRef where = modelPath;
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
  for (const auto &entry : t.external_data()) {
    if (entry.key() == "location")
      location = entry.value();
    else if (entry.key() == "offset" || entry.key() == "length") {
      uint64_t v;
      if (StringRef(entry.value()).getAsInteger(10, v))
        return fail(where, "tensor '" + t.name() + "' has a bad external " +
                               entry.key() + " '" + entry.value() + "'");
      (entry.key() == "offset" ? offset : length.emplace()) = v;
    }
  }
  if (location.empty())
    return fail(where, "tensor '" + t.name() +
                           "' has external data without a location");
  auto outside = [&](const llvm::Twine &how) {
    return fail(where, "tensor '" + t.name() + "' has external data at '" +
                           location + "', outside the model's directory" +
                           how);
  };
  if (llvm::sys::path::is_absolute(location) ||
      llvm::is_contained(llvm::make_range(llvm::sys::path::begin(location),
                                          llvm::sys::path::end(location)),
                         ".."))
    return outside("");
  llvm::SmallString<256> modelDir(modelPath);
  llvm::sys::path::remove_filename(modelDir);
  if (modelDir.empty())
    modelDir = ".";
  llvm::SmallString<256> path(modelDir);
  llvm::sys::path::append(path, location);
  auto unreadable = [&](std::error_code ec) {
    return fail(where, "tensor '" + t.name() + "': cannot read its external "
                           "data '" + path + "': " + ec.message());
  };
  llvm::SmallString<256> realDir, realModel, realPath;
  if (std::error_code ec = llvm::sys::fs::real_path(modelDir, realDir))
    return fail(where, "cannot resolve the model's directory: " +
                           ec.message());
  if (std::error_code ec = llvm::sys::fs::real_path(path, realPath))
    return unreadable(ec);
  bool inside = isInside(realPath, realDir);
  if (!inside && !llvm::sys::fs::real_path(modelPath, realModel)) {
    llvm::sys::path::remove_filename(realModel);
    inside = isInside(realPath, realModel);
  }
  if (!inside)
    return outside(" (a link to '" + realPath + "')");

  // Everything below reads the descriptor opened here: a file swapped for a
  // link after the checks above is not followed, and a FIFO does not block
  // the open (it is refused below).
  int fd = ::open(realPath.c_str(),
                  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0)
    return unreadable(std::error_code(errno, std::generic_category()));
  llvm::scope_exit closeFd([&] { ::close(fd); });
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return unreadable(std::error_code(errno, std::generic_category()));
  if (!S_ISREG(st.st_mode))
    return fail(where, "tensor '" + t.name() + "': its external data '" +
                           path + "' is not a regular file");
  Expected<uint64_t> bytes = declaredBytes(t, where);
  if (!bytes)
    return bytes.takeError();
  if (length && *length != *bytes)
    return fail(where, "tensor '" + t.name() + "': its external data is " +
                           llvm::Twine(*length) + " bytes long, its shape " +
                           "and type need " + llvm::Twine(*bytes));
  uint64_t fileSize = uint64_t(st.st_size);
  auto shorter = [&] {
    return fail(where, "tensor '" + t.name() + "': external data '" + path +
                           "' is shorter than its offset and length (" +
                           llvm::Twine(fileSize) + " bytes; the tensor " +
                           "needs " + llvm::Twine(*bytes) + " at offset " +
                           llvm::Twine(offset) + ")");
  };
  if (offset > fileSize || *bytes > fileSize - offset)
    return shorter();
  std::string data(*bytes, '\0');
  for (uint64_t done = 0; done < *bytes;) {
    ssize_t n = ::pread(fd, data.data() + done, *bytes - done,
                        off_t(offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return unreadable(std::error_code(errno, std::generic_category()));
    if (n == 0) // the file shrank meanwhile
      return shorter();
    done += uint64_t(n);
  }
  t.set_raw_data(std::move(data));
  t.clear_external_data();
  t.set_data_location(::onnx::TensorProto::DEFAULT);
  return Error::success();
}

ValueType convertType(const ::onnx::TypeProto &type) {
  ValueType out;
  if (!type.has_tensor_type())
    return out;
  const auto &tensor = type.tensor_type();
  out.type = static_cast<DataType>(tensor.elem_type());
  if (!tensor.has_shape())
    return out;
  std::vector<int64_t> dims;
  for (const auto &d : tensor.shape().dim()) {
    dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
    out.symbols.push_back(d.has_dim_param() ? d.dim_param() : "");
  }
  out.dims = std::move(dims);
  return out;
}

/// Checks `a` against the type `schema` declares for it (nothing to check
/// for an attribute or op the schemas do not know).
Error checkAttributeType(const ::onnx::AttributeProto &a,
                         const ::onnx::OpSchema *schema, StringRef where) {
  if (!schema)
    return Error::success();
  auto declared = schema->attributes().find(a.name());
  if (declared == schema->attributes().end() ||
      a.type() == declared->second.type)
    return Error::success();
  return fail(where, "attribute '" + a.name() + "' is of type " +
                         ::onnx::AttributeProto::AttributeType_Name(a.type()) +
                         "; " + schema->Name() + " declares it " +
                         ::onnx::AttributeProto::AttributeType_Name(
                             declared->second.type) +
                         " (since opset " +
                         llvm::Twine(schema->since_version()) + ")");
}

Error convertAttribute(const ::onnx::AttributeProto &a, StringRef where,
                       Attribute &out) {
  out.name = a.name();
  switch (a.type()) {
  case ::onnx::AttributeProto::FLOAT:
    out.kind = Attribute::Kind::Float;
    out.f = a.f();
    break;
  case ::onnx::AttributeProto::INT:
    out.kind = Attribute::Kind::Int;
    out.i = a.i();
    break;
  case ::onnx::AttributeProto::STRING:
    out.kind = Attribute::Kind::String;
    out.s = a.s();
    break;
  case ::onnx::AttributeProto::TENSOR:
    out.kind = Attribute::Kind::Tensor;
    return convertTensor(a.t(), where, out.t);
  case ::onnx::AttributeProto::FLOATS:
    out.kind = Attribute::Kind::Floats;
    out.floats.assign(a.floats().begin(), a.floats().end());
    break;
  case ::onnx::AttributeProto::INTS:
    out.kind = Attribute::Kind::Ints;
    out.ints.assign(a.ints().begin(), a.ints().end());
    break;
  case ::onnx::AttributeProto::STRINGS:
    out.kind = Attribute::Kind::Strings;
    out.strings.assign(a.strings().begin(), a.strings().end());
    break;
  default:
    out.kind = Attribute::Kind::Other;
    break;
  }
  return Error::success();
}

} // namespace

namespace {

/// Every value of `graph` is defined once (a graph input, an initializer or
/// a node's output; an initializer may also be listed as an input, as
/// models before IR version 4 do), and every graph output is listed once.
Error checkDefinitions(const ::onnx::GraphProto &graph, StringRef path) {
  std::map<std::string, std::string> definedBy;
  auto define = [&](const std::string &name,
                    const std::string &by) -> Error {
    if (name.empty())
      return Error::success(); // an optional output left out
    auto [it, inserted] = definedBy.emplace(name, by);
    if (!inserted)
      return fail(path, "value '" + name + "' is defined twice: by " +
                            it->second + " and by " + by);
    return Error::success();
  };
  std::set<std::string> initializers;
  for (const ::onnx::TensorProto &t : graph.initializer()) {
    if (Error e = define(t.name(), "an initializer"))
      return e;
    initializers.insert(t.name());
  }
  for (const ::onnx::ValueInfoProto &v : graph.input())
    if (!initializers.count(v.name()))
      if (Error e = define(v.name(), "a graph input"))
        return e;
  for (const ::onnx::NodeProto &n : graph.node())
    for (const std::string &out : n.output())
      if (Error e = define(out, "node '" + n.name() + "' (" + n.op_type() +
                                    ")"))
        return e;
  std::set<std::string> outputs;
  for (const ::onnx::ValueInfoProto &v : graph.output())
    if (!outputs.insert(v.name()).second)
      return fail(path, "graph output '" + v.name() + "' is listed twice");
  return Error::success();
}

/// Whether every node of `graph` reads only values defined before it: graph
/// inputs, initializers and earlier nodes' outputs (an empty name is an
/// omitted optional input).
bool readsOnlyDefinedValues(const ::onnx::GraphProto &graph) {
  std::set<std::string> defined;
  for (const ::onnx::ValueInfoProto &v : graph.input())
    defined.insert(v.name());
  for (const ::onnx::TensorProto &t : graph.initializer())
    defined.insert(t.name());
  for (const ::onnx::NodeProto &n : graph.node()) {
    for (const std::string &in : n.input())
      if (!in.empty() && !defined.count(in))
        return false;
    defined.insert(n.output().begin(), n.output().end());
  }
  return true;
}

/// Checks the window attributes ONNX's shape inference divides by: a zero
/// stride raised SIGFPE inside libonnx 1.12 (found by mp-onnx-fuzzer).
/// Strides, dilations and kernel sizes must be positive wherever they appear.
Error checkWindowAttributes(const ::onnx::GraphProto &graph, StringRef path) {
  for (const ::onnx::NodeProto &n : graph.node())
    for (const ::onnx::AttributeProto &a : n.attribute()) {
      if (a.name() != "strides" && a.name() != "dilations" &&
          a.name() != "kernel_shape")
        continue;
      for (int64_t v : a.ints())
        if (v < 1)
          return fail(path, "node '" + n.name() + "' (" + n.op_type() +
                                "): attribute '" + a.name() + "' holds " +
                                llvm::Twine(v) + "; it must be positive");
    }
  return Error::success();
}

/// Writes all of `bytes` to `fd`; false on an error.
bool writeAll(int fd, StringRef bytes) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    bytes = bytes.drop_front(size_t(n));
  }
  return true;
}

/// Runs ONNX's shape inference on `proto` and keeps the types it infers (the
/// graph's value_info and outputs). It runs in a child process: libonnx
/// 1.12's inference crashes on malformed graphs it does not check (null
/// dereferences on a rank-2 ConvTranspose input or an undefined value, a
/// division by a zero stride; found by mp-onnx-fuzzer), and a crash there
/// must be an error about the model, not the end of the importer's process.
/// The child sends back only the inferred types, not the weights.
Error inferShapes(::onnx::ModelProto &proto, StringRef path) {
  // Built before the fork, so that the child takes no lock of another thread.
  const ::onnx::ISchemaRegistry *registry =
      ::onnx::OpSchemaRegistry::Instance();
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return fail(path, llvm::Twine("cannot run ONNX shape inference: ") +
                          std::strerror(errno));
  pid_t pid = ::fork();
  if (pid < 0) {
    int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return fail(path, llvm::Twine("cannot run ONNX shape inference: ") +
                          std::strerror(err));
  }
  if (pid == 0) {
    // A crash ends the child by its signal, past any handler the parent
    // installed (a sanitizer's, a fuzzer's).
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT})
      ::signal(sig, SIG_DFL);
    ::close(fds[0]);
    std::string reply;
    try {
      ::onnx::shape_inference::InferShapes(
          proto, registry,
          ::onnx::ShapeInferenceOptions(/*check_type=*/false,
                                        /*strict_mode=*/0,
                                        /*data_prop=*/true));
      ::onnx::GraphProto inferred;
      *inferred.mutable_value_info() = proto.graph().value_info();
      *inferred.mutable_output() = proto.graph().output();
      reply = "T" + inferred.SerializeAsString();
    } catch (const std::exception &e) {
      reply = std::string("E") + e.what();
    } catch (...) {
      reply = "E";
    }
    ::_exit(writeAll(fds[1], reply) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string reply;
  char chunk[65536];
  for (;;) {
    ssize_t n = ::read(fds[0], chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      break;
    reply.append(chunk, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return fail(path, llvm::Twine("ONNX's shape inference (libonnx) crashed "
                                  "on this model (") +
                          ::strsignal(WTERMSIG(status)) +
                          "): the graph is malformed in a way libonnx does "
                          "not check");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || reply.empty())
    return fail(path, "ONNX shape inference failed");
  if (reply[0] == 'E')
    return fail(path, "ONNX shape inference failed" +
                          (reply.size() > 1 ? ": " + reply.substr(1)
                                            : std::string()));
  ::onnx::GraphProto inferred;
  if (!inferred.ParseFromArray(reply.data() + 1, int(reply.size() - 1)))
    return fail(path, "ONNX shape inference failed (its result is corrupt)");
  ::onnx::GraphProto &graph = *proto.mutable_graph();
  *graph.mutable_value_info() = std::move(*inferred.mutable_value_info());
  *graph.mutable_output() = std::move(*inferred.mutable_output());
  return Error::success();
}

/// Parses the ModelProto in `path`.
Error parseModelFile(StringRef path, ::onnx::ModelProto &proto) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!file)
    return fail(path, "cannot read: " + file.getError().message());
  StringRef bytes = (*file)->getBuffer();
  if (bytes.size() > size_t(INT32_MAX))
    return fail(path, "models larger than 2 GiB must keep their weights as "
                      "external data");
  if (!proto.ParseFromArray(bytes.data(), int(bytes.size())))
    return fail(path, "not an ONNX model (the protobuf does not parse: "
                      "truncated or not a ModelProto)");
  return Error::success();
}

/// Parses the TensorProto in `path` and loads its external data (from
/// files next to it).
Error readTensorProto(StringRef path, ::onnx::TensorProto &proto) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!file)
    return fail(path, "cannot read: " + file.getError().message());
  StringRef bytes = (*file)->getBuffer();
  if (bytes.size() > size_t(INT32_MAX) ||
      !proto.ParseFromArray(bytes.data(), int(bytes.size())))
    return fail(path, "not a serialized ONNX TensorProto");
  return loadExternalData(proto, path);
}

} // namespace

Expected<Model> mp::onnx::readModel(StringRef path,
                                    const ReadOptions &options) {
  ::onnx::ModelProto proto;
  if (Error e = parseModelFile(path, proto))
    return std::move(e);
  if (!proto.has_graph())
    return fail(path, "the model has no graph");
  ::onnx::GraphProto &graph = *proto.mutable_graph();
  for (::onnx::TensorProto &t : *graph.mutable_initializer())
    if (Error e = loadExternalData(t, path))
      return std::move(e);
  for (::onnx::NodeProto &node : *graph.mutable_node())
    for (::onnx::AttributeProto &a : *node.mutable_attribute())
      if (a.has_t())
        if (Error e = loadExternalData(*a.mutable_t(), path))
          return std::move(e);

  // Inputs bound to constants become initializers.
  for (const auto &[name, file] : options.constantInputs) {
    auto it = llvm::find_if(graph.input(), [&, &name = name](const auto &v) {
      return v.name() == name;
    });
    if (it == graph.input().end())
      return fail(path, "the model has no input named '" + name +
                            "' to bind to a constant");
    // An input with a default value already has an initializer of its
    // name: the bound value replaces it.
    ::onnx::TensorProto *t = nullptr;
    for (::onnx::TensorProto &init : *graph.mutable_initializer())
      if (init.name() == name)
        t = &init;
    if (!t)
      t = graph.add_initializer();
    t->Clear();
    if (Error e = readTensorProto(file, *t))
      return std::move(e);
    t->set_name(name);
  }

  // Fixed shapes for inputs, before inference propagates them.
  for (const auto &[name, dims] : options.inputShapes) {
    ::onnx::ValueInfoProto *input = nullptr;
    for (::onnx::ValueInfoProto &v : *graph.mutable_input())
      if (v.name() == name)
        input = &v;
    if (!input)
      return fail(path, "--input-shape: the model has no input named '" +
                            name + "'");
    auto *tensor = input->mutable_type()->mutable_tensor_type();
    if (tensor->has_shape() &&
        tensor->shape().dim_size() != int(dims.size()))
      return fail(path, "--input-shape: input '" + name + "' has rank " +
                            llvm::Twine(tensor->shape().dim_size()) +
                            ", the shape given has rank " +
                            llvm::Twine(dims.size()));
    auto *shape = tensor->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims)
      shape->add_dim()->set_dim_value(d);
  }

  if (options.batchSize > 0) {
    std::set<std::string> initializers;
    for (const ::onnx::TensorProto &t : graph.initializer())
      initializers.insert(t.name());
    for (::onnx::ValueInfoProto &v : *graph.mutable_input()) {
      if (initializers.count(v.name()) || options.inputShapes.count(v.name()))
        continue;
      auto *tensor = v.mutable_type()->mutable_tensor_type();
      if (tensor->has_shape() && tensor->shape().dim_size() > 0 &&
          !tensor->shape().dim(0).has_dim_value())
        tensor->mutable_shape()->mutable_dim(0)->set_dim_value(
            options.batchSize);
    }
  }

  if (Error e = checkDefinitions(graph, path))
    return std::move(e);

  Model model;
  model.irVersion = proto.ir_version();
  model.producer = proto.producer_name();
  model.graphName = graph.name();
  for (const auto &opset : proto.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    if (opset.version() < 1)
      return fail(path, "the model imports opset " +
                            llvm::Twine(opset.version()) + " of " +
                            (domain.empty() ? "the default domain"
                                            : "domain '" + domain + "'") +
                            "; opsets start at 1");
    model.opsets[domain] = opset.version();
  }
  // Without one, no op of the domain has a meaning.
  for (const ::onnx::NodeProto &n : graph.node()) {
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    if (!model.opsets.count(domain))
      return fail(path, "node '" + n.name() + "' (" + n.op_type() +
                            ") is of " +
                            (domain.empty() ? "the default domain"
                                            : "domain '" + domain + "'") +
                            ", for which the model imports no opset");
  }

  // ONNX's shape inference (libonnx 1.12) dereferences a null pointer on a
  // node input that nothing defines (found by mp-onnx-fuzzer): such a graph
  // is left uninferred, for the importer's error that names the node.
  if (Error e = checkWindowAttributes(graph, path))
    return std::move(e);
  if (readsOnlyDefinedValues(graph))
    if (Error e = inferShapes(proto, path))
      return std::move(e);

  std::map<std::string, bool> isInitializer;
  for (const ::onnx::TensorProto &t : graph.initializer()) {
    Tensor tensor;
    if (Error e = convertTensor(t, path, tensor))
      return std::move(e);
    isInitializer[t.name()] = true;
    model.initializers.push_back(std::move(tensor));
  }
  for (const ::onnx::ValueInfoProto &v : graph.input()) {
    model.types[v.name()] = convertType(v.type());
    if (!isInitializer.count(v.name()))
      model.inputs.push_back({v.name(), convertType(v.type())});
  }
  for (const ::onnx::ValueInfoProto &v : graph.value_info())
    model.types[v.name()] = convertType(v.type());
  for (const ::onnx::ValueInfoProto &v : graph.output()) {
    model.types[v.name()] = convertType(v.type());
    model.outputs.push_back({v.name(), convertType(v.type())});
  }
  for (const ::onnx::NodeProto &n : graph.node()) {
    Node node;
    node.name = n.name();
    node.opType = n.op_type();
    node.domain = n.domain() == "ai.onnx" ? "" : n.domain();
    node.inputs.assign(n.input().begin(), n.input().end());
    node.outputs.assign(n.output().begin(), n.output().end());
    // The op's schema, for the opset the model imports for its domain.
    auto opset = model.opsets.find(node.domain);
    const ::onnx::OpSchema *schema =
        opset == model.opsets.end()
            ? nullptr
            : ::onnx::OpSchemaRegistry::Schema(n.op_type(),
                                               int(opset->second),
                                               node.domain);
    for (const ::onnx::AttributeProto &a : n.attribute()) {
      Attribute attr;
      std::string where = path.str() + ": node '" + n.name() + "' (" +
                          n.op_type() + ")";
      // An attribute of the wrong type would otherwise read as absent, and
      // the op would silently take its default (Gemm's transB="yes").
      if (Error e = checkAttributeType(a, schema, where))
        return std::move(e);
      if (Error e = convertAttribute(a, where, attr))
        return std::move(e);
      node.attributes.push_back(std::move(attr));
    }
    model.nodes.push_back(std::move(node));
  }
  return model;
}

Expected<GraphSummary> mp::onnx::readGraphSummary(StringRef path) {
  ::onnx::ModelProto proto;
  if (Error e = parseModelFile(path, proto))
    return std::move(e);
  const ::onnx::GraphProto &graph = proto.graph();
  GraphSummary summary;
  for (const ::onnx::NodeProto &n : graph.node())
    summary.opTypes.push_back(n.op_type());
  std::set<std::string> initializers;
  for (const ::onnx::TensorProto &t : graph.initializer())
    initializers.insert(t.name());
  for (const ::onnx::ValueInfoProto &v : graph.input())
    if (!initializers.count(v.name()))
      summary.inputs.push_back(
          {v.name(), static_cast<DataType>(v.type().tensor_type().elem_type())});
  for (const ::onnx::ValueInfoProto &v : graph.output())
    summary.outputs.push_back(v.name());
  return summary;
}

Expected<Tensor> mp::onnx::readTensor(StringRef path) {
  ::onnx::TensorProto proto;
  if (Error e = readTensorProto(path, proto))
    return std::move(e);
  Tensor tensor;
  if (Error e = convertTensor(proto, path, tensor))
    return std::move(e);
  return tensor;
}
