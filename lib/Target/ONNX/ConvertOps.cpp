//===- ConvertOps.cpp - ONNX ops to tg ops ---------------------------------===//
//
// One converter per ONNX op type. A converter reads the node's inputs and
// attributes through the Importer, checks what ONNX allows but tg cannot
// express (and refuses it with an error naming the node), and defines the
// node's outputs: as tg ops on runtime values, or on the host when the
// inputs are known (shape arithmetic). Semantics follow the ONNX operator
// specification (onnx/docs/Operators.md) for opsets 13 to 17; where an
// older opset differs (attributes that became inputs, softmax's 2-D
// coercion before opset 13) both forms are read.
//
//===----------------------------------------------------------------------===//

#include "Importer.h"

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/MathExtras.h"

#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

using namespace mlir;
using namespace mp::onnx;
namespace tg = mp::tg;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `axis` in [-rank, rank) as a dimension index, or an error.
FailureOr<int64_t> normaliseAxis(Importer &im, int64_t axis, int64_t rank,
                                 StringRef what = "axis") {
  if (axis < -rank || axis >= rank) {
    im.error() << what << " " << axis << " is outside [" << -rank << ", "
               << rank << ")";
    return failure();
  }
  return axis < 0 ? axis + rank : axis;
}

/// Sorted, distinct dimension indices for `axes`.
FailureOr<SmallVector<int64_t>> normaliseAxes(Importer &im,
                                              ArrayRef<int64_t> axes,
                                              int64_t rank) {
  SmallVector<int64_t> out;
  for (int64_t a : axes) {
    FailureOr<int64_t> axis = normaliseAxis(im, a, rank, "axis");
    if (failed(axis))
      return failure();
    out.push_back(*axis);
  }
  llvm::sort(out);
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    im.error() << "repeats an axis";
    return failure();
  }
  return out;
}

/// The node's float input `k` as a tg value: an error for integer data,
/// which tg computes on only by moving it.
FailureOr<Value> floatInput(Importer &im, unsigned k) {
  FailureOr<Value> v = im.value(k);
  if (failed(v))
    return failure();
  if (!isa<FloatType>(tensorType(*v).getElementType())) {
    im.error() << "input #" << k << " is " << dataTypeName(im.inputType(k))
               << "; tg computes on floating-point tensors only (integer "
                  "tensors may be moved, or folded while importing when "
                  "they are constant)";
    return failure();
  }
  return v;
}

/// An elementwise binary tg op with numpy broadcasting.
template <typename Op>
Value binary(Importer &im, Value lhs, Value rhs, StringRef suffix = "") {
  SmallVector<Type> types;
  Location loc = im.loc(suffix);
  if (tensorType(lhs).getElementType() != tensorType(rhs).getElementType()) {
    im.error() << "operands of different element types ("
               << tensorType(lhs).getElementType() << ", "
               << tensorType(rhs).getElementType() << ")";
    return {};
  }
  if (failed(tg::inferBroadcastType(loc, lhs.getType(), rhs.getType(), types)))
    return {};
  return Op::create(im.builder, loc, types.front(), lhs, rhs, nullptr);
}

Value reshape(Importer &im, Value v, ArrayRef<int64_t> dims,
              StringRef suffix = "") {
  RankedTensorType type = tensorType(v);
  if (type.getShape() == dims)
    return v;
  return tg::ReshapeOp::create(im.builder, im.loc(suffix), type.clone(dims),
                               v);
}

Value transpose(Importer &im, Value v, ArrayRef<int64_t> perm,
                StringRef suffix = "") {
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return v;
  RankedTensorType type = tensorType(v);
  SmallVector<int64_t> dims;
  for (int64_t p : perm)
    dims.push_back(type.getDimSize(p));
  return tg::TransposeOp::create(im.builder, im.loc(suffix), type.clone(dims),
                                 v, im.builder.getDenseI64ArrayAttr(perm));
}

Value slice(Importer &im, Value v, ArrayRef<int64_t> offsets,
            ArrayRef<int64_t> sizes, ArrayRef<int64_t> steps,
            StringRef suffix = "") {
  RankedTensorType type = tensorType(v);
  bool unit = llvm::all_of(steps, [](int64_t s) { return s == 1; });
  return tg::SliceOp::create(
      im.builder, im.loc(suffix), type.clone(sizes), v,
      im.builder.getDenseI64ArrayAttr(offsets),
      im.builder.getDenseI64ArrayAttr(sizes),
      unit ? DenseI64ArrayAttr() : im.builder.getDenseI64ArrayAttr(steps));
}

/// `v * c`, or `v` when c is 1.
Value scaleBy(Importer &im, Value v, double c, StringRef suffix) {
  if (c == 1.0)
    return v;
  return binary<tg::MulOp>(
      im, v, im.scalar(tensorType(v).getElementType(), c, suffix), suffix);
}

/// Defines output 0 as `v` (a null `v` means an error was reported).
LogicalResult defineResult(Importer &im, Value v, DataType type) {
  if (!v)
    return failure();
  im.define(0, v, type);
  return success();
}

LogicalResult defineResult(Importer &im, Value v) {
  return defineResult(im, v, im.inputType(0));
}

//===----------------------------------------------------------------------===//
// Constants and shapes
//===----------------------------------------------------------------------===//

LogicalResult convertConstant(Importer &im) {
  const Node &n = im.node();
  if (n.attributes.size() != 1) {
    im.error() << "needs exactly one value attribute";
    return failure();
  }
  const mp::onnx::Attribute &a = n.attributes.front();
  if (a.name == "value" && a.kind == mp::onnx::Attribute::Kind::Tensor) {
    im.define(0, Known::fromTensor(a.t));
  } else if (a.name == "value_float") {
    Known k = Known::zeros(DataType::Float, {});
    k.set(0, a.f);
    im.define(0, std::move(k));
  } else if (a.name == "value_floats") {
    Known k = Known::zeros(DataType::Float, {int64_t(a.floats.size())});
    for (auto [i, v] : llvm::enumerate(a.floats))
      k.set(i, v);
    im.define(0, std::move(k));
  } else if (a.name == "value_int") {
    im.define(0, Known::ints({a.i}, {}));
  } else if (a.name == "value_ints") {
    im.define(0, Known::ints(a.ints, {int64_t(a.ints.size())}));
  } else {
    im.error() << "constant attribute '" << a.name
               << "' is not supported (sparse and string constants)";
    return failure();
  }
  return success();
}

LogicalResult convertShape(Importer &im) {
  std::vector<int64_t> dims = im.shape(0);
  int64_t rank = dims.size();
  int64_t start = im.attrInt("start", 0), end = im.attrInt("end", rank);
  auto clampIndex = [&](int64_t i) {
    if (i < 0)
      i += rank;
    return std::clamp<int64_t>(i, 0, rank);
  };
  start = clampIndex(start);
  end = std::max(start, clampIndex(end));
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + end);
  int64_t count = out.size();
  im.define(0, Known::ints(std::move(out), {count}));
  return success();
}

LogicalResult convertSize(Importer &im) {
  im.define(0, Known::ints({product(im.shape(0))}, {}));
  return success();
}

LogicalResult convertConstantOfShape(Importer &im) {
  FailureOr<const Known *> shape = im.requireKnown(0, "the shape");
  if (failed(shape))
    return failure();
  std::vector<int64_t> dims = (*shape)->toInts();
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || (d && n > kMaxFoldedElements / d)) {
      im.error() << "shape is negative or too large";
      return failure();
    }
    n *= d;
  }
  Known value = Known::zeros(DataType::Float, {1});
  for (const mp::onnx::Attribute &a : im.node().attributes)
    if (a.name == "value" && a.kind == mp::onnx::Attribute::Kind::Tensor)
      value = Known::fromTensor(a.t);
  if (value.size() != 1) {
    im.error() << "value must hold one element";
    return failure();
  }
  im.define(0, broadcastKnown(value, dims));
  return success();
}

LogicalResult convertRange(Importer &im) {
  const Known *in[3];
  for (unsigned k = 0; k < 3; ++k) {
    FailureOr<const Known *> v = im.requireKnown(k, "the range's bounds");
    if (failed(v))
      return failure();
    in[k] = *v;
  }
  double start = in[0]->getFloat(0), limit = in[1]->getFloat(0),
         delta = in[2]->getFloat(0);
  if (delta == 0) {
    im.error() << "delta is 0";
    return failure();
  }
  double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (count > double(kMaxFoldedElements)) {
    im.error() << "range is too large";
    return failure();
  }
  Known out = Known::zeros(in[0]->type, {int64_t(count)});
  for (int64_t i = 0; i < int64_t(count); ++i) {
    if (out.isFloat())
      out.set(i, start + double(i) * delta);
    else
      out.setInt(i, in[0]->getInt(0) + i * in[2]->getInt(0));
  }
  im.define(0, std::move(out));
  return success();
}

LogicalResult convertIdentity(Importer &im) {
  if (const Known *k = im.known(0)) {
    im.define(0, *k);
    return success();
  }
  FailureOr<Value> v = im.value(0);
  if (failed(v))
    return failure();
  return defineResult(im, *v);
}

LogicalResult convertCast(Importer &im, DataType to) {
  if (const Known *k = im.known(0)) {
    im.define(0, castKnown(*k, to));
    return success();
  }
  FailureOr<Value> v = im.value(0);
  FailureOr<Type> element = im.elementType(to);
  if (failed(v) || failed(element))
    return failure();
  Type from = tensorType(*v).getElementType();
  if (from == *element)
    return defineResult(im, *v, to);
  return defineResult(im,
                      tg::CastOp::create(im.builder, im.loc(),
                                         tensorType(*v).clone(*element), *v),
                      to);
}

LogicalResult convertCast(Importer &im) {
  return convertCast(im, static_cast<DataType>(im.attrInt("to", 0)));
}

LogicalResult convertCastLike(Importer &im) {
  return convertCast(im, im.inputType(1));
}

//===----------------------------------------------------------------------===//
// Shape manipulation
//===----------------------------------------------------------------------===//

/// Defines output 0 as input 0 with `dims` (same elements).
LogicalResult defineReshaped(Importer &im, std::vector<int64_t> dims) {
  std::vector<int64_t> in = im.shape(0);
  if (product(dims) != product(in)) {
    im.error() << "cannot reshape " << product(in) << " elements to "
               << product(dims);
    return failure();
  }
  if (const Known *k = im.known(0)) {
    im.define(0, reshapeKnown(*k, std::move(dims)));
    return success();
  }
  FailureOr<Value> v = im.value(0);
  if (failed(v))
    return failure();
  return defineResult(im, reshape(im, *v, dims));
}

LogicalResult convertReshape(Importer &im) {
  FailureOr<const Known *> shape = im.requireKnown(1, "the shape");
  if (failed(shape))
    return failure();
  std::vector<int64_t> in = im.shape(0), dims = (*shape)->toInts();
  bool allowZero = im.attrInt("allowzero", 0) != 0;
  std::optional<size_t> inferred;
  int64_t known = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] == 0 && !allowZero) {
      if (d >= in.size()) {
        im.error() << "shape copies dimension " << d << " of a rank-"
                   << in.size() << " input";
        return failure();
      }
      dims[d] = in[d];
    }
    if (dims[d] == -1) {
      if (inferred) {
        im.error() << "shape has two -1 dimensions";
        return failure();
      }
      inferred = d;
      continue;
    }
    if (dims[d] < 0) {
      im.error() << "shape has a negative dimension " << dims[d];
      return failure();
    }
    if (llvm::MulOverflow(known, dims[d], known)) {
      im.error() << "shape has more elements than 64 bits count";
      return failure();
    }
  }
  if (inferred) {
    if (known == 0 || product(in) % known != 0) {
      im.error() << "cannot infer the -1 dimension: " << product(in)
                 << " elements do not divide by " << known;
      return failure();
    }
    dims[*inferred] = product(in) / known;
  }
  return defineReshaped(im, std::move(dims));
}

LogicalResult convertFlatten(Importer &im) {
  std::vector<int64_t> in = im.shape(0);
  int64_t rank = in.size(), axis = im.attrInt("axis", 1);
  if (axis < -rank || axis > rank) {
    im.error() << "axis " << axis << " is outside [" << -rank << ", " << rank
               << "]";
    return failure();
  }
  if (axis < 0)
    axis += rank;
  ArrayRef<int64_t> dims(in);
  return defineReshaped(
      im, {product(dims.take_front(axis)), product(dims.drop_front(axis))});
}

/// The axes of Squeeze, Unsqueeze and the reductions: input 1 (opset 13 and
/// later; 18 for most reductions) or the `axes` attribute.
FailureOr<std::optional<std::vector<int64_t>>> readAxes(Importer &im) {
  if (im.hasInput(1)) {
    FailureOr<const Known *> axes = im.requireKnown(1, "the axes");
    if (failed(axes))
      return failure();
    return std::optional<std::vector<int64_t>>((*axes)->toInts());
  }
  return im.attrInts("axes");
}

LogicalResult convertSqueeze(Importer &im) {
  std::vector<int64_t> in = im.shape(0);
  auto axes = readAxes(im);
  if (failed(axes))
    return failure();
  std::vector<int64_t> dims;
  if (!*axes) {
    for (int64_t d : in)
      if (d != 1)
        dims.push_back(d);
    return defineReshaped(im, dims);
  }
  FailureOr<SmallVector<int64_t>> squeezed =
      normaliseAxes(im, **axes, in.size());
  if (failed(squeezed))
    return failure();
  for (int64_t d = 0; d < int64_t(in.size()); ++d) {
    if (!llvm::is_contained(*squeezed, d)) {
      dims.push_back(in[d]);
      continue;
    }
    if (in[d] != 1) {
      im.error() << "cannot squeeze dimension " << d << " of size " << in[d];
      return failure();
    }
  }
  return defineReshaped(im, dims);
}

LogicalResult convertUnsqueeze(Importer &im) {
  std::vector<int64_t> in = im.shape(0);
  auto axes = readAxes(im);
  if (failed(axes))
    return failure();
  if (!*axes) {
    im.error() << "needs axes";
    return failure();
  }
  int64_t rank = in.size() + (*axes)->size();
  FailureOr<SmallVector<int64_t>> inserted = normaliseAxes(im, **axes, rank);
  if (failed(inserted))
    return failure();
  std::vector<int64_t> dims;
  auto next = in.begin();
  for (int64_t d = 0; d < rank; ++d)
    dims.push_back(llvm::is_contained(*inserted, d) ? 1 : *next++);
  return defineReshaped(im, dims);
}

LogicalResult convertTranspose(Importer &im) {
  std::vector<int64_t> in = im.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> perm;
  if (auto attr = im.attrInts("perm"))
    perm = *attr;
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  std::vector<int64_t> sorted = perm;
  llvm::sort(sorted);
  if (!llvm::equal(sorted, llvm::seq<int64_t>(0, rank))) {
    im.error() << "perm is not a permutation of the " << rank
               << " dimensions";
    return failure();
  }
  if (const Known *k = im.known(0)) {
    im.define(0, transposeKnown(*k, perm));
    return success();
  }
  FailureOr<Value> v = im.value(0);
  if (failed(v))
    return failure();
  return defineResult(im, transpose(im, *v, perm));
}

LogicalResult convertConcat(Importer &im) {
  std::vector<int64_t> first = im.shape(0);
  FailureOr<int64_t> axis =
      normaliseAxis(im, im.attrInt("axis", 0), first.size());
  if (failed(axis))
    return failure();
  // Check shapes; inputs with no elements along the axis drop out.
  std::vector<unsigned> inputs;
  bool allKnown = true;
  for (unsigned k = 0; k < im.numInputs(); ++k) {
    std::vector<int64_t> s = im.shape(k);
    if (s.size() != first.size() || im.inputType(k) != im.inputType(0)) {
      im.error() << "input #" << k << " differs in rank or element type";
      return failure();
    }
    for (size_t d = 0; d < s.size(); ++d)
      if (int64_t(d) != *axis && s[d] != first[d]) {
        im.error() << "input #" << k << " differs in dimension " << d;
        return failure();
      }
    if (s[*axis] == 0)
      continue;
    inputs.push_back(k);
    allKnown &= im.known(k) != nullptr;
  }
  if (inputs.empty()) {
    im.error() << "all inputs are empty";
    return failure();
  }
  if (allKnown) {
    SmallVector<const Known *> in;
    for (unsigned k : inputs)
      in.push_back(im.known(k));
    im.define(0, concatKnown(in, *axis));
    return success();
  }
  SmallVector<Value> values;
  int64_t size = 0;
  for (unsigned k : inputs) {
    FailureOr<Value> v = im.value(k);
    if (failed(v))
      return failure();
    values.push_back(*v);
    size += im.shape(k)[*axis];
  }
  if (values.size() == 1)
    return defineResult(im, values.front());
  std::vector<int64_t> dims = first;
  dims[*axis] = size;
  return defineResult(
      im, tg::ConcatOp::create(im.builder, im.loc(),
                               tensorType(values.front()).clone(dims), values,
                               im.builder.getI64IntegerAttr(*axis)));
}

/// ONNX Slice bounds for one dimension of size `dim` (the spec's clamping),
/// as an offset, a count and a step.
void sliceBounds(int64_t dim, int64_t start, int64_t end, int64_t step,
                 int64_t &offset, int64_t &count) {
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    count = end > start ? (end - start + step - 1) / step : 0;
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
  }
  offset = start;
}

/// Defines output `out` as a box of input 0 (steps may be negative for
/// known inputs only).
LogicalResult defineSlice(Importer &im, unsigned out,
                          ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                          ArrayRef<int64_t> steps) {
  if (const Known *k = im.known(0)) {
    im.define(out, sliceKnown(*k, offsets, sizes, steps));
    return success();
  }
  if (llvm::is_contained(sizes, 0)) {
    im.error() << "the slice is empty; tg tensors have no zero-size "
                  "dimensions";
    return failure();
  }
  if (llvm::any_of(steps, [](int64_t s) { return s < 0; })) {
    im.error() << "slices with negative steps are not supported on runtime "
                  "tensors";
    return failure();
  }
  FailureOr<Value> v = im.value(0);
  if (failed(v))
    return failure();
  Value result = *v;
  if (ArrayRef<int64_t>(sizes) != tensorType(*v).getShape())
    result = slice(im, *v, offsets, sizes, steps,
                   out ? "out" + std::to_string(out) : "");
  im.define(out, result, im.inputType(0));
  return success();
}

LogicalResult convertSlice(Importer &im) {
  std::vector<int64_t> in = im.shape(0);
  int64_t rank = in.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (im.opset() < 10) {
    starts = im.attrInts("starts").value_or(std::vector<int64_t>{});
    ends = im.attrInts("ends").value_or(std::vector<int64_t>{});
    axes = im.attrInts("axes").value_or(std::vector<int64_t>{});
  } else {
    const char *what[] = {"", "the starts", "the ends", "the axes",
                          "the steps"};
    std::vector<int64_t> *into[] = {nullptr, &starts, &ends, &axes, &steps};
    for (unsigned k = 1; k < 5; ++k) {
      if (!im.hasInput(k))
        continue;
      FailureOr<const Known *> v = im.requireKnown(k, what[k]);
      if (failed(v))
        return failure();
      *into[k] = (*v)->toInts();
    }
  }
  if (axes.empty())
    for (size_t d = 0; d < starts.size(); ++d)
      axes.push_back(d);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    im.error() << "starts, ends, axes and steps differ in length";
    return failure();
  }
  std::vector<int64_t> offsets(rank, 0), sizes = in, strides(rank, 1);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < starts.size(); ++i) {
    FailureOr<int64_t> axis = normaliseAxis(im, axes[i], rank);
    if (failed(axis))
      return failure();
    if (seen[*axis] || steps[i] == 0) {
      im.error() << (steps[i] == 0 ? "a step is 0" : "repeats an axis");
      return failure();
    }
    seen[*axis] = true;
    strides[*axis] = steps[i];
    sliceBounds(in[*axis], starts[i], ends[i], steps[i], offsets[*axis],
                sizes[*axis]);
  }
  return defineSlice(im, 0, offsets, sizes, strides);
}

LogicalResult convertSplit(Importer &im) {
  std::vector<int64_t> in = im.shape(0);
  FailureOr<int64_t> axis = normaliseAxis(im, im.attrInt("axis", 0), in.size());
  if (failed(axis))
    return failure();
  std::vector<int64_t> parts;
  if (im.hasInput(1)) {
    FailureOr<const Known *> split = im.requireKnown(1, "the split sizes");
    if (failed(split))
      return failure();
    parts = (*split)->toInts();
  } else if (auto attr = im.attrInts("split")) {
    parts = *attr;
  } else {
    int64_t n = im.attrInt("num_outputs", im.numOutputs());
    int64_t each = n > 0 ? (in[*axis] + n - 1) / n : 0;
    for (int64_t k = 0, left = in[*axis]; k < n; ++k, left -= each)
      parts.push_back(std::min(each, std::max<int64_t>(left, 0)));
  }
  if (parts.size() != im.numOutputs() ||
      std::accumulate(parts.begin(), parts.end(), int64_t(0)) != in[*axis] ||
      llvm::any_of(parts, [](int64_t p) { return p < 0; })) {
    im.error() << "the split sizes do not add up to dimension " << *axis
               << " (" << in[*axis] << ") over " << im.numOutputs()
               << " outputs";
    return failure();
  }
  int64_t offset = 0;
  for (unsigned k = 0; k < parts.size(); ++k) {
    std::vector<int64_t> offsets(in.size(), 0), sizes = in,
                                 steps(in.size(), 1);
    offsets[*axis] = offset;
    sizes[*axis] = parts[k];
    offset += parts[k];
    if (!im.isOutputUsed(k))
      continue;
    if (failed(defineSlice(im, k, offsets, sizes, steps)))
      return failure();
  }
  return success();
}

LogicalResult convertGather(Importer &im) {
  std::vector<int64_t> in = im.shape(0);
  int64_t rank = in.size();
  FailureOr<int64_t> axis = normaliseAxis(im, im.attrInt("axis", 0), rank);
  if (failed(axis))
    return failure();
  int64_t extent = in[*axis];
  const Known *indices = im.known(1);
  std::optional<Known> normalised;
  if (indices) {
    normalised = castKnown(*indices, DataType::Int64);
    for (int64_t &i : normalised->i) {
      if (i < -extent || i >= extent) {
        im.error() << "index " << i << " is outside [" << -extent << ", "
                   << extent << ")";
        return failure();
      }
      if (i < 0)
        i += extent;
    }
  }
  if (im.known(0) && normalised) {
    im.define(0, gatherKnown(*im.known(0), *normalised, *axis));
    return success();
  }
  FailureOr<Value> data = im.value(0);
  if (failed(data))
    return failure();
  // Constant indices in arithmetic progression select a strided slice.
  if (normalised && normalised->size() > 0) {
    const std::vector<int64_t> &ids = normalised->i;
    int64_t step = ids.size() > 1 ? ids[1] - ids[0] : 1;
    bool progression = step >= 1;
    for (size_t j = 1; j < ids.size() && progression; ++j)
      progression = ids[j] - ids[j - 1] == step;
    if (progression) {
      std::vector<int64_t> offsets(rank, 0), sizes = in, steps(rank, 1);
      offsets[*axis] = ids[0];
      sizes[*axis] = ids.size();
      steps[*axis] = step;
      Value picked = slice(im, *data, offsets, sizes, steps, "slice");
      std::vector<int64_t> dims(in.begin(), in.begin() + *axis);
      dims.insert(dims.end(), normalised->dims.begin(),
                  normalised->dims.end());
      dims.insert(dims.end(), in.begin() + *axis + 1, in.end());
      return defineResult(im, reshape(im, picked, dims));
    }
  }
  if (!isa<FloatType>(tensorType(*data).getElementType())) {
    im.error() << "gathering from a runtime " << dataTypeName(im.inputType(0))
               << " tensor is not supported (tg gathers floating-point "
                  "rows)";
    return failure();
  }
  FailureOr<Value> ids = im.value(1);
  if (failed(ids))
    return failure();
  if (normalised)
    ids = im.constant(*normalised, "indices");
  // Gather along axis 0 of the data moved so that `axis` comes first, then
  // move the data's leading dimensions back in front of the indices'.
  std::vector<int64_t> toFront{*axis};
  for (int64_t d = 0; d < rank; ++d)
    if (d != *axis)
      toFront.push_back(d);
  Value table = transpose(im, *data, toFront, "to_front");
  RankedTensorType tableType = tensorType(table);
  ArrayRef<int64_t> idShape = tensorType(*ids).getShape();
  SmallVector<int64_t> gathered(idShape);
  gathered.append(tableType.getShape().begin() + 1,
                  tableType.getShape().end());
  Value result = tg::GatherOp::create(im.builder, im.loc(),
                                      tableType.clone(gathered), table, *ids);
  int64_t ni = idShape.size();
  SmallVector<int64_t> back;
  for (int64_t d = 0; d < *axis; ++d)
    back.push_back(ni + d);
  for (int64_t d = 0; d < ni; ++d)
    back.push_back(d);
  for (int64_t d = ni + *axis; d < int64_t(gathered.size()); ++d)
    back.push_back(d);
  return defineResult(im, transpose(im, result, back, "from_front"));
}

LogicalResult convertExpand(Importer &im) {
  FailureOr<const Known *> shape = im.requireKnown(1, "the shape");
  if (failed(shape))
    return failure();
  std::vector<int64_t> dims;
  if (!broadcastShapes(im.shape(0), (*shape)->toInts(), dims)) {
    im.error() << "the shape does not broadcast with the input's";
    return failure();
  }
  if (const Known *k = im.known(0)) {
    if (product(dims) > kMaxFoldedElements) {
      im.error() << "the result is too large to evaluate while importing";
      return failure();
    }
    im.define(0, broadcastKnown(*k, dims));
    return success();
  }
  FailureOr<Value> v = im.value(0);
  if (failed(v))
    return failure();
  if (tensorType(*v).getShape() == ArrayRef<int64_t>(dims))
    return defineResult(im, *v);
  return defineResult(
      im, tg::BroadcastToOp::create(im.builder, im.loc(),
                                    tensorType(*v).clone(dims), *v));
}

//===----------------------------------------------------------------------===//
// Elementwise arithmetic
//===----------------------------------------------------------------------===//

/// `v` converted to element type `element` (itself if it has it).
Value convertTo(Importer &im, Value v, Type element, StringRef suffix) {
  RankedTensorType type = tensorType(v);
  if (type.getElementType() == element)
    return v;
  return tg::CastOp::create(im.builder, im.loc(suffix), type.clone(element),
                            v);
}

/// Whether input `k` is a runtime integer tensor (not bool).
bool isIntegerInput(Importer &im, unsigned k) {
  FailureOr<Value> v = im.value(k);
  if (failed(v))
    return false;
  auto integer = dyn_cast<IntegerType>(tensorType(*v).getElementType());
  return integer && integer.getWidth() > 1;
}

/// Integer arithmetic on runtime values (RoBERTa's position ids): tg
/// computes on floating-point tensors, so the operands go to f64, which
/// holds every integer below 2^53 exactly, and the result comes back,
/// truncated (as ONNX's integer Div truncates). Mixed precision leaves f64
/// alone.
template <typename Op> LogicalResult convertIntegerBinary(Importer &im) {
  Value lhs = *im.value(0), rhs = *im.value(1);
  Type element = tensorType(lhs).getElementType();
  if (tensorType(rhs).getElementType() != element) {
    im.error() << "operands of different element types (" << element << ", "
               << tensorType(rhs).getElementType() << ")";
    return failure();
  }
  Type f64 = im.builder.getF64Type();
  Value y = binary<Op>(im, convertTo(im, lhs, f64, "lhs_f64"),
                       convertTo(im, rhs, f64, "rhs_f64"), "f64");
  if (!y)
    return failure();
  return defineResult(im, convertTo(im, y, element, ""));
}

template <typename Op> LogicalResult convertBinary(Importer &im) {
  if (isIntegerInput(im, 0) && isIntegerInput(im, 1))
    return convertIntegerBinary<Op>(im);
  FailureOr<Value> lhs = floatInput(im, 0), rhs = floatInput(im, 1);
  if (failed(lhs) || failed(rhs))
    return failure();
  return defineResult(im, binary<Op>(im, *lhs, *rhs));
}

/// Max, Min, Sum, Mean: a chain of binary ops over any number of inputs.
template <typename Op> LogicalResult convertVariadic(Importer &im) {
  FailureOr<Value> acc = floatInput(im, 0);
  if (failed(acc))
    return failure();
  for (unsigned k = 1; k < im.numInputs(); ++k) {
    FailureOr<Value> next = floatInput(im, k);
    if (failed(next))
      return failure();
    *acc = binary<Op>(im, *acc, *next,
                      k + 1 == im.numInputs() && im.node().opType != "Mean"
                          ? ""
                          : "in" + std::to_string(k));
    if (!*acc)
      return failure();
  }
  if (im.node().opType == "Mean")
    *acc = scaleBy(im, *acc, 1.0 / double(im.numInputs()), "");
  return defineResult(im, *acc);
}

template <typename Op> LogicalResult convertUnary(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  return defineResult(
      im, Op::create(im.builder, im.loc(), x->getType(), *x, nullptr));
}

LogicalResult convertReciprocal(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  Value one = im.scalar(tensorType(*x).getElementType(), 1.0, "one");
  return defineResult(im, binary<tg::DivOp>(im, one, *x));
}

LogicalResult convertLeakyRelu(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  double alpha = im.attrFloat("alpha", 0.01);
  if (alpha >= 0 && alpha <= 1) {
    // max(x, alpha x) for a slope in [0, 1].
    Value scaled = scaleBy(im, *x, alpha, "slope");
    return defineResult(im, binary<tg::MaximumOp>(im, *x, scaled));
  }
  // relu(x) - alpha relu(-x) for any slope.
  Type type = x->getType();
  Value pos = tg::ReluOp::create(im.builder, im.loc("positive"), type, *x,
                                 nullptr);
  Value negX = tg::NegOp::create(im.builder, im.loc("flip"), type, *x, nullptr);
  Value neg = tg::ReluOp::create(im.builder, im.loc("negative"), type, negX,
                                 nullptr);
  return defineResult(
      im, binary<tg::SubOp>(im, pos, scaleBy(im, neg, alpha, "slope")));
}

LogicalResult convertPow(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  const Known *e = im.known(1);
  if (!e || e->size() != 1) {
    im.error() << "Pow is supported with a constant scalar exponent (2, 3, "
                  "0.5, -0.5, 1, -1)";
    return failure();
  }
  double p = e->getFloat(0);
  Type type = x->getType();
  // A scalar exponent broadcasts the result to the exponent's rank too.
  std::vector<int64_t> dims;
  broadcastShapes(tensorType(*x).getShape(), e->dims, dims);
  auto done = [&](Value v) { return defineResult(im, reshape(im, v, dims)); };
  if (p == 1)
    return done(*x);
  if (p == 2)
    return done(tg::SquareOp::create(im.builder, im.loc(), type, *x, nullptr));
  if (p == 3) {
    Value sq = tg::SquareOp::create(im.builder, im.loc("square"), type, *x,
                                    nullptr);
    return done(binary<tg::MulOp>(im, *x, sq));
  }
  if (p == 0.5)
    return done(tg::SqrtOp::create(im.builder, im.loc(), type, *x, nullptr));
  if (p == -0.5)
    return done(tg::RsqrtOp::create(im.builder, im.loc(), type, *x, nullptr));
  if (p == -1) {
    Value one = im.scalar(tensorType(*x).getElementType(), 1.0, "one");
    return done(binary<tg::DivOp>(im, one, *x));
  }
  if (p == 0) {
    Value one = im.scalar(tensorType(*x).getElementType(), 1.0, "one");
    Value zeroTimes = scaleBy(im, *x, 0.0, "zero");
    return done(binary<tg::AddOp>(im, zeroTimes, one));
  }
  im.error() << "Pow with exponent " << p
             << " is not supported (2, 3, 0.5, -0.5, 1, -1 and 0 are)";
  return failure();
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

LogicalResult convertMatMul(Importer &im) {
  FailureOr<Value> a = floatInput(im, 0), b = floatInput(im, 1);
  if (failed(a) || failed(b))
    return failure();
  std::vector<int64_t> as = im.shape(0), bs = im.shape(1);
  if (as.empty() || bs.empty()) {
    im.error() << "MatMul of a scalar";
    return failure();
  }
  // numpy: a vector operand becomes a matrix, and its dimension is dropped
  // from the result.
  bool vecA = as.size() == 1, vecB = bs.size() == 1;
  Value lhs = vecA ? reshape(im, *a, {1, as[0]}, "lhs") : *a;
  Value rhs = vecB ? reshape(im, *b, {bs[0], 1}, "rhs") : *b;
  auto lt = tensorType(lhs), rt = tensorType(rhs);
  if (lt.getElementType() != rt.getElementType()) {
    im.error() << "operands of different element types";
    return failure();
  }
  int64_t m = lt.getDimSize(lt.getRank() - 2), k = lt.getShape().back();
  int64_t k2 = rt.getDimSize(rt.getRank() - 2), n = rt.getShape().back();
  FailureOr<SmallVector<int64_t>> batch = tg::broadcastShapes(
      lt.getShape().drop_back(2), rt.getShape().drop_back(2));
  if (k != k2 || failed(batch)) {
    im.error() << "cannot multiply " << lt << " by " << rt;
    return failure();
  }
  SmallVector<int64_t> dims(*batch);
  dims.append({m, n});
  Value product = tg::MatmulOp::create(im.builder, im.loc(), lt.clone(dims),
                                       lhs, rhs, UnitAttr(), UnitAttr(),
                                       nullptr);
  SmallVector<int64_t> out(*batch);
  if (!vecA)
    out.push_back(m);
  if (!vecB)
    out.push_back(n);
  return defineResult(im, reshape(im, product, out, "result"));
}

LogicalResult convertGemm(Importer &im) {
  FailureOr<Value> a = floatInput(im, 0), b = floatInput(im, 1);
  if (failed(a) || failed(b))
    return failure();
  auto at = tensorType(*a), bt = tensorType(*b);
  if (at.getRank() != 2 || bt.getRank() != 2 ||
      at.getElementType() != bt.getElementType()) {
    im.error() << "Gemm needs two matrices of one element type, got " << at
               << " and " << bt;
    return failure();
  }
  bool ta = im.attrInt("transA", 0), tb = im.attrInt("transB", 0);
  int64_t m = at.getDimSize(ta ? 1 : 0), k = at.getDimSize(ta ? 0 : 1);
  int64_t k2 = bt.getDimSize(tb ? 1 : 0), n = bt.getDimSize(tb ? 0 : 1);
  if (k != k2) {
    im.error() << "cannot multiply " << at << (ta ? " (transposed)" : "")
               << " by " << bt << (tb ? " (transposed)" : "");
    return failure();
  }
  UnitAttr unit = im.builder.getUnitAttr();
  Value y = tg::MatmulOp::create(
      im.builder, im.loc(), at.clone({m, n}), *a, *b, ta ? unit : UnitAttr(),
      tb ? unit : UnitAttr(), nullptr);
  y = scaleBy(im, y, im.attrFloat("alpha", 1.0), "alpha");
  if (!y)
    return failure();
  if (im.hasInput(2)) {
    double beta = im.attrFloat("beta", 1.0);
    Value c;
    if (const Known *known = im.known(2)) {
      Known scaled = *known;
      for (int64_t i = 0; i < scaled.size(); ++i)
        scaled.set(i, known->getFloat(i) * beta);
      c = im.constant(scaled, "bias");
    } else {
      FailureOr<Value> cv = floatInput(im, 2);
      if (failed(cv))
        return failure();
      c = scaleBy(im, *cv, beta, "beta");
    }
    if (!c)
      return failure();
    y = binary<tg::AddOp>(im, y, c, "bias");
    if (y && tensorType(y).getShape() != ArrayRef<int64_t>{m, n}) {
      im.error() << "C does not broadcast to the product's shape";
      return failure();
    }
  }
  return defineResult(im, y);
}

//===----------------------------------------------------------------------===//
// Softmax, normalisation, reductions
//===----------------------------------------------------------------------===//

template <typename Op> LogicalResult convertSoftmax(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  auto type = tensorType(*x);
  int64_t rank = type.getRank();
  if (rank == 0) {
    im.error() << "softmax of a scalar";
    return failure();
  }
  bool coerced = im.opset() < 13;
  FailureOr<int64_t> axis =
      normaliseAxis(im, im.attrInt("axis", coerced ? 1 : -1), rank);
  if (failed(axis))
    return failure();
  if (!coerced || *axis == rank - 1)
    return defineResult(im, Op::create(im.builder, im.loc(), type, *x,
                                       im.builder.getI64IntegerAttr(*axis),
                                       nullptr));
  // Before opset 13: over the flattened dimensions [axis, rank).
  ArrayRef<int64_t> dims = type.getShape();
  Value flat = reshape(
      im, *x, {product(dims.take_front(*axis)), product(dims.drop_front(*axis))},
      "flatten");
  Value y = Op::create(im.builder, im.loc(), flat.getType(), flat,
                       im.builder.getI64IntegerAttr(1), nullptr);
  return defineResult(im, reshape(im, y, dims, "unflatten"));
}

LogicalResult convertLayerNormalization(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0), scale = floatInput(im, 1);
  if (failed(x) || failed(scale))
    return failure();
  auto type = tensorType(*x);
  int64_t rank = type.getRank();
  FailureOr<int64_t> axis = normaliseAxis(im, im.attrInt("axis", -1), rank);
  if (failed(axis))
    return failure();
  double epsilon = im.attrFloat("epsilon", 1e-5);
  if (!(epsilon > 0)) {
    im.error() << "epsilon must be positive";
    return failure();
  }
  SmallVector<int64_t> normalised(type.getShape().drop_front(*axis));
  Type element = type.getElementType();
  auto toNormalised = [&](Value v, StringRef suffix) -> Value {
    auto vt = tensorType(v);
    if (vt.getShape() == ArrayRef<int64_t>(normalised))
      return v;
    std::vector<int64_t> dims;
    if (!broadcastShapes(vt.getShape(), normalised, dims) ||
        ArrayRef<int64_t>(dims) != ArrayRef<int64_t>(normalised)) {
      im.error() << suffix << " (" << vt
                 << ") does not broadcast to the normalised shape";
      return {};
    }
    Value r = v;
    if (vt.getRank() > int64_t(normalised.size())) // leading ones
      r = reshape(im, v,
                  vt.getShape().drop_front(vt.getRank() - normalised.size()),
                  suffix);
    return tg::BroadcastToOp::create(im.builder, im.loc(suffix),
                                     vt.clone(normalised), r);
  };
  Value g = toNormalised(*scale, "scale");
  Value bias;
  if (im.hasInput(2)) {
    FailureOr<Value> bv = floatInput(im, 2);
    if (failed(bv))
      return failure();
    bias = toNormalised(*bv, "bias");
  } else {
    Known zeros = Known::zeros(im.inputType(1), {normalised.begin(),
                                                 normalised.end()});
    bias = im.constant(zeros, "bias");
  }
  if (!g || !bias)
    return failure();
  if (tensorType(g).getElementType() != tensorType(bias).getElementType()) {
    im.error() << "scale and bias differ in element type";
    return failure();
  }
  Type statType = element.isF64() ? element : im.builder.getF32Type();
  auto stats = RankedTensorType::get(type.getShape().take_front(*axis),
                                     statType);
  auto op = tg::LayerNormOp::create(
      im.builder, im.loc(), TypeRange{type, stats, stats}, *x, g, bias,
      im.builder.getI64IntegerAttr(*axis),
      im.builder.getF32FloatAttr(static_cast<float>(epsilon)), nullptr);
  im.define(0, op.getResult(), im.inputType(0));
  // Mean and InvStdDev keep the normalised dimensions as ones.
  SmallVector<int64_t> kept(type.getShape().take_front(*axis));
  kept.append(rank - *axis, 1);
  for (unsigned k = 1; k < 3; ++k) {
    if (!im.isOutputUsed(k))
      continue;
    Value stat = op->getResult(k);
    if (statType != element)
      stat = tg::CastOp::create(im.builder, im.loc(k == 1 ? "mean" : "rstd"),
                                tensorType(stat).clone(element), stat);
    im.define(k, reshape(im, stat, kept, k == 1 ? "mean" : "rstd"),
              im.inputType(0));
  }
  return success();
}

template <typename Op> LogicalResult convertReduce(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  auto type = tensorType(*x);
  auto axesOr = readAxes(im);
  if (failed(axesOr))
    return failure();
  std::vector<int64_t> axes = axesOr->value_or(std::vector<int64_t>{});
  bool keep = im.attrInt("keepdims", 1) != 0;
  if (axes.empty()) {
    if (im.attrInt("noop_with_empty_axes", 0))
      return defineResult(im, *x);
    for (int64_t d = 0; d < type.getRank(); ++d)
      axes.push_back(d);
  }
  FailureOr<SmallVector<int64_t>> sorted =
      normaliseAxes(im, axes, type.getRank());
  if (failed(sorted))
    return failure();
  if (sorted->empty()) // a rank-0 input
    return defineResult(im, *x);
  SmallVector<Type> types;
  if (failed(tg::inferReduceType(im.loc(), type, *sorted, keep, types)))
    return failure();
  return defineResult(
      im, Op::create(im.builder, im.loc(), types.front(), *x,
                     im.builder.getDenseI64ArrayAttr(*sorted),
                     keep ? im.builder.getUnitAttr() : UnitAttr(), nullptr));
}

//===----------------------------------------------------------------------===//
// Training ops
//===----------------------------------------------------------------------===//

LogicalResult convertDropout(Importer &im) {
  bool training = false;
  if (im.hasInput(2)) {
    FailureOr<const Known *> mode = im.requireKnown(2, "training_mode");
    if (failed(mode))
      return failure();
    training = (*mode)->getInt(0) != 0;
  }
  double ratio = 0.5;
  if (im.hasInput(1)) {
    FailureOr<const Known *> r = im.requireKnown(1, "the ratio");
    if (failed(r))
      return failure();
    ratio = (*r)->getFloat(0);
  } else if (im.opset() < 12) {
    ratio = im.attrFloat("ratio", 0.5);
  }
  if (im.isOutputUsed(1)) {
    im.error() << "Dropout's mask output is not supported (tg.dropout "
                  "recomputes its mask from the seed instead of storing it)";
    return failure();
  }
  if (!training || ratio == 0)
    return convertIdentity(im);
  if (!(ratio >= 0 && ratio < 1)) {
    im.error() << "the dropout ratio must be in [0, 1), got " << ratio;
    return failure();
  }
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  Value seed = im.dropoutSeed();
  if (!seed)
    return failure();
  Value y = tg::DropoutOp::create(
      im.builder, im.loc(), x->getType(), *x, seed,
      im.builder.getF32FloatAttr(float(ratio)),
      im.builder.getI64IntegerAttr(im.nextDropoutStream()), nullptr);
  im.define(0, y, im.inputType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Convolutional networks
//===----------------------------------------------------------------------===//

/// The 2-D window attributes shared by Conv and the pools: strides,
/// dilations and [top, left, bottom, right] padding, with auto_pad
/// resolved against the input's spatial size.
struct Window2d {
  SmallVector<int64_t> kernel, strides{1, 1}, dilations{1, 1},
      padding{0, 0, 0, 0};
};

FailureOr<Window2d> windowAttrs(Importer &im, ArrayRef<int64_t> inputShape,
                                ArrayRef<int64_t> kernel) {
  Window2d w;
  w.kernel.assign(kernel.begin(), kernel.end());
  auto pair = [&](StringRef name, SmallVector<int64_t> &into) {
    if (auto v = im.attrInts(name)) {
      if (v->size() != 2) {
        im.error() << name << " must have 2 values (only 2-D windows are "
                   << "supported)";
        return false;
      }
      into.assign(v->begin(), v->end());
    }
    return true;
  };
  if (!pair("strides", w.strides) || !pair("dilations", w.dilations))
    return failure();
  for (int64_t v : llvm::concat<int64_t>(w.strides, w.dilations))
    if (v < 1) {
      im.error() << "strides and dilations must be positive";
      return failure();
    }
  std::string autoPad = im.attrString("auto_pad", "NOTSET");
  if (autoPad == "NOTSET") {
    if (auto pads = im.attrInts("pads")) {
      if (pads->size() != 4) {
        im.error() << "pads must have 4 values (only 2-D windows are "
                   << "supported)";
        return failure();
      }
      // ONNX: [top, left, bottom, right], tg's order.
      w.padding.assign(pads->begin(), pads->end());
    }
  } else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
    for (int d = 0; d < 2; ++d) {
      int64_t in = inputShape[2 + d], s = w.strides[d];
      int64_t out = (in + s - 1) / s;
      int64_t extent = (w.kernel[d] - 1) * w.dilations[d] + 1;
      int64_t total = std::max<int64_t>(0, (out - 1) * s + extent - in);
      int64_t small = total / 2, large = total - small;
      bool upper = autoPad == "SAME_UPPER";
      w.padding[d] = upper ? small : large;
      w.padding[2 + d] = upper ? large : small;
    }
  } else if (autoPad != "VALID") {
    im.error() << "auto_pad '" << autoPad << "' is not supported";
    return failure();
  }
  for (int64_t p : w.padding)
    if (p < 0) {
      im.error() << "pads must not be negative";
      return failure();
    }
  return w;
}

/// The node's input 0 as a rank-4 (NCHW) float activation.
FailureOr<Value> imageInput(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  if (tensorType(*x).getRank() != 4) {
    im.error() << "only 2-D " << im.node().opType << " (rank-4 NCHW input) "
               << "is supported, the input is " << tensorType(*x);
    return failure();
  }
  return x;
}

LogicalResult convertConv(Importer &im) {
  FailureOr<Value> x = imageInput(im), w = floatInput(im, 1);
  if (failed(x) || failed(w))
    return failure();
  RankedTensorType wt = tensorType(*w);
  if (wt.getRank() != 4) {
    im.error() << "the filter must be rank 4 [O, C / group, KH, KW], got "
               << wt;
    return failure();
  }
  if (auto k = im.attrInts("kernel_shape");
      k && (k->size() != 2 || (*k)[0] != wt.getDimSize(2) ||
            (*k)[1] != wt.getDimSize(3))) {
    im.error() << "kernel_shape does not match the filter " << wt;
    return failure();
  }
  FailureOr<Window2d> win = windowAttrs(
      im, tensorType(*x).getShape(), wt.getShape().drop_front(2));
  if (failed(win))
    return failure();
  Value filter = *w;
  Type element = tensorType(*x).getElementType();
  if (wt.getElementType() != element)
    filter = tg::CastOp::create(im.builder, im.loc("filter"),
                                wt.clone(element), filter);
  int64_t group = im.attrInt("group", 1);
  if (group < 1) {
    im.error() << "group must be positive";
    return failure();
  }
  RankedTensorType xt = tensorType(*x);
  if (xt.getDimSize(1) % group != 0 || wt.getDimSize(0) % group != 0 ||
      wt.getDimSize(1) * group != xt.getDimSize(1)) {
    im.error() << "the filter " << wt << " does not fit " << xt.getDimSize(1)
               << " input channels in " << group << " groups";
    return failure();
  }
  SmallVector<int64_t> shape(xt.getShape());
  shape[1] = wt.getDimSize(0);
  for (int d = 0; d < 2; ++d) {
    int64_t padded = shape[2 + d] + win->padding[d] + win->padding[2 + d];
    int64_t extent = (wt.getDimSize(2 + d) - 1) * win->dilations[d] + 1;
    if (padded < extent) {
      im.error() << "the dilated kernel (" << extent << ") does not fit the "
                 << "padded input (" << padded << ")";
      return failure();
    }
    shape[2 + d] = (padded - extent) / win->strides[d] + 1;
  }
  auto &b = im.builder;
  SmallVector<Type> types{xt.clone(shape)};
  Value y = tg::Conv2dOp::create(
      b, im.loc(), types.front(), *x, filter,
      b.getDenseI64ArrayAttr(win->strides),
      b.getDenseI64ArrayAttr(win->padding),
      b.getDenseI64ArrayAttr(win->dilations), b.getI64IntegerAttr(group),
      nullptr, nullptr);
  if (im.hasInput(2)) {
    FailureOr<Value> bias = floatInput(im, 2);
    if (failed(bias))
      return failure();
    int64_t o = wt.getDimSize(0);
    if (tensorType(*bias).getNumElements() != o) {
      im.error() << "the bias must have " << o << " elements";
      return failure();
    }
    Value bv = *bias;
    if (tensorType(bv).getElementType() != element)
      bv = tg::CastOp::create(b, im.loc("bias"),
                              tensorType(bv).clone(element), bv);
    y = binary<tg::AddOp>(im, y, reshape(im, bv, {o, 1, 1}, "bias"), "bias");
    if (!y)
      return failure();
  }
  im.define(0, y, im.inputType(0));
  return success();
}

template <bool isMax> LogicalResult convertPool(Importer &im) {
  FailureOr<Value> x = imageInput(im);
  if (failed(x))
    return failure();
  auto kernel = im.attrInts("kernel_shape");
  if (!kernel || kernel->size() != 2) {
    im.error() << "kernel_shape must have 2 values (only 2-D pooling is "
               << "supported)";
    return failure();
  }
  if (im.attrInt("ceil_mode", 0) != 0) {
    im.error() << "ceil_mode = 1 is not supported";
    return failure();
  }
  if (isMax && im.attrInt("storage_order", 0) != 0) {
    im.error() << "storage_order = 1 is not supported";
    return failure();
  }
  if (isMax && im.isOutputUsed(1)) {
    im.error() << "MaxPool's Indices output is not supported";
    return failure();
  }
  FailureOr<Window2d> win = windowAttrs(im, tensorType(*x).getShape(), *kernel);
  if (failed(win))
    return failure();
  if (win->dilations[0] != 1 || win->dilations[1] != 1) {
    im.error() << "dilated pooling is not supported";
    return failure();
  }
  auto &b = im.builder;
  RankedTensorType in = tensorType(*x);
  SmallVector<int64_t> shape(in.getShape());
  for (int d = 0; d < 2; ++d) {
    int64_t padded = shape[2 + d] + win->padding[d] + win->padding[2 + d];
    if (padded < win->kernel[d] || win->padding[d] >= win->kernel[d] ||
        win->padding[2 + d] >= win->kernel[d]) {
      im.error() << "the window does not fit the input, or a padding is "
                 << "not smaller than the window";
      return failure();
    }
    shape[2 + d] = (padded - win->kernel[d]) / win->strides[d] + 1;
  }
  Value y;
  if constexpr (isMax)
    y = tg::MaxPool2dOp::create(b, im.loc(), in.clone(shape), *x,
                                b.getDenseI64ArrayAttr(win->kernel),
                                b.getDenseI64ArrayAttr(win->strides),
                                b.getDenseI64ArrayAttr(win->padding), nullptr,
                                nullptr);
  else
    y = tg::AvgPool2dOp::create(
        b, im.loc(), in.clone(shape), *x, b.getDenseI64ArrayAttr(win->kernel),
        b.getDenseI64ArrayAttr(win->strides),
        b.getDenseI64ArrayAttr(win->padding), nullptr,
        im.attrInt("count_include_pad", 0) ? b.getUnitAttr() : nullptr,
        nullptr);
  im.define(0, y, im.inputType(0));
  return success();
}

/// GlobalAveragePool and GlobalMaxPool: a reduction over the spatial axes.
template <typename ReduceOp> LogicalResult convertGlobalPool(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  RankedTensorType in = tensorType(*x);
  if (in.getRank() < 3) {
    im.error() << "the input must have spatial dimensions, got " << in;
    return failure();
  }
  SmallVector<int64_t> axes, shape(in.getShape());
  for (int64_t d = 2; d < in.getRank(); ++d) {
    axes.push_back(d);
    shape[d] = 1;
  }
  auto &b = im.builder;
  Value y = ReduceOp::create(b, im.loc(), in.clone(shape), *x,
                             b.getDenseI64ArrayAttr(axes), b.getUnitAttr(),
                             nullptr);
  im.define(0, y, im.inputType(0));
  return success();
}

LogicalResult convertBatchNormalization(Importer &im) {
  FailureOr<Value> x = imageInput(im);
  if (failed(x))
    return failure();
  SmallVector<Value> perChannel;
  for (unsigned k = 1; k < 5; ++k) {
    FailureOr<Value> v = floatInput(im, k);
    if (failed(v))
      return failure();
    perChannel.push_back(*v);
  }
  int64_t c = tensorType(*x).getDimSize(1);
  for (Value v : perChannel)
    if (tensorType(v).getShape() != ArrayRef<int64_t>{c}) {
      im.error() << "scale, bias, mean and var must have shape [" << c
                 << "], got " << tensorType(v);
      return failure();
    }
  auto &b = im.builder;
  auto retype = [&](Value v, Value like, StringRef suffix) -> Value {
    Type e = tensorType(like).getElementType();
    if (tensorType(v).getElementType() == e)
      return v;
    return tg::CastOp::create(b, im.loc(suffix), tensorType(v).clone(e), v)
        .getResult();
  };
  Value scale = perChannel[0];
  Value bias = retype(perChannel[1], scale, "bias");
  Value mean = perChannel[2];
  Value var = retype(perChannel[3], mean, "var");
  double epsilon = im.attrFloat("epsilon", 1e-5);
  if (!(epsilon > 0)) {
    im.error() << "epsilon must be positive";
    return failure();
  }
  auto eps = b.getF32FloatAttr(float(epsilon));
  RankedTensorType xt = tensorType(*x);
  if (!im.attrInt("training_mode", 0)) {
    if (im.isOutputUsed(1) || im.isOutputUsed(2)) {
      im.error() << "running statistics are outputs only in training mode";
      return failure();
    }
    Value y = tg::BatchNormInferenceOp::create(b, im.loc(), xt, *x, scale,
                                               bias, mean, var, eps, nullptr,
                                               nullptr);
    im.define(0, y, im.inputType(0));
    return success();
  }
  // ONNX blends with `momentum` for the old statistics; tg's momentum is
  // the batch's weight (PyTorch's).
  double momentum = im.attrFloat("momentum", 0.9);
  if (!(momentum >= 0 && momentum <= 1)) {
    im.error() << "momentum must be in [0, 1]";
    return failure();
  }
  Type statElement = xt.getElementType().isF64() ? xt.getElementType()
                                                  : b.getF32Type();
  auto stats = RankedTensorType::get({c}, statElement);
  auto running = tensorType(mean);
  auto op = tg::BatchNormOp::create(
      b, im.loc(), TypeRange{xt, stats, stats, running, running}, *x, scale,
      bias, mean, var, eps, b.getF32FloatAttr(float(1 - momentum)), nullptr,
      nullptr);
  im.define(0, op.getResult(), im.inputType(0));
  // tg blends the unbiased batch variance into the running one, as PyTorch
  // does; ONNX blends the biased one. With n values per channel and v_tg =
  // keep * old + m * unbiased, ONNX's is keep * old + m * unbiased * (n-1)/n
  // = (n-1)/n * v_tg + keep/n * old, keep being ONNX's momentum.
  int64_t n = xt.getNumElements() / c;
  Value onnxVar = binary<tg::AddOp>(
      im, scaleBy(im, op->getResult(4), double(n - 1) / double(n), "var_scaled"),
      scaleBy(im, var, momentum / double(n), "var_old"), "running_var");
  if (!onnxVar)
    return failure();
  // The new running statistics update the state arguments they came from.
  for (unsigned k : {3u, 4u}) {
    Value updated = k == 4 ? onnxVar : op->getResult(k);
    const std::string &name = im.node().inputs[k];
    if (im.stateNames.count(name))
      im.stateUpdates.push_back({name, updated});
    if (im.isOutputUsed(k - 2))
      im.define(k - 2, updated, im.inputType(k));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Bounded activations: Clip, HardSigmoid, HardSwish, and Abs, Softplus
//===----------------------------------------------------------------------===//

/// min(max(x, lo), hi), either bound optional: maximum and minimum with
/// scalar constants, whose gradients pass strictly inside the bounds (as
/// PyTorch's hardtanh and clamp do).
Value clamp(Importer &im, Value x, std::optional<double> lo,
            std::optional<double> hi, StringRef prefix) {
  Type element = tensorType(x).getElementType();
  std::string p = prefix.str(), last = StringRef(p).rtrim('.').str();
  if (lo)
    x = binary<tg::MaximumOp>(im, x, im.scalar(element, *lo, p + "lo"),
                              hi ? p + "lo" : last);
  if (hi && x)
    x = binary<tg::MinimumOp>(im, x, im.scalar(element, *hi, p + "hi"),
                              last);
  return x;
}

LogicalResult convertClip(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  std::optional<double> bound[2];
  if (im.opset() < 11) {
    bound[0] = im.attrFloat("min", -std::numeric_limits<double>::infinity());
    bound[1] = im.attrFloat("max", std::numeric_limits<double>::infinity());
  }
  for (unsigned k = 1; k < 3; ++k) {
    if (!im.hasInput(k))
      continue;
    FailureOr<const Known *> b =
        im.requireKnown(k, k == 1 ? "the lower bound" : "the upper bound");
    if (failed(b))
      return failure();
    if ((*b)->size() != 1) {
      im.error() << "Clip's " << (k == 1 ? "lower" : "upper")
                 << " bound must be a scalar";
      return failure();
    }
    bound[k - 1] = (*b)->getFloat(0);
  }
  for (std::optional<double> &b : bound)
    if (b && std::isinf(*b))
      b.reset();
  if (bound[0] && bound[1] && *bound[0] > *bound[1]) {
    // ONNX (and numpy's clip) give max for every element then.
    bound[0] = bound[1];
  }
  return defineResult(im, clamp(im, *x, bound[0], bound[1], ""));
}

/// max(0, min(1, alpha x + beta)).
Value hardSigmoid(Importer &im, Value x, double alpha, double beta,
                  StringRef suffix) {
  std::string name = suffix.str();
  Value y = scaleBy(im, x, alpha, name + "alpha");
  y = binary<tg::AddOp>(
      im, y, im.scalar(tensorType(x).getElementType(), beta, name + "beta"),
      name + "beta");
  return y ? clamp(im, y, 0.0, 1.0, suffix) : Value();
}

LogicalResult convertHardSigmoid(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  return defineResult(im, hardSigmoid(im, *x, im.attrFloat("alpha", 0.2),
                                      im.attrFloat("beta", 0.5), ""));
}

/// x * hard_sigmoid(x) with alpha 1/6, beta 1/2: its gradient is
/// (2x + 3) / 6 inside (-3, 3), as PyTorch's hardswish_backward.
LogicalResult convertHardSwish(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  Value gate = hardSigmoid(im, *x, 1.0 / 6.0, 0.5, "gate.");
  return defineResult(im, gate ? binary<tg::MulOp>(im, *x, gate) : Value());
}

/// max(x, -x).
Value absolute(Importer &im, Value x, StringRef suffix) {
  Value negX = tg::NegOp::create(im.builder, im.loc(suffix.str() + "neg"),
                                 x.getType(), x, nullptr);
  return binary<tg::MaximumOp>(im, x, negX, suffix);
}

LogicalResult convertAbs(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  return defineResult(im, absolute(im, *x, ""));
}

/// log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)), which neither
/// overflows for large x nor loses small values for very negative x
/// beyond the format's own precision.
LogicalResult convertSoftplus(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  Type type = x->getType();
  Value abs = absolute(im, *x, "abs.");
  if (!abs)
    return failure();
  Value e = tg::ExpOp::create(im.builder, im.loc("exp"), type,
                              tg::NegOp::create(im.builder, im.loc("negabs"),
                                                type, abs, nullptr),
                              nullptr);
  Value onePlus = binary<tg::AddOp>(
      im, e, im.scalar(tensorType(*x).getElementType(), 1.0, "one"), "onep");
  if (!onePlus)
    return failure();
  Value log = tg::LogOp::create(im.builder, im.loc("log"), type, onePlus,
                                nullptr);
  Value relu = tg::ReluOp::create(im.builder, im.loc("relu"), type, *x,
                                  nullptr);
  return defineResult(im, binary<tg::AddOp>(im, relu, log));
}

//===----------------------------------------------------------------------===//
// Masks: comparisons, logic and selection on runtime values
//===----------------------------------------------------------------------===//

/// A tg.compare of two values of one element type, broadcast.
Value compare(Importer &im, tg::ComparePredicate predicate, Value lhs,
              Value rhs, StringRef suffix = "") {
  if (tensorType(lhs).getElementType() != tensorType(rhs).getElementType()) {
    im.error() << "operands of different element types ("
               << tensorType(lhs).getElementType() << ", "
               << tensorType(rhs).getElementType() << ")";
    return {};
  }
  SmallVector<Type> types;
  Location loc = im.loc(suffix);
  if (failed(tg::CompareOp::inferReturnTypes(
          im.builder.getContext(), loc,
          tg::CompareOp::Adaptor(ValueRange{lhs, rhs}), types)))
    return {};
  return tg::CompareOp::create(im.builder, loc, types.front(), predicate, lhs,
                               rhs);
}

/// A tg.select of `onTrue` and `onFalse` (one element type) by `cond`.
Value select(Importer &im, Value cond, Value onTrue, Value onFalse,
             StringRef suffix = "") {
  if (tensorType(onTrue).getElementType() !=
      tensorType(onFalse).getElementType()) {
    im.error() << "the two values have different element types ("
               << tensorType(onTrue).getElementType() << ", "
               << tensorType(onFalse).getElementType() << ")";
    return {};
  }
  if (!tensorType(cond).getElementType().isInteger(1)) {
    im.error() << "the condition must be a boolean tensor";
    return {};
  }
  SmallVector<Type> types;
  Location loc = im.loc(suffix);
  if (failed(tg::SelectOp::inferReturnTypes(
          im.builder.getContext(), loc,
          tg::SelectOp::Adaptor(ValueRange{cond, onTrue, onFalse}), types)))
    return {};
  return tg::SelectOp::create(im.builder, loc, types.front(), cond, onTrue,
                              onFalse);
}

/// A boolean constant.
Value boolean(Importer &im, bool value, StringRef suffix) {
  return im.constant(Known::ints({value}, {}, DataType::Bool), suffix);
}

template <tg::ComparePredicate P> LogicalResult convertCompare(Importer &im) {
  FailureOr<Value> lhs = im.value(0), rhs = im.value(1);
  if (failed(lhs) || failed(rhs))
    return failure();
  return defineResult(im, compare(im, P, *lhs, *rhs), DataType::Bool);
}

/// Boolean inputs `a` and `b`.
LogicalResult booleanInputs(Importer &im, Value &a, Value &b) {
  for (unsigned k = 0; k < im.numInputs(); ++k) {
    FailureOr<Value> v = im.value(k);
    if (failed(v))
      return failure();
    if (!tensorType(*v).getElementType().isInteger(1)) {
      im.error() << "input #" << k << " must be a boolean tensor";
      return failure();
    }
    (k == 0 ? a : b) = *v;
  }
  return success();
}

/// And(a, b) = select(a, b, false); Or(a, b) = select(a, true, b);
/// Xor(a, b) = a != b; Not(a) = a == false.
LogicalResult convertLogic(Importer &im) {
  Value a, b;
  if (failed(booleanInputs(im, a, b)))
    return failure();
  StringRef op = im.node().opType;
  Value result;
  if (op == "Not")
    result = compare(im, tg::ComparePredicate::eq, a,
                     boolean(im, false, "false"));
  else if (op == "Xor")
    result = compare(im, tg::ComparePredicate::ne, a, b);
  else if (op == "And")
    result = select(im, a, b, boolean(im, false, "false"));
  else
    result = select(im, a, boolean(im, true, "true"), b);
  return defineResult(im, result, DataType::Bool);
}

/// IsNaN(x) = x != x (the NaN guard of exported scaled dot-product
/// attention).
LogicalResult convertIsNaN(Importer &im) {
  FailureOr<Value> x = floatInput(im, 0);
  if (failed(x))
    return failure();
  return defineResult(im, compare(im, tg::ComparePredicate::ne, *x, *x),
                      DataType::Bool);
}

LogicalResult convertWhere(Importer &im) {
  FailureOr<Value> cond = im.value(0), x = im.value(1), y = im.value(2);
  if (failed(cond) || failed(x) || failed(y))
    return failure();
  return defineResult(im, select(im, *cond, *x, *y), im.inputType(1));
}

/// GatherElements of known data by known indices (the token-type and
/// position buffers of exported transformers); runtime tensors are not
/// supported yet.
/// GatherElements of known data that does not vary along the axis (RoBERTa
/// gathers its all-zero token-type buffer with runtime position ids): the
/// result does not depend on the indices, only on their shape.
LogicalResult gatherUniformElements(Importer &im, const Known &data,
                                    int64_t axis) {
  FailureOr<Value> indices = im.value(1);
  if (failed(indices))
    return failure();
  std::vector<int64_t> dims(tensorType(*indices).getShape());
  int64_t rank = data.dims.size();
  if (axis < -rank || axis >= rank || int64_t(dims.size()) != rank) {
    im.error() << "the axis or the indices' rank does not fit the data";
    return failure();
  }
  if (axis < 0)
    axis += rank;
  std::vector<int64_t> strides(rank, 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * data.dims[d + 1];
  for (int64_t d = 0; d < rank; ++d)
    if (d != axis && dims[d] > data.dims[d]) {
      im.error() << "the indices exceed the data in dimension " << d;
      return failure();
    }
  for (int64_t k = 0, n = data.size(); k < n; ++k) {
    int64_t along = (k / strides[axis]) % data.dims[axis];
    int64_t first = k - along * strides[axis];
    if (data.getFloat(k) != data.getFloat(first)) {
      im.error() << "GatherElements with runtime indices is supported where "
                    "the data is known and the same along the axis; this "
                    "data varies along it";
      return failure();
    }
  }
  Known out = Known::zeros(data.type, dims);
  std::vector<int64_t> coord(rank);
  for (int64_t k = 0, n = out.size(); k < n; ++k) {
    int64_t rest = k, at = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      coord[d] = rest % dims[d];
      rest /= dims[d];
    }
    for (int64_t d = 0; d < rank; ++d)
      at += (d == axis ? 0 : coord[d]) * strides[d];
    if (data.isFloat())
      out.set(k, data.f[at]);
    else
      out.setInt(k, data.i[at]);
  }
  im.define(0, std::move(out));
  return success();
}

LogicalResult convertGatherElements(Importer &im) {
  const Known *data = im.known(0), *indices = im.known(1);
  if (data && !indices)
    return gatherUniformElements(im, *data, im.attrInt("axis", 0));
  if (!data || !indices) {
    im.error() << "GatherElements is supported on data known while "
                  "importing (constants and shapes)";
    return failure();
  }
  int64_t rank = data->dims.size();
  int64_t axis = im.attrInt("axis", 0);
  if (axis < -rank || axis >= rank ||
      indices->dims.size() != data->dims.size()) {
    im.error() << "the axis or the indices' rank does not fit the data";
    return failure();
  }
  if (axis < 0)
    axis += rank;
  Known out = Known::zeros(data->type, indices->dims);
  std::vector<int64_t> dataStrides(rank, 1), coord(rank, 0);
  for (int64_t d = rank - 2; d >= 0; --d)
    dataStrides[d] = dataStrides[d + 1] * data->dims[d + 1];
  for (int64_t k = 0, n = indices->size(); k < n; ++k) {
    int64_t rest = k, at = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      coord[d] = rest % indices->dims[d];
      rest /= indices->dims[d];
    }
    for (int64_t d = 0; d < rank; ++d) {
      int64_t c = coord[d];
      if (d == axis) {
        c = indices->getInt(k);
        if (c < 0)
          c += data->dims[d];
      }
      if (c < 0 || c >= data->dims[d]) {
        im.error() << "index " << indices->getInt(k) << " is out of range "
                   << "for a dimension of " << data->dims[d];
        return failure();
      }
      at += c * dataStrides[d];
    }
    if (data->isFloat())
      out.set(k, data->f[at]);
    else
      out.setInt(k, data->i[at]);
  }
  im.define(0, std::move(out));
  return success();
}

/// Trilu of a known tensor (the causal masks some exporters build from a
/// constant of ones): keeps the elements on and above (upper) or on and
/// below (lower) the k-th diagonal of the last two dimensions.
LogicalResult convertTrilu(Importer &im) {
  const Known *in = im.known(0);
  if (!in) {
    im.error() << "Trilu is supported on values known while importing "
                  "(constants and shapes)";
    return failure();
  }
  int64_t rank = in->dims.size();
  if (rank < 2) {
    im.error() << "Trilu needs a tensor of rank 2 or more";
    return failure();
  }
  int64_t k = 0;
  if (im.hasInput(1)) {
    FailureOr<const Known *> diagonal = im.requireKnown(1, "k");
    if (failed(diagonal))
      return failure();
    if ((*diagonal)->size() != 1) {
      im.error() << "Trilu's k must be a scalar";
      return failure();
    }
    k = (*diagonal)->getInt(0);
  }
  bool upper = im.attrInt("upper", 1) != 0;
  int64_t rows = in->dims[rank - 2], cols = in->dims[rank - 1];
  Known out = *in;
  for (int64_t e = 0, n = out.size(); e < n; ++e) {
    int64_t j = e % cols, i = (e / cols) % rows;
    bool keep = upper ? j - i >= k : j - i <= k;
    if (!keep)
      out.isFloat() ? out.set(e, 0.0) : out.setInt(e, 0);
  }
  im.define(0, std::move(out));
  return success();
}

/// Tile: a known tensor is repeated while importing; a runtime one becomes
/// reshape [1, d0, 1, d1, ...], broadcast to [r0, d0, r1, d1, ...] and
/// reshape to [r0 d0, r1 d1, ...] (copy-major order, as Tile's).
LogicalResult convertTile(Importer &im) {
  FailureOr<const Known *> repeats = im.requireKnown(1, "the repeats");
  if (failed(repeats))
    return failure();
  std::vector<int64_t> in = im.shape(0), r = (*repeats)->toInts();
  if (r.size() != in.size()) {
    im.error() << "Tile needs one repeat count per dimension (" << in.size()
               << "), got " << r.size();
    return failure();
  }
  std::vector<int64_t> interleaved, spread, out;
  for (size_t d = 0; d < in.size(); ++d) {
    if (r[d] < 1) {
      im.error() << "repeat count " << r[d] << " of dimension " << d
                 << " must be positive (tg tensors have no zero-size "
                    "dimensions)";
      return failure();
    }
    interleaved.insert(interleaved.end(), {1, in[d]});
    spread.insert(spread.end(), {r[d], in[d]});
    out.push_back(product({r[d], in[d]}));
  }
  if (product(out) > (int64_t(1) << 40)) {
    im.error() << "the tiled tensor is too large";
    return failure();
  }
  if (const Known *k = im.known(0)) {
    if (product(out) > kMaxFoldedElements) {
      im.error() << "the result is too large to evaluate while importing";
      return failure();
    }
    Known spreadOut = broadcastKnown(reshapeKnown(*k, interleaved), spread);
    im.define(0, reshapeKnown(spreadOut, out));
    return success();
  }
  FailureOr<Value> v = im.value(0);
  if (failed(v))
    return failure();
  Value x = reshape(im, *v, interleaved, "interleave");
  x = tg::BroadcastToOp::create(im.builder, im.loc("repeat"),
                                tensorType(x).clone(spread), x);
  return defineResult(im, reshape(im, x, out));
}

/// Pad in constant mode: slices for negative pads, and a concatenation
/// with constant blocks for positive ones, one axis at a time.
/// Reflect pads are one slice per element: a bound on the ops they make.
constexpr int64_t kMaxReflectPad = 64;

LogicalResult convertPad(Importer &im) {
  std::string mode = im.attrString("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect" &&
      mode != "wrap") {
    im.error() << "Pad mode '" << mode << "' is not one of constant, edge, "
                  "reflect and wrap";
    return failure();
  }
  std::vector<int64_t> in = im.shape(0), pads;
  double value = 0;
  int64_t rank = in.size();
  std::vector<int64_t> axes(rank);
  std::iota(axes.begin(), axes.end(), 0);
  if (im.opset() < 11) {
    pads = im.attrInts("pads").value_or(std::vector<int64_t>{});
    value = im.attrFloat("value", 0.0);
  } else {
    FailureOr<const Known *> p = im.requireKnown(1, "the pads");
    if (failed(p))
      return failure();
    pads = (*p)->toInts();
    if (im.hasInput(2)) {
      FailureOr<const Known *> c = im.requireKnown(2, "the constant value");
      if (failed(c))
        return failure();
      if ((*c)->size() != 1) {
        im.error() << "the constant value must be a scalar";
        return failure();
      }
      value = (*c)->getFloat(0);
    }
    if (im.hasInput(3)) {
      FailureOr<const Known *> a = im.requireKnown(3, "the axes");
      if (failed(a))
        return failure();
      axes = (*a)->toInts();
      for (int64_t &axis : axes) {
        FailureOr<int64_t> n = normaliseAxis(im, axis, rank);
        if (failed(n))
          return failure();
        axis = *n;
      }
    }
  }
  if (pads.size() != 2 * axes.size()) {
    im.error() << "Pad needs " << 2 * axes.size() << " pads, got "
               << pads.size();
    return failure();
  }
  FailureOr<Value> v = im.value(0);
  if (failed(v))
    return failure();
  Value x = *v;
  Type element = tensorType(x).getElementType();
  for (size_t k = 0; k < axes.size(); ++k) {
    int64_t axis = axes[k], before = pads[k], after = pads[k + axes.size()];
    std::vector<int64_t> dims(tensorType(x).getShape());
    std::string name = "axis" + std::to_string(axis);
    // Negative pads crop.
    if (before < 0 || after < 0) {
      int64_t drop = std::max<int64_t>(0, -before) +
                     std::max<int64_t>(0, -after);
      if (drop >= dims[axis]) {
        im.error() << "the pads remove every element of dimension " << axis;
        return failure();
      }
      std::vector<int64_t> offsets(rank, 0), sizes = dims, steps(rank, 1);
      offsets[axis] = std::max<int64_t>(0, -before);
      sizes[axis] = dims[axis] - drop;
      x = slice(im, x, offsets, sizes, steps, name + ".crop");
      dims = sizes;
    }
    SmallVector<Value> parts;
    // `n` elements of x along the axis from `offset` (one slice).
    auto piece = [&](int64_t offset, int64_t n, const Twine &suffix) {
      std::vector<int64_t> offsets(rank, 0), sizes = dims, steps(rank, 1);
      offsets[axis] = offset;
      sizes[axis] = n;
      return slice(im, x, offsets, sizes, steps, (name + "." + suffix).str());
    };
    auto block = [&](int64_t n, StringRef side) -> Value {
      std::vector<int64_t> shape = dims;
      shape[axis] = n;
      auto type = RankedTensorType::get(shape, element);
      bool before = side == "before";
      int64_t size = dims[axis];
      if (mode == "edge") {
        // The first or last element, repeated.
        Value edge = piece(before ? 0 : size - 1, 1, side + ".edge");
        return tg::BroadcastToOp::create(im.builder,
                                         im.loc(name + "." + side.str()),
                                         type, edge);
      }
      if (mode == "wrap")
        return piece(before ? size - n : 0, n, side);
      if (mode == "reflect") {
        // x[n], ..., x[1] before; x[size - 2], ..., x[size - 1 - n] after:
        // one slice per element, in mirrored order.
        SmallVector<Value> mirrored;
        for (int64_t j = 0; j < n; ++j)
          mirrored.push_back(piece(before ? n - j : size - 2 - j, 1,
                                   side + "." + Twine(j)));
        if (mirrored.size() == 1)
          return mirrored.front();
        return tg::ConcatOp::create(im.builder,
                                    im.loc(name + "." + side.str()), type,
                                    mirrored,
                                    im.builder.getI64IntegerAttr(axis));
      }
      mlir::Attribute fill = isa<FloatType>(element)
                           ? mlir::Attribute(im.builder.getFloatAttr(element, value))
                           : mlir::Attribute(im.builder.getIntegerAttr(
                                 element, saturatingInt(value)));
      return tg::ConstantOp::create(im.builder, im.loc(name + "." + side.str()),
                                    type, DenseElementsAttr::get(type, fill));
    };
    int64_t limit = mode == "reflect" ? dims[axis] - 1 : dims[axis];
    if (mode != "constant" && std::max(before, after) > limit) {
      im.error() << "Pad mode '" << mode << "' pads dimension " << axis
                 << " (of size " << dims[axis] << ") by "
                 << std::max(before, after) << "; at most " << limit
                 << " are defined";
      return failure();
    }
    if (mode == "reflect" && kMaxReflectPad < std::max(before, after)) {
      im.error() << "reflect pads of more than " << kMaxReflectPad
                 << " elements are not supported (one slice per element)";
      return failure();
    }
    if (before > 0)
      parts.push_back(block(before, "before"));
    parts.push_back(x);
    if (after > 0)
      parts.push_back(block(after, "after"));
    if (parts.size() == 1)
      continue;
    dims[axis] += std::max<int64_t>(0, before) + std::max<int64_t>(0, after);
    x = tg::ConcatOp::create(im.builder, im.loc(name),
                             tensorType(x).clone(dims), parts,
                             im.builder.getI64IntegerAttr(axis));
  }
  return defineResult(im, x);
}

//===----------------------------------------------------------------------===//
// Losses with ignored positions and class weights
//===----------------------------------------------------------------------===//

/// The sum of `v` over `axes`, those dimensions removed.
Value sumOver(Importer &im, Value v, ArrayRef<int64_t> axes,
              StringRef suffix) {
  RankedTensorType type = tensorType(v);
  SmallVector<int64_t> kept;
  for (int64_t d = 0; d < type.getRank(); ++d)
    if (!llvm::is_contained(axes, d))
      kept.push_back(type.getDimSize(d));
  return tg::ReduceSumOp::create(im.builder, im.loc(suffix), type.clone(kept),
                                 v, im.builder.getDenseI64ArrayAttr(axes),
                                 nullptr, nullptr);
}

/// 1 where `labels` is in [0, classes), else 0, in `element`.
Value labelledMask(Importer &im, Value labels, int64_t classes,
                   Type element) {
  auto bound = [&](tg::ComparePredicate p, int64_t b, StringRef name) {
    Value c = compare(
        im, p, labels,
        im.constant(Known::ints({b}, {}, im.inputType(1)), name), name);
    return c ? convertTo(im, c, element, name) : Value();
  };
  Value lo = bound(tg::ComparePredicate::ge, 0, "labelled_lo");
  Value hi = bound(tg::ComparePredicate::lt, classes, "labelled_hi");
  return lo && hi ? binary<tg::MulOp>(im, lo, hi, "labelled") : Value();
}

/// SoftmaxCrossEntropyLoss with class weights or reduction "none", as
/// log_softmax and a one-hot mask: per position, l = -w[y] * logp[y] with
/// w[y] = 0 where y is ignored or out of range; "mean" divides the sum of l
/// by the sum of w[y] (NaN when every position is ignored, as in ONNX and
/// PyTorch).
Value weightedCrossEntropy(Importer &im, Value logits, Value labels,
                           Value weights, StringRef reduction) {
  auto lt = tensorType(labels), st = tensorType(logits);
  int64_t classes = st.getShape().back();
  Type element = st.getElementType();
  std::vector<int64_t> ids(classes);
  std::iota(ids.begin(), ids.end(), 0);
  SmallVector<int64_t> column(lt.getShape());
  column.push_back(1);
  Value oneHot = compare(
      im, tg::ComparePredicate::eq, reshape(im, labels, column, "column"),
      im.constant(Known::ints(ids, {classes}, im.inputType(1)), "classes"),
      "one_hot");
  if (!oneHot)
    return {};
  Value w = convertTo(im, oneHot, element, "one_hot_weight");
  if (weights)
    w = binary<tg::MulOp>(im, w, weights, "class_weight");
  if (!w)
    return {};
  int64_t last = st.getRank() - 1;
  Value logp = tg::LogSoftmaxOp::create(im.builder, im.loc("log_prob"), st,
                                        logits,
                                        im.builder.getI64IntegerAttr(last),
                                        nullptr);
  Value picked = binary<tg::MulOp>(im, w, logp, "picked");
  if (!picked)
    return {};
  Value perPosition = tg::NegOp::create(
      im.builder, im.loc("nll"), lt.clone(element),
      sumOver(im, picked, {last}, "picked_sum"), nullptr);
  if (reduction == "none")
    return perPosition;
  auto all = llvm::to_vector(llvm::seq<int64_t>(0, lt.getRank()));
  Value total = sumOver(im, perPosition, all, "total");
  if (reduction == "sum")
    return total;
  return binary<tg::DivOp>(im, total, sumOver(im, w, all, "weight_sum"),
                           "mean");
}

/// SoftmaxCrossEntropyLoss. Without class weights and with reduction mean
/// or sum it is one tg.softmax_cross_entropy, whose mean is over the
/// positions with a label in [0, C): an ignore_index outside that range
/// (Hugging Face's -100) needs nothing more, one inside it is moved out by a
/// select. With weights, or reduction "none", it is decomposed
/// (weightedCrossEntropy).
LogicalResult convertSoftmaxCrossEntropyLoss(Importer &im) {
  FailureOr<Value> scores = floatInput(im, 0);
  FailureOr<Value> labels = im.value(1);
  if (failed(scores) || failed(labels))
    return failure();
  Value weights;
  if (im.hasInput(2)) {
    FailureOr<Value> w = floatInput(im, 2);
    if (failed(w))
      return failure();
    weights = *w;
  }
  std::optional<int64_t> ignore;
  for (const mp::onnx::Attribute &a : im.node().attributes)
    if (a.name == "ignore_index")
      ignore = im.attrInt("ignore_index", 0);
  std::string reduction = im.attrString("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    im.error() << "reduction '" << reduction
               << "' is not one of mean, sum and none";
    return failure();
  }
  auto st = tensorType(*scores), lt = tensorType(*labels);
  if (!isa<IntegerType>(lt.getElementType()) || st.getRank() < 2 ||
      lt.getRank() != st.getRank() - 1 ||
      lt.getShape()[0] != st.getShape()[0] ||
      lt.getShape().drop_front() != st.getShape().drop_front(2)) {
    im.error() << "needs scores [N, C, ...] and integer labels [N, ...], got "
               << st << " and " << lt;
    return failure();
  }
  int64_t classes = st.getDimSize(1);
  Type element = st.getElementType();
  if (weights &&
      (tensorType(weights).getShape() != ArrayRef<int64_t>{classes} ||
       tensorType(weights).getElementType() != element)) {
    im.error() << "needs class weights of type " << st.clone({classes})
               << ", got " << tensorType(weights);
    return failure();
  }
  // Classes last, as tg.softmax_cross_entropy takes them.
  SmallVector<int64_t> perm{0};
  for (int64_t d = 2; d < st.getRank(); ++d)
    perm.push_back(d);
  perm.push_back(1);
  Value logits = transpose(im, *scores, perm, "classes_last");
  Value y = *labels;
  if (ignore && *ignore >= 0 && *ignore < classes) {
    Value ignored = im.constant(Known::ints({*ignore}, {}, im.inputType(1)),
                                "ignore_index");
    Value none = im.constant(Known::ints({-1}, {}, im.inputType(1)),
                             "no_class");
    y = select(im, compare(im, tg::ComparePredicate::eq, y, ignored, "ignored"),
               none, y, "labels");
    if (!y)
      return failure();
  }
  Value loss;
  if (weights || reduction == "none") {
    loss = weightedCrossEntropy(im, logits, y, weights, reduction);
    if (!loss)
      return failure();
  } else {
    Type lossElement = element.isF64() ? element : im.builder.getF32Type();
    loss = tg::SoftmaxCrossEntropyOp::create(
        im.builder, im.loc(), RankedTensorType::get({}, lossElement), logits,
        y, nullptr);
    if (reduction == "sum" && !ignore) {
      loss = scaleBy(im, loss, double(lt.getNumElements()), "sum");
    } else if (reduction == "sum") {
      // The mean times the number of labelled positions.
      Value labelled = labelledMask(im, y, classes, lossElement);
      if (!labelled)
        return failure();
      auto all = llvm::to_vector(llvm::seq<int64_t>(0, lt.getRank()));
      loss = binary<tg::MulOp>(im, loss,
                               sumOver(im, labelled, all, "labelled_count"),
                               "sum");
    }
    if (lossElement != element)
      loss = tg::CastOp::create(im.builder, im.loc("cast"),
                                RankedTensorType::get({}, element), loss);
  }
  im.define(0, loss, im.inputType(0));
  im.lossValues.insert(im.node().outputs[0]);
  if (im.isOutputUsed(1))
    im.define(1,
              tg::LogSoftmaxOp::create(im.builder, im.loc("log_prob"), st,
                                       *scores,
                                       im.builder.getI64IntegerAttr(1),
                                       nullptr),
              im.inputType(0));
  return success();
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

/// The subscripts of one operand with "..." expanded to `rank` letters (the
/// ellipsis' dimensions get upper-case letters, counted from the right, so
/// that operands of different ranks line up as in numpy), or an error.
FailureOr<std::string> expandEllipsis(Importer &im, StringRef subscripts,
                                      int64_t rank, int64_t &ellipsisRank) {
  size_t dots = subscripts.find("...");
  std::string out;
  if (dots == StringRef::npos) {
    out = subscripts.str();
  } else {
    int64_t named = int64_t(subscripts.size()) - 3;
    int64_t spread = rank - named;
    if (spread < 0 || spread > 26) {
      im.error() << "the subscripts '" << subscripts
                 << "' do not fit an operand of rank " << rank;
      return failure();
    }
    ellipsisRank = std::max(ellipsisRank, spread);
    out = subscripts.take_front(dots).str();
    for (int64_t k = spread; k > 0; --k)
      out.push_back(char('Z' - (k - 1)));
    out += subscripts.drop_front(dots + 3).str();
  }
  for (char ch : out)
    if (!llvm::isAlpha(ch)) {
      im.error() << "unexpected character '" << ch << "' in the subscripts '"
                 << subscripts << "'";
      return failure();
    }
  if (int64_t(out.size()) != rank) {
    im.error() << "the subscripts '" << subscripts << "' name "
               << out.size() << " dimensions of an operand of rank " << rank;
    return failure();
  }
  if (llvm::SmallSet<char, 8> seen; llvm::any_of(out, [&](char ch) {
        return !seen.insert(ch).second;
      })) {
    im.error() << "repeated subscripts within an operand (diagonals, '"
               << subscripts << "') are not supported";
    return failure();
  }
  return out;
}

/// `v` (subscripts `from`) with the dimensions that are not in `keep`
/// summed out.
Value sumNotIn(Importer &im, Value v, std::string &from, StringRef keep,
               StringRef suffix) {
  SmallVector<int64_t> axes;
  std::string kept;
  for (auto [d, ch] : llvm::enumerate(from)) {
    if (keep.contains(ch))
      kept.push_back(ch);
    else
      axes.push_back(d);
  }
  if (axes.empty())
    return v;
  from = kept;
  return sumOver(im, v, axes, suffix);
}

/// `v` (subscripts `from`) transposed to the order of `to`.
Value permuteTo(Importer &im, Value v, StringRef from, StringRef to,
                StringRef suffix) {
  SmallVector<int64_t> perm;
  for (char ch : to)
    perm.push_back(from.find(ch));
  return transpose(im, v, perm, suffix);
}

/// Einsum of one or two operands without repeated subscripts within an
/// operand: sums, transposes, and one batched tg.matmul for a pair (the
/// shared subscripts of the output are the batch, the shared others are
/// contracted); what a subscript names must have one size everywhere.
LogicalResult convertEinsum(Importer &im) {
  std::string equation = im.attrString("equation", "");
  equation.erase(llvm::remove_if(equation, ::isspace), equation.end());
  auto [lhsText, outText] = StringRef(equation).split("->");
  SmallVector<StringRef> operandText;
  lhsText.split(operandText, ',');
  if (operandText.size() != im.numInputs() || im.numInputs() > 2) {
    im.error() << "Einsum '" << equation << "' is supported with one or two "
               << "operands";
    return failure();
  }
  std::string implicit;
  if (!StringRef(equation).contains("->")) {
    // numpy's implicit output: the ellipsis, then the subscripts named once,
    // in alphabetical order.
    std::map<char, int> counts;
    for (char ch : lhsText)
      if (llvm::isAlpha(ch))
        ++counts[ch];
    implicit = lhsText.contains("...") ? "..." : "";
    for (auto [ch, count] : counts)
      if (count == 1)
        implicit.push_back(ch);
    outText = implicit;
  }
  SmallVector<Value> values;
  SmallVector<std::string> subs;
  int64_t ellipsisRank = 0;
  llvm::DenseMap<char, int64_t> sizes;
  for (unsigned k = 0; k < im.numInputs(); ++k) {
    FailureOr<Value> v = floatInput(im, k);
    if (failed(v))
      return failure();
    ArrayRef<int64_t> shape = tensorType(*v).getShape();
    FailureOr<std::string> s =
        expandEllipsis(im, operandText[k], shape.size(), ellipsisRank);
    if (failed(s))
      return failure();
    for (auto [d, ch] : llvm::enumerate(*s)) {
      auto [it, fresh] = sizes.insert({ch, shape[d]});
      if (!fresh && it->second != shape[d]) {
        im.error() << "subscript '" << ch << "' names sizes " << it->second
                   << " and " << shape[d]
                   << " (broadcasting in Einsum is not supported)";
        return failure();
      }
    }
    values.push_back(*v);
    subs.push_back(*s);
  }
  std::string out;
  if (StringRef(outText).contains("...")) {
    std::string pattern = outText.str();
    size_t dots = pattern.find("...");
    out = pattern.substr(0, dots);
    for (int64_t k = ellipsisRank; k > 0; --k)
      out.push_back(char('Z' - (k - 1)));
    out += pattern.substr(dots + 3);
  } else {
    out = outText.str();
  }
  llvm::SmallSet<char, 8> seen;
  for (char ch : out)
    if (!sizes.count(ch) || !seen.insert(ch).second) {
      im.error() << "output subscript '" << ch << "' names no operand's "
                 << "dimension, or is repeated";
      return failure();
    }
  Value a = values[0];
  std::string &sa = subs[0];
  if (values.size() == 1) {
    a = sumNotIn(im, a, sa, out, "sum");
    return defineResult(im, permuteTo(im, a, sa, out, "transpose"));
  }
  Value b = values[1];
  std::string &sb = subs[1];
  if (tensorType(a).getElementType() != tensorType(b).getElementType()) {
    im.error() << "operands of different element types";
    return failure();
  }
  // Subscripts only one operand has, and the output not, are summed there.
  a = sumNotIn(im, a, sa, out + sb, "lhs_sum");
  b = sumNotIn(im, b, sb, out + sa, "rhs_sum");
  std::string batch, left, right, contracted;
  for (char ch : sa) {
    bool inB = sb.find(ch) != std::string::npos;
    bool inOut = out.find(ch) != std::string::npos;
    (inB ? (inOut ? batch : contracted) : left).push_back(ch);
  }
  for (char ch : sb)
    if (sa.find(ch) == std::string::npos)
      right.push_back(ch);
  auto product = [&](StringRef chars) {
    int64_t p = 1;
    for (char ch : chars)
      p *= sizes[ch];
    return p;
  };
  int64_t nb = product(batch), m = product(left), n = product(right),
          kk = product(contracted);
  a = reshape(im, permuteTo(im, a, sa, batch + left + contracted, "lhs_t"),
              {nb, m, kk}, "lhs");
  b = reshape(im, permuteTo(im, b, sb, batch + contracted + right, "rhs_t"),
              {nb, kk, n}, "rhs");
  auto type = tensorType(a).clone({nb, m, n});
  Value y = tg::MatmulOp::create(im.builder, im.loc("matmul"), type, a, b,
                                 UnitAttr(), UnitAttr(), nullptr);
  std::string have = batch + left + right;
  SmallVector<int64_t> dims;
  for (char ch : have)
    dims.push_back(sizes[ch]);
  y = reshape(im, y, dims, "unflatten");
  return defineResult(im, permuteTo(im, y, have, out, ""));
}

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

/// RandomUniform and RandomUniformLike: tg.random_uniform from the seed
/// state the dropouts share, on a stream of its own, so that every step
/// draws new numbers and the backends draw the same ones. The `seed`
/// attribute is ignored (it would fix the numbers of every step).
LogicalResult convertRandomUniform(Importer &im) {
  bool like = im.node().opType == "RandomUniformLike";
  std::vector<int64_t> shape;
  DataType type = DataType::Float;
  if (like) {
    shape = im.shape(0);
    type = im.inputType(0);
  } else {
    std::optional<std::vector<int64_t>> s = im.attrInts("shape");
    if (!s) {
      im.error() << "RandomUniform needs a shape";
      return failure();
    }
    shape = *s;
  }
  type = DataType(im.attrInt("dtype", int64_t(type)));
  FailureOr<Type> element = im.elementType(type);
  if (failed(element))
    return failure();
  if (!isa<FloatType>(*element)) {
    im.error() << "draws " << dataTypeName(type)
               << " numbers; tg draws floating-point ones";
    return failure();
  }
  if (llvm::any_of(shape, [](int64_t d) { return d < 1; })) {
    im.error() << "the shape must be static and positive";
    return failure();
  }
  double low = im.attrFloat("low", 0.0), high = im.attrFloat("high", 1.0);
  if (!std::isfinite(low) || !std::isfinite(high) || !(low <= high)) {
    im.error() << "needs finite bounds with low <= high, got [" << low << ", "
               << high << ")";
    return failure();
  }
  Value seed = im.dropoutSeed();
  if (!seed)
    return failure();
  Value u = tg::RandomUniformOp::create(
      im.builder, im.loc(), RankedTensorType::get(shape, *element), seed,
      im.builder.getI64IntegerAttr(im.nextDropoutStream()),
      im.builder.getF64FloatAttr(low), im.builder.getF64FloatAttr(high));
  return defineResult(im, u, type);
}

//===----------------------------------------------------------------------===//
// Mod on runtime values
//===----------------------------------------------------------------------===//

/// Mod: with fmod=1, a - b * trunc(a / b) (the sign of a, C's fmod); with
/// fmod=0 (integers only, as ONNX allows), the sign of b, as Python's %.
/// Integers compute in f64 (exact below 2^53) and convert back; trunc is a
/// conversion to i64 and back, so quotients beyond 2^63 saturate.
LogicalResult convertMod(Importer &im) {
  FailureOr<Value> a = im.value(0), b = im.value(1);
  if (failed(a) || failed(b))
    return failure();
  Type element = tensorType(*a).getElementType();
  if (tensorType(*b).getElementType() != element || element.isInteger(1)) {
    im.error() << "needs two numeric operands of one element type, got "
               << tensorType(*a).getElementType() << " and "
               << tensorType(*b).getElementType();
    return failure();
  }
  bool integer = isa<IntegerType>(element);
  bool fmod = im.attrInt("fmod", 0) != 0;
  if (!integer && !fmod) {
    im.error() << "floating-point Mod needs fmod=1 (the ONNX rule)";
    return failure();
  }
  Type t = integer ? im.builder.getF64Type() : element;
  Value x = convertTo(im, *a, t, "a"), y = convertTo(im, *b, t, "b");
  Value q = binary<tg::DivOp>(im, x, y, "quotient");
  if (!q)
    return failure();
  Value truncated =
      convertTo(im, convertTo(im, q, im.builder.getI64Type(), "trunc_i64"), t,
                "trunc");
  Value r = binary<tg::SubOp>(im, x, binary<tg::MulOp>(im, y, truncated,
                                                       "multiple"),
                              "fmod");
  if (!r)
    return failure();
  if (!fmod) {
    // Where the remainder is non-zero and its sign differs from b's, add b.
    Value zero = im.scalar(t, 0.0, "zero");
    Value nonzero = compare(im, tg::ComparePredicate::ne, r, zero, "nonzero");
    Value differ = compare(
        im, tg::ComparePredicate::ne,
        compare(im, tg::ComparePredicate::lt, r, zero, "r_negative"),
        compare(im, tg::ComparePredicate::lt, y, zero, "b_negative"),
        "signs_differ");
    if (!nonzero || !differ)
      return failure();
    Value adjust = select(im, nonzero, differ, boolean(im, false, "false"),
                          "adjust");
    r = select(im, adjust, binary<tg::AddOp>(im, r, y, "shifted"), r, "mod");
    if (!r)
      return failure();
  }
  return defineResult(im, convertTo(im, r, element, ""));
}

//===----------------------------------------------------------------------===//
// Running sums
//===----------------------------------------------------------------------===//

/// CumSum along a constant axis; integer tensors are summed in f64 (exact
/// below 2^53) and converted back.
LogicalResult convertCumSum(Importer &im) {
  FailureOr<Value> x = im.value(0);
  FailureOr<const Known *> axisInput = im.requireKnown(1, "the axis");
  if (failed(x) || failed(axisInput))
    return failure();
  std::vector<int64_t> axes = (*axisInput)->toInts();
  RankedTensorType type = tensorType(*x);
  if (axes.size() != 1) {
    im.error() << "the axis must be one integer, got " << axes.size();
    return failure();
  }
  FailureOr<int64_t> axis = normaliseAxis(im, axes[0], type.getRank());
  if (failed(axis))
    return failure();
  Type element = type.getElementType();
  bool integer = isa<IntegerType>(element);
  if (element.isInteger(1)) {
    im.error() << "input #0 is a boolean tensor; CumSum sums numbers";
    return failure();
  }
  Value in = integer ? convertTo(im, *x, im.builder.getF64Type(), "f64") : *x;
  UnitAttr unit = im.builder.getUnitAttr();
  Value y = tg::CumSumOp::create(
      im.builder, im.loc(integer ? "f64_sum" : ""), in.getType(), in,
      im.builder.getI64IntegerAttr(*axis),
      im.attrInt("exclusive", 0) ? unit : UnitAttr(),
      im.attrInt("reverse", 0) ? unit : UnitAttr(), nullptr);
  return defineResult(im, convertTo(im, y, element, ""));
}

} // namespace

const llvm::StringMap<Converter> &mp::onnx::getConverters() {
  static const llvm::StringMap<Converter> converters = {
      {"Add", convertBinary<tg::AddOp>},
      {"Sub", convertBinary<tg::SubOp>},
      {"Mul", convertBinary<tg::MulOp>},
      {"Div", convertBinary<tg::DivOp>},
      {"Max", convertVariadic<tg::MaximumOp>},
      {"Min", convertVariadic<tg::MinimumOp>},
      {"Sum", convertVariadic<tg::AddOp>},
      {"Mean", convertVariadic<tg::AddOp>},
      {"Pow", convertPow},
      {"Relu", convertUnary<tg::ReluOp>},
      {"LeakyRelu", convertLeakyRelu},
      {"Tanh", convertUnary<tg::TanhOp>},
      {"Sigmoid", convertUnary<tg::SigmoidOp>},
      {"Exp", convertUnary<tg::ExpOp>},
      {"Log", convertUnary<tg::LogOp>},
      {"Sqrt", convertUnary<tg::SqrtOp>},
      {"Neg", convertUnary<tg::NegOp>},
      {"Erf", convertUnary<tg::ErfOp>},
      {"Sin", convertUnary<tg::SinOp>},
      {"CumSum", convertCumSum},
      {"Mod", convertMod},
      {"RandomUniform", convertRandomUniform},
      {"RandomUniformLike", convertRandomUniform},
      {"Einsum", convertEinsum},
      {"Cos", convertUnary<tg::CosOp>},
      {"Reciprocal", convertReciprocal},
      {"MatMul", convertMatMul},
      {"Gemm", convertGemm},
      {"Softmax", convertSoftmax<tg::SoftmaxOp>},
      {"LogSoftmax", convertSoftmax<tg::LogSoftmaxOp>},
      {"LayerNormalization", convertLayerNormalization},
      {"Conv", convertConv},
      {"MaxPool", convertPool<true>},
      {"AveragePool", convertPool<false>},
      {"GlobalAveragePool", convertGlobalPool<tg::ReduceMeanOp>},
      {"GlobalMaxPool", convertGlobalPool<tg::ReduceMaxOp>},
      {"BatchNormalization", convertBatchNormalization},
      {"ReduceMean", convertReduce<tg::ReduceMeanOp>},
      {"ReduceSum", convertReduce<tg::ReduceSumOp>},
      {"ReduceMax", convertReduce<tg::ReduceMaxOp>},
      {"Reshape", convertReshape},
      {"Flatten", convertFlatten},
      {"Squeeze", convertSqueeze},
      {"Unsqueeze", convertUnsqueeze},
      {"Transpose", convertTranspose},
      {"Concat", convertConcat},
      {"Slice", convertSlice},
      {"Split", convertSplit},
      {"Gather", convertGather},
      {"Expand", convertExpand},
      {"Identity", convertIdentity},
      {"Dropout", convertDropout},
      {"Constant", convertConstant},
      {"Cast", convertCast},
      {"CastLike", convertCastLike},
      {"Shape", convertShape},
      {"Size", convertSize},
      {"ConstantOfShape", convertConstantOfShape},
      {"Range", convertRange},
      {"SoftmaxCrossEntropyLoss", convertSoftmaxCrossEntropyLoss},
      {"Clip", convertClip},
      {"HardSigmoid", convertHardSigmoid},
      {"HardSwish", convertHardSwish},
      {"Abs", convertAbs},
      {"Softplus", convertSoftplus},
      {"Equal", convertCompare<tg::ComparePredicate::eq>},
      {"Less", convertCompare<tg::ComparePredicate::lt>},
      {"LessOrEqual", convertCompare<tg::ComparePredicate::le>},
      {"Greater", convertCompare<tg::ComparePredicate::gt>},
      {"GreaterOrEqual", convertCompare<tg::ComparePredicate::ge>},
      {"And", convertLogic},
      {"Or", convertLogic},
      {"Xor", convertLogic},
      {"Not", convertLogic},
      {"Where", convertWhere},
      {"IsNaN", convertIsNaN},
      {"GatherElements", convertGatherElements},
      {"Trilu", convertTrilu},
      {"Tile", convertTile},
      {"Pad", convertPad},
  };
  return converters;
}

bool mp::onnx::isConstantOperand(StringRef opType, unsigned input) {
  if (input == 0)
    return opType == "ConstantOfShape" || opType == "Range";
  return llvm::StringSwitch<bool>(opType)
      .Cases({"Reshape", "Expand", "Unsqueeze", "Squeeze", "Split", "Pow",
              "ReduceMean", "ReduceSum", "ReduceMax", "Range", "Tile"},
             true)
      .Cases({"Slice", "Dropout", "Clip", "Trilu", "Pad"}, true)
      .Default(false);
}
