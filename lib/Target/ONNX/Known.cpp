//===- Known.cpp - evaluating ONNX ops on known tensors -------------------===//

#include "Known.h"

#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <functional>
#include <numeric>

using namespace mp::onnx;
using llvm::ArrayRef;

bool mp::onnx::isFloatType(DataType type) {
  return type == DataType::Float || type == DataType::Double ||
         type == DataType::Float16 || type == DataType::BFloat16;
}

bool mp::onnx::isIntegerType(DataType type) {
  switch (type) {
  case DataType::UInt8:
  case DataType::Int8:
  case DataType::UInt16:
  case DataType::Int16:
  case DataType::Int32:
  case DataType::Int64:
  case DataType::UInt32:
  case DataType::UInt64:
  case DataType::Bool:
    return true;
  default:
    return false;
  }
}

int64_t mp::onnx::product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (llvm::MulOverflow(n, d, n))
      return INT64_MAX;
  return n;
}

int64_t Known::size() const { return product(dims); }

/// `value` rounded to the precision of `type`.
static double roundTo(DataType type, double value) {
  const llvm::fltSemantics *semantics = nullptr;
  switch (type) {
  case DataType::Float: return static_cast<float>(value);
  case DataType::Float16: semantics = &llvm::APFloat::IEEEhalf(); break;
  case DataType::BFloat16: semantics = &llvm::APFloat::BFloat(); break;
  default: return value;
  }
  llvm::APFloat v(value);
  bool lost;
  v.convert(*semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
  v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
            &lost);
  return v.convertToDouble();
}

/// `value` wrapped to the range of an integer `type`.
static int64_t wrapTo(DataType type, int64_t value) {
  switch (type) {
  case DataType::Bool: return value != 0;
  case DataType::UInt8: return static_cast<uint8_t>(value);
  case DataType::Int8: return static_cast<int8_t>(value);
  case DataType::UInt16: return static_cast<uint16_t>(value);
  case DataType::Int16: return static_cast<int16_t>(value);
  case DataType::Int32: return static_cast<int32_t>(value);
  case DataType::UInt32: return static_cast<uint32_t>(value);
  default: return value;
  }
}

void Known::set(int64_t k, double value) {
  if (isFloat()) {
    f[k] = roundTo(type, value);
    return;
  }
  if (type == DataType::Bool) {
    i[k] = value != 0;
    return;
  }
  i[k] = wrapTo(type, saturatingInt(value));
}

void Known::setInt(int64_t k, int64_t value) {
  if (isFloat())
    f[k] = roundTo(type, double(value));
  else
    i[k] = wrapTo(type, value);
}

Known Known::zeros(DataType type, std::vector<int64_t> dims) {
  Known out;
  out.type = type;
  out.dims = std::move(dims);
  if (out.isFloat())
    out.f.assign(out.size(), 0.0);
  else
    out.i.assign(out.size(), 0);
  return out;
}

Known Known::fromTensor(const Tensor &tensor) {
  Known out = zeros(tensor.type, tensor.dims);
  for (int64_t k = 0, n = out.size(); k < n; ++k) {
    if (out.isFloat())
      out.f[k] = tensor.getFloat(k);
    else
      out.i[k] = tensor.getInt(k);
  }
  return out;
}

Known Known::ints(std::vector<int64_t> values, std::vector<int64_t> dims,
                  DataType type) {
  Known out;
  out.type = type;
  out.dims = std::move(dims);
  out.i = std::move(values);
  return out;
}

std::vector<int64_t> Known::toInts() const {
  std::vector<int64_t> out(size());
  for (int64_t k = 0, n = size(); k < n; ++k)
    out[k] = getInt(k);
  return out;
}

bool mp::onnx::broadcastShapes(ArrayRef<int64_t> a, ArrayRef<int64_t> b,
                               std::vector<int64_t> &out) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, 1);
  for (size_t d = 0; d < rank; ++d) {
    int64_t x = d < rank - a.size() ? 1 : a[d - (rank - a.size())];
    int64_t y = d < rank - b.size() ? 1 : b[d - (rank - b.size())];
    if (x != y && x != 1 && y != 1)
      return false;
    out[d] = x == 1 ? y : x;
  }
  return true;
}

/// The index into a tensor of `dims` (aligned right with `outDims`) that
/// broadcasting reads for flat output index `k`.
static int64_t broadcastIndex(int64_t k, ArrayRef<int64_t> outDims,
                              ArrayRef<int64_t> dims) {
  int64_t index = 0, stride = 1;
  size_t offset = outDims.size() - dims.size();
  for (size_t d = outDims.size(); d-- > 0;) {
    int64_t coord = k % outDims[d];
    k /= outDims[d];
    if (d >= offset) {
      int64_t size = dims[d - offset];
      if (size != 1)
        index += coord * stride;
      stride *= size;
    }
  }
  return index;
}

namespace {
enum class Kind { Float, Int, Compare, Logic, Where };
struct Elementwise {
  Kind kind;
  unsigned arity; // 0: variadic
};
} // namespace

static std::optional<Elementwise> lookup(llvm::StringRef op) {
  return llvm::StringSwitch<std::optional<Elementwise>>(op)
      .Cases({"Add", "Sub", "Mul", "Div", "Pow", "Mod", "FMod"},
             Elementwise{Kind::Int, 2})
      .Cases({"Max", "Min", "Sum", "Mean"}, Elementwise{Kind::Int, 0})
      .Cases({"Neg", "Abs", "Sign", "Relu"}, Elementwise{Kind::Int, 1})
      .Cases({"Sqrt", "Exp", "Log", "Reciprocal", "Floor", "Ceil", "Round",
              "Tanh", "Sigmoid", "Erf", "Sin", "Cos"},
             Elementwise{Kind::Float, 1})
      .Cases({"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"},
             Elementwise{Kind::Compare, 2})
      .Cases({"And", "Or", "Xor"}, Elementwise{Kind::Logic, 2})
      .Case("Not", Elementwise{Kind::Logic, 1})
      .Case("Where", Elementwise{Kind::Where, 3})
      .Default(std::nullopt);
}

bool mp::onnx::isFoldableElementwise(llvm::StringRef opType) {
  return lookup(opType).has_value();
}

static double applyFloat(llvm::StringRef op, ArrayRef<double> x) {
  double a = x[0], b = x.size() > 1 ? x[1] : 0;
  return llvm::StringSwitch<std::function<double()>>(op)
      .Case("Add", [&] { return a + b; })
      .Case("Sub", [&] { return a - b; })
      .Case("Mul", [&] { return a * b; })
      .Case("Div", [&] { return a / b; })
      .Case("Pow", [&] { return std::pow(a, b); })
      .Case("FMod", [&] { return std::fmod(a, b); })
      .Case("Mod",
            [&] {
              // The sign of the divisor, as Python's %.
              double r = std::fmod(a, b);
              return r != 0 && ((r < 0) != (b < 0)) ? r + b : r;
            })
      .Case("Neg", [&] { return -a; })
      .Case("Abs", [&] { return std::fabs(a); })
      .Case("Sign", [&] { return double((a > 0) - (a < 0)); })
      .Case("Relu", [&] { return a > 0 ? a : 0.0; })
      .Case("Sqrt", [&] { return std::sqrt(a); })
      .Case("Exp", [&] { return std::exp(a); })
      .Case("Log", [&] { return std::log(a); })
      .Case("Reciprocal", [&] { return 1 / a; })
      .Case("Floor", [&] { return std::floor(a); })
      .Case("Ceil", [&] { return std::ceil(a); })
      .Case("Round", [&] { return std::nearbyint(a); })
      .Case("Tanh", [&] { return std::tanh(a); })
      .Case("Sigmoid", [&] { return 1 / (1 + std::exp(-a)); })
      .Case("Erf", [&] { return std::erf(a); })
      .Case("Sin", [&] { return std::sin(a); })
      .Case("Cos", [&] { return std::cos(a); })
      .Default([] { return 0.0; })();
}

static int64_t applyInt(llvm::StringRef op, ArrayRef<int64_t> x) {
  int64_t a = x[0], b = x.size() > 1 ? x[1] : 0;
  auto div = [](int64_t p, int64_t q) -> int64_t {
    if (q == 0)
      return 0; // undefined in ONNX
    if (p == INT64_MIN && q == -1)
      return INT64_MIN;
    return p / q;
  };
  auto pow = [](int64_t p, int64_t q) -> int64_t {
    if (q < 0)
      return p == 1 ? 1 : p == -1 ? (q % 2 ? -1 : 1) : 0;
    int64_t r = 1;
    for (int64_t k = 0; k < q && k < 64; ++k)
      r = static_cast<int64_t>(static_cast<uint64_t>(r) * uint64_t(p));
    return r;
  };
  return llvm::StringSwitch<std::function<int64_t()>>(op)
      .Case("Add", [&] { return int64_t(uint64_t(a) + uint64_t(b)); })
      .Case("Sub", [&] { return int64_t(uint64_t(a) - uint64_t(b)); })
      .Case("Mul", [&] { return int64_t(uint64_t(a) * uint64_t(b)); })
      .Case("Div", [&] { return div(a, b); })
      .Case("Pow", [&] { return pow(a, b); })
      .Case("FMod",
            [&] {
              // C's %: the sign of the dividend.
              if (b == 0)
                return int64_t(0);
              return (a == INT64_MIN && b == -1) ? int64_t(0) : a % b;
            })
      .Case("Mod",
            [&] {
              // ONNX Mod with fmod=0 takes the sign of the divisor.
              if (b == 0)
                return int64_t(0);
              int64_t r = (a == INT64_MIN && b == -1) ? 0 : a % b;
              return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
            })
      .Case("Neg", [&] { return int64_t(0 - uint64_t(a)); })
      .Case("Abs", [&] { return a < 0 ? int64_t(0 - uint64_t(a)) : a; })
      .Case("Sign", [&] { return int64_t((a > 0) - (a < 0)); })
      .Case("Relu", [&] { return a > 0 ? a : 0; })
      .Default([] { return int64_t(0); })();
}

template <typename T> static bool compare(llvm::StringRef op, T a, T b) {
  return llvm::StringSwitch<bool>(op)
      .Case("Equal", a == b)
      .Case("Less", a < b)
      .Case("Greater", a > b)
      .Case("LessOrEqual", a <= b)
      .Case("GreaterOrEqual", a >= b)
      .Default(false);
}

llvm::Expected<Known>
mp::onnx::foldElementwise(llvm::StringRef op, ArrayRef<const Known *> in) {
  auto fail = [&](const llvm::Twine &why) {
    return llvm::createStringError(std::errc::invalid_argument, "%s",
                                   why.str().c_str());
  };
  std::optional<Elementwise> info = lookup(op);
  if (!info)
    return fail("cannot evaluate " + op + " on constants");
  if (in.empty() || (info->arity && in.size() != info->arity))
    return fail(op + " takes " + llvm::Twine(info->arity) + " inputs");
  std::vector<int64_t> dims = in[0]->dims;
  for (const Known *k : in.drop_front())
    if (!broadcastShapes(std::vector<int64_t>(dims), k->dims, dims))
      return fail("the inputs' shapes do not broadcast");
  if (product(dims) > kMaxFoldedElements)
    return fail("the result is too large to evaluate while importing");

  DataType type = in[0]->type;
  if (info->kind == Kind::Compare || info->kind == Kind::Logic)
    type = DataType::Bool;
  if (info->kind == Kind::Where)
    type = in[1]->type;
  Known out = Known::zeros(type, dims);
  bool floating = info->kind == Kind::Where ? in[1]->isFloat()
                  : info->kind == Kind::Float ? true
                                              : in[0]->isFloat();
  int64_t n = out.size();
  std::vector<double> xf(in.size());
  std::vector<int64_t> xi(in.size());
  for (int64_t k = 0; k < n; ++k) {
    for (size_t j = 0; j < in.size(); ++j) {
      int64_t at = broadcastIndex(k, dims, in[j]->dims);
      xf[j] = in[j]->getFloat(at);
      xi[j] = in[j]->getInt(at);
    }
    switch (info->kind) {
    case Kind::Compare:
      out.setInt(k, in[0]->isFloat() ? compare(op, xf[0], xf[1])
                                     : compare(op, xi[0], xi[1]));
      break;
    case Kind::Logic: {
      bool a = xi[0] != 0, b = in.size() > 1 && xi[1] != 0;
      out.setInt(k, op == "Not" ? !a : op == "And" ? a && b
                                   : op == "Or"    ? a || b
                                                   : a != b);
      break;
    }
    case Kind::Where:
      if (floating)
        out.set(k, xi[0] ? xf[1] : xf[2]);
      else
        out.setInt(k, xi[0] ? xi[1] : xi[2]);
      break;
    default:
      if (info->arity == 0) { // Max, Min, Sum, Mean over any count
        if (floating) {
          double acc = xf[0];
          for (size_t j = 1; j < xf.size(); ++j)
            acc = op == "Max"   ? std::max(acc, xf[j])
                  : op == "Min" ? std::min(acc, xf[j])
                                : acc + xf[j];
          out.set(k, op == "Mean" ? acc / double(xf.size()) : acc);
        } else {
          int64_t acc = xi[0];
          for (size_t j = 1; j < xi.size(); ++j)
            acc = op == "Max"   ? std::max(acc, xi[j])
                  : op == "Min" ? std::min(acc, xi[j])
                                : int64_t(uint64_t(acc) + uint64_t(xi[j]));
          out.setInt(k, op == "Mean" ? acc / int64_t(xi.size()) : acc);
        }
      } else if (floating) {
        out.set(k, applyFloat(op, xf));
      } else {
        out.setInt(k, applyInt(op, xi));
      }
    }
  }
  return out;
}

Known mp::onnx::castKnown(const Known &in, DataType to) {
  Known out = Known::zeros(to, in.dims);
  for (int64_t k = 0, n = in.size(); k < n; ++k) {
    if (in.isFloat())
      out.set(k, in.f[k]);
    else
      out.setInt(k, in.i[k]);
  }
  return out;
}

Known mp::onnx::reshapeKnown(const Known &in, std::vector<int64_t> dims) {
  Known out = in;
  out.dims = std::move(dims);
  return out;
}

/// Copies element `from` of `in` to element `to` of `out` (same type).
static void copyElement(const Known &in, int64_t from, Known &out,
                        int64_t to) {
  if (in.isFloat())
    out.f[to] = in.f[from];
  else
    out.i[to] = in.i[from];
}

/// Row-major strides of `dims`.
static std::vector<int64_t> stridesOf(ArrayRef<int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;)
    strides[d - 1] = strides[d] * dims[d];
  return strides;
}

Known mp::onnx::transposeKnown(const Known &in, ArrayRef<int64_t> perm) {
  std::vector<int64_t> dims(perm.size());
  for (size_t d = 0; d < perm.size(); ++d)
    dims[d] = in.dims[perm[d]];
  Known out = Known::zeros(in.type, dims);
  std::vector<int64_t> inStrides = stridesOf(in.dims);
  for (int64_t k = 0, n = out.size(); k < n; ++k) {
    int64_t rest = k, from = 0;
    for (size_t d = dims.size(); d-- > 0;) {
      from += (rest % dims[d]) * inStrides[perm[d]];
      rest /= dims[d];
    }
    copyElement(in, from, out, k);
  }
  return out;
}

Known mp::onnx::concatKnown(ArrayRef<const Known *> inputs, int64_t axis) {
  std::vector<int64_t> dims = inputs[0]->dims;
  dims[axis] = 0;
  for (const Known *k : inputs)
    dims[axis] += k->dims[axis];
  Known out = Known::zeros(inputs[0]->type, dims);
  int64_t outer = product(ArrayRef<int64_t>(dims).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(dims).drop_front(axis + 1));
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (const Known *k : inputs)
      for (int64_t e = 0, n = k->dims[axis] * inner; e < n; ++e)
        copyElement(*k, o * n + e, out, at++);
  return out;
}

Known mp::onnx::sliceKnown(const Known &in, ArrayRef<int64_t> offsets,
                           ArrayRef<int64_t> sizes, ArrayRef<int64_t> steps) {
  Known out = Known::zeros(in.type, std::vector<int64_t>(sizes));
  std::vector<int64_t> inStrides = stridesOf(in.dims);
  for (int64_t k = 0, n = out.size(); k < n; ++k) {
    int64_t rest = k, from = 0;
    for (size_t d = sizes.size(); d-- > 0;) {
      from += (offsets[d] + (rest % sizes[d]) * steps[d]) * inStrides[d];
      rest /= sizes[d];
    }
    copyElement(in, from, out, k);
  }
  return out;
}

Known mp::onnx::gatherKnown(const Known &in, const Known &indices,
                            int64_t axis) {
  std::vector<int64_t> dims(in.dims.begin(), in.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), in.dims.begin() + axis + 1, in.dims.end());
  Known out = Known::zeros(in.type, dims);
  int64_t outer = product(ArrayRef<int64_t>(in.dims).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(in.dims).drop_front(axis + 1));
  int64_t count = indices.size(), extent = in.dims[axis];
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j)
      for (int64_t e = 0; e < inner; ++e)
        copyElement(in, (o * extent + indices.getInt(j)) * inner + e, out,
                    at++);
  return out;
}

Known mp::onnx::broadcastKnown(const Known &in, ArrayRef<int64_t> dims) {
  Known out = Known::zeros(in.type, std::vector<int64_t>(dims));
  for (int64_t k = 0, n = out.size(); k < n; ++k)
    copyElement(in, broadcastIndex(k, dims, in.dims), out, k);
  return out;
}
