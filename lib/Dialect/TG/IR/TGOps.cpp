//===- TGOps.cpp - tg dialect operations ----------------------------------===//
//
// Verifiers, result type inference and folders of the tg ops. Shape rules are
// free functions so that inference (which reports through an optional
// location) and verification (which reports on the op) share one definition.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/APFloat.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mp::tg;

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

bool mp::tg::isReshapeTranspose(ArrayRef<int64_t> shape,
                                ArrayRef<int64_t> perm) {
  int64_t last = -1;
  for (int64_t p : perm) {
    if (shape[p] == 1)
      continue;
    if (p < last)
      return false;
    last = p;
  }
  return true;
}

std::string mp::tg::shapeStr(ArrayRef<int64_t> dims) {
  std::string str;
  llvm::raw_string_ostream os(str);
  os << '[';
  llvm::interleaveComma(dims, os);
  os << ']';
  return str;
}

/// Ranked tensor type of `t`, or an error through `loc`.
static FailureOr<RankedTensorType> rankedOrError(std::optional<Location> loc,
                                                 Type t, StringRef what) {
  if (auto ranked = dyn_cast<RankedTensorType>(t))
    return ranked;
  return emitOptionalError(loc, what, " must be a ranked tensor, got ", t);
}

FailureOr<SmallVector<int64_t>>
mp::tg::broadcastShapes(ArrayRef<int64_t> lhs, ArrayRef<int64_t> rhs) {
  size_t rank = std::max(lhs.size(), rhs.size());
  SmallVector<int64_t> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t l = i < lhs.size() ? lhs[lhs.size() - 1 - i] : 1;
    int64_t r = i < rhs.size() ? rhs[rhs.size() - 1 - i] : 1;
    if (l == r || r == 1)
      out[rank - 1 - i] = l;
    else if (l == 1)
      out[rank - 1 - i] = r;
    else
      return failure();
  }
  return out;
}

LogicalResult mp::tg::inferBroadcastType(std::optional<Location> loc,
                                         Type lhsType, Type rhsType,
                                         SmallVectorImpl<Type> &out) {
  auto lhs = rankedOrError(loc, lhsType, "lhs");
  auto rhs = rankedOrError(loc, rhsType, "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  auto shape = broadcastShapes(lhs->getShape(), rhs->getShape());
  if (failed(shape))
    return emitOptionalError(loc, "operand shapes ",
                             shapeStr(lhs->getShape()), " and ",
                             shapeStr(rhs->getShape()),
                             " are not broadcast-compatible");
  out.push_back(RankedTensorType::get(*shape, lhs->getElementType()));
  return success();
}

/// Checks that `axes` is strictly increasing and inside [0, rank).
static LogicalResult checkAxes(std::optional<Location> loc,
                               ArrayRef<int64_t> axes, int64_t rank) {
  for (auto [i, axis] : llvm::enumerate(axes)) {
    if (axis < 0 || axis >= rank)
      return emitOptionalError(loc, "axes[", i, "] = ", axis,
                               " is out of range for rank ", rank);
    if (i > 0 && axis <= axes[i - 1])
      return emitOptionalError(loc, "axes must be strictly increasing, got ",
                               shapeStr(axes));
  }
  return success();
}

LogicalResult mp::tg::inferReduceType(std::optional<Location> loc,
                                      RankedTensorType input,
                                      ArrayRef<int64_t> axes, bool keepDims,
                                      SmallVectorImpl<Type> &out) {
  if (!input)
    return emitOptionalError(loc, "input must be a ranked tensor");
  if (failed(checkAxes(loc, axes, input.getRank())))
    return failure();
  SmallVector<int64_t> shape;
  for (auto [dim, size] : llvm::enumerate(input.getShape())) {
    bool reduced = llvm::is_contained(axes, static_cast<int64_t>(dim));
    if (!reduced)
      shape.push_back(size);
    else if (keepDims)
      shape.push_back(1);
  }
  out.push_back(RankedTensorType::get(shape, input.getElementType()));
  return success();
}

bool mp::tg::haveSameShapes(TypeRange lhs, TypeRange rhs) {
  if (lhs.size() != rhs.size())
    return false;
  for (auto [l, r] : llvm::zip(lhs, rhs)) {
    auto lt = dyn_cast<RankedTensorType>(l);
    auto rt = dyn_cast<RankedTensorType>(r);
    if (!lt || !rt || lt.getShape() != rt.getShape())
      return false;
  }
  return true;
}

LogicalResult mp::tg::verifyAxis(Operation *op, StringRef name, int64_t axis,
                                 int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError() << "attribute '" << name << "' = " << axis
                             << " is out of range for rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

/// The result shape of a matmul of `lhsType` and `rhsType` (with their
/// transposes), or failure with a diagnostic at `loc`.
static FailureOr<SmallVector<int64_t>>
matmulShape(std::optional<Location> loc, Type lhsType, Type rhsType,
            bool transposeLhs, bool transposeRhs) {
  auto lhs = rankedOrError(loc, lhsType, "lhs");
  auto rhs = rankedOrError(loc, rhsType, "rhs");
  if (failed(lhs) || failed(rhs))
    return failure();
  int64_t lr = lhs->getRank(), rr = rhs->getRank();
  if (lr < 2)
    return emitOptionalError(loc, "lhs must have rank >= 2, got rank ", lr);
  if (rr < 2)
    return emitOptionalError(loc, "rhs must have rank >= 2, got rank ", rr);
  ArrayRef<int64_t> ls = lhs->getShape(), rs = rhs->getShape();
  int64_t m = ls[lr - 2], k = ls[lr - 1];
  if (transposeLhs)
    std::swap(m, k);
  int64_t k2 = rs[rr - 2], n = rs[rr - 1];
  if (transposeRhs)
    std::swap(k2, n);
  if (k != k2)
    return emitOptionalError(loc, "contraction dimensions differ: lhs has ", k,
                             ", rhs has ", k2);
  auto batch = broadcastShapes(ls.drop_back(2), rs.drop_back(2));
  if (failed(batch))
    return emitOptionalError(loc, "batch dimensions ",
                             shapeStr(ls.drop_back(2)), " and ",
                             shapeStr(rs.drop_back(2)),
                             " are not broadcast-compatible");
  batch->append({m, n});
  return *batch;
}

LogicalResult MatmulOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &out) {
  FailureOr<SmallVector<int64_t>> shape =
      matmulShape(loc, adaptor.getLhs().getType(), adaptor.getRhs().getType(),
                  bool(adaptor.getTransposeLhs()),
                  bool(adaptor.getTransposeRhs()));
  if (failed(shape))
    return failure();
  out.push_back(RankedTensorType::get(
      *shape, getElementTypeOrSelf(adaptor.getLhs().getType())));
  return success();
}

bool MatmulOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return haveSameShapes(l, r);
}

//===----------------------------------------------------------------------===//
// FusedMatmulOp
//===----------------------------------------------------------------------===//

LogicalResult FusedMatmulOp::verify() {
  FailureOr<SmallVector<int64_t>> shape =
      matmulShape(getLoc(), getLhs().getType(), getRhs().getType(),
                  getTransposeLhs(), getTransposeRhs());
  if (failed(shape))
    return failure();
  auto result = cast<RankedTensorType>(getResult().getType());
  if (result.getShape() != ArrayRef<int64_t>(*shape))
    return emitOpError() << "result shape " << shapeStr(result.getShape())
                         << " is not the product's " << shapeStr(*shape);
  if (Value bias = getBias()) {
    auto type = cast<RankedTensorType>(bias.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != shape->back())
      return emitOpError() << "bias of shape " << shapeStr(type.getShape())
                           << " is not a vector of the result's last "
                              "dimension ("
                           << shape->back() << ")";
  }
  if (Value residual = getResidual())
    if (residual.getType() != result)
      return emitOpError() << "residual of type " << residual.getType()
                           << " is not of the result's type " << result;
  if (!getAlpha().isFinite())
    return emitOpError() << "alpha must be finite";
  std::optional<MatmulOperand> of = getBiasGradOf();
  Value biasGrad = getBiasGrad();
  if (biasGrad && !of)
    return emitOpError()
           << "has a bias_grad result but no bias_grad(lhs or rhs) to sum";
  if (of && !biasGrad)
    return emitOpError() << "has bias_grad(" << stringifyMatmulOperand(*of)
                         << ") but no bias_grad result";
  if (biasGrad) {
    if (cast<RankedTensorType>(getLhs().getType()).getRank() != 2 ||
        cast<RankedTensorType>(getRhs().getType()).getRank() != 2)
      return emitOpError() << "sums a bias gradient only from 2-D operands";
    int64_t length = (*shape)[*of == MatmulOperand::lhs ? 0 : 1];
    auto type = cast<RankedTensorType>(biasGrad.getType());
    if (type.getRank() != 1 || type.getDimSize(0) != length)
      return emitOpError() << "bias_grad of shape " << shapeStr(type.getShape())
                           << " is not a vector of the result's "
                           << (*of == MatmulOperand::lhs ? "rows" : "columns")
                           << " (" << length << ")";
  }
  // The epilogue runs on the accumulators, in the compute type.
  FloatType compute = getComputeType();
  if (!compute || compute.getWidth() < 32)
    return emitOpError() << "accumulates in " << compute
                         << ": the epilogue needs f32 or f64 accumulators";
  return success();
}

// The bias gradient has the type it is given, like a reduction's result.
bool FusedMatmulOp::isDataResult(unsigned index) { return index == 0; }

OperandRole FusedMatmulOp::getOperandRole(unsigned index) {
  // The bias and the residual are read as stored, whatever the product's
  // storage type.
  return index < 2 ? OperandRole::Data : OperandRole::Parameter;
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

LogicalResult SelectOp::canonicalize(SelectOp op, PatternRewriter &rewriter) {
  DenseElementsAttr condition;
  if (!matchPattern(op.getCondition(), m_Constant(&condition)) ||
      !condition.isSplat())
    return failure();
  Value picked = condition.getSplatValue<bool>() ? op.getOnTrue()
                                                 : op.getOnFalse();
  if (picked.getType() == op.getType())
    rewriter.replaceOp(op, picked);
  else
    rewriter.replaceOpWithNewOp<BroadcastToOp>(op, op.getType(), picked);
  return success();
}

OpFoldResult NegOp::fold(FoldAdaptor) {
  // -(-x) == x exactly in every floating-point format.
  if (auto inner = getInput().getDefiningOp<NegOp>())
    return inner.getInput();
  return {};
}

//===----------------------------------------------------------------------===//
// LayerNormOp and LayerNormGradOp
//===----------------------------------------------------------------------===//

/// Checks the shapes shared by layer_norm and its gradient and returns the
/// shape of the saved statistics.
static FailureOr<SmallVector<int64_t>>
checkLayerNormShapes(std::optional<Location> loc, RankedTensorType input,
                     Type scaleType, int64_t axis) {
  if (axis < 0 || axis >= input.getRank())
    return emitOptionalError(loc, "attribute 'axis' = ", axis,
                             " is out of range for rank ", input.getRank());
  auto scale = rankedOrError(loc, scaleType, "scale");
  if (failed(scale))
    return failure();
  ArrayRef<int64_t> normalised = input.getShape().drop_front(axis);
  if (scale->getShape() != normalised)
    return emitOptionalError(loc, "scale shape ", shapeStr(scale->getShape()),
                             " must equal the normalised shape ",
                             shapeStr(normalised));
  return SmallVector<int64_t>(input.getShape().take_front(axis));
}

LogicalResult DropoutOp::verify() {
  float rate = getRate().convertToFloat();
  if (!(rate >= 0 && rate < 1))
    return emitOpError("rate must be in [0, 1), got ") << rate;
  return success();
}

LogicalResult RandomUniformOp::verify() {
  double low = getLow().convertToDouble(), high = getHigh().convertToDouble();
  if (!std::isfinite(low) || !std::isfinite(high) || !(low <= high))
    return emitOpError("needs finite bounds with low <= high, got [")
           << low << ", " << high << ")";
  return success();
}

LogicalResult LayerNormOp::verify() {
  RankedTensorType input = getInput().getType();
  auto stats = checkLayerNormShapes(getLoc(), input, getScale().getType(),
                                    getAxis());
  if (failed(stats))
    return failure();
  if (getMean().getType().getShape() != ArrayRef<int64_t>(*stats))
    return emitOpError() << "mean and rstd shape "
                         << shapeStr(getMean().getType().getShape())
                         << " must equal the leading shape "
                         << shapeStr(*stats);
  return success();
}

// The saved statistics are not data: their storage is their own.
bool LayerNormOp::isDataResult(unsigned index) { return index == 0; }

OperandRole LayerNormOp::getOperandRole(unsigned index) {
  return index == 0 ? OperandRole::Data : OperandRole::Parameter;
}

LogicalResult LayerNormGradOp::inferReturnTypes(MLIRContext *,
                                                std::optional<Location> loc,
                                                Adaptor adaptor,
                                                SmallVectorImpl<Type> &out) {
  auto input = rankedOrError(loc, adaptor.getInput().getType(), "input");
  auto mean = rankedOrError(loc, adaptor.getMean().getType(), "mean");
  if (failed(input) || failed(mean))
    return failure();
  Type scaleType = adaptor.getScale().getType();
  auto stats = checkLayerNormShapes(loc, *input, scaleType, adaptor.getAxis());
  if (failed(stats))
    return failure();
  if (mean->getShape() != ArrayRef<int64_t>(*stats))
    return emitOptionalError(loc, "mean and rstd shape ",
                             shapeStr(mean->getShape()),
                             " must equal the leading shape ",
                             shapeStr(*stats));
  out.append({*input, scaleType, scaleType});
  return success();
}

bool LayerNormGradOp::isCompatibleReturnTypes(TypeRange l, TypeRange r) {
  return haveSameShapes(l, r);
}

OperandRole LayerNormGradOp::getOperandRole(unsigned index) {
  // dy and x are activations; scale and the saved statistics are not.
  return index < 2 ? OperandRole::Data : OperandRole::Parameter;
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::inferReturnTypes(MLIRContext *,
                                            std::optional<Location> loc,
                                            Adaptor adaptor,
                                            SmallVectorImpl<Type> &out) {
  auto input = rankedOrError(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  ArrayRef<int64_t> perm = adaptor.getPermutation();
  int64_t rank = input->getRank();
  if (static_cast<int64_t>(perm.size()) != rank)
    return emitOptionalError(loc, "permutation has ", perm.size(),
                             " entries but the input has rank ", rank);
  llvm::SmallBitVector seen(rank);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen.test(p))
      return emitOptionalError(loc, "permutation ", shapeStr(perm),
                               " is not a permutation of [0, ", rank, ")");
    seen.set(p);
    shape.push_back(input->getDimSize(p));
  }
  out.push_back(RankedTensorType::get(shape, input->getElementType()));
  return success();
}

OpFoldResult TransposeOp::fold(FoldAdaptor) {
  ArrayRef<int64_t> perm = getPermutation();
  if (llvm::equal(perm, llvm::seq<int64_t>(0, perm.size())))
    return getInput();
  // transpose(transpose(x, p), q) == transpose(x, p o q).
  if (auto inner = getInput().getDefiningOp<TransposeOp>()) {
    ArrayRef<int64_t> innerPerm = inner.getPermutation();
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(innerPerm[p]);
    getInputMutable().assign(inner.getInput());
    setPermutation(composed);
    return getResult();
  }
  return {};
}

LogicalResult ReshapeOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getNumElements() != out.getNumElements())
    return emitOpError() << "input has " << in.getNumElements()
                         << " elements but the result has "
                         << out.getNumElements();
  return success();
}

OpFoldResult ReshapeOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto inner = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(inner.getInput());
    return getResult();
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return dense.reshape(getType());
  return {};
}

LogicalResult BroadcastToOp::verify() {
  ArrayRef<int64_t> in = getInput().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  auto shape = broadcastShapes(in, out);
  if (in.size() > out.size() || failed(shape) ||
      ArrayRef<int64_t>(*shape) != out)
    return emitOpError() << "input shape " << shapeStr(in)
                         << " cannot be broadcast to " << shapeStr(out);
  return success();
}

OpFoldResult BroadcastToOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    if (dense.isSplat())
      return dense.resizeSplat(getType());
  return {};
}

LogicalResult ConcatOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &out) {
  ValueRange inputs = adaptor.getInputs();
  if (inputs.empty())
    return emitOptionalError(loc, "needs at least one input");
  auto first = rankedOrError(loc, inputs.front().getType(), "input #0");
  if (failed(first))
    return failure();
  int64_t rank = first->getRank(), axis = adaptor.getAxis();
  if (axis < 0 || axis >= rank)
    return emitOptionalError(loc, "attribute 'axis' = ", axis,
                             " is out of range for rank ", rank);
  SmallVector<int64_t> shape(first->getShape());
  shape[axis] = 0;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto t = rankedOrError(loc, v.getType(), "input");
    if (failed(t))
      return failure();
    if (t->getElementType() != first->getElementType())
      return emitOptionalError(loc, "input #", i, " has element type ",
                               t->getElementType(), " but input #0 has ",
                               first->getElementType());
    if (t->getRank() != rank)
      return emitOptionalError(loc, "input #", i, " has rank ", t->getRank(),
                               " but input #0 has rank ", rank);
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t->getDimSize(d) != first->getDimSize(d))
        return emitOptionalError(loc, "input #", i, " has size ",
                                 t->getDimSize(d), " in dimension ", d,
                                 " but input #0 has ", first->getDimSize(d));
    shape[axis] += t->getDimSize(axis);
  }
  out.push_back(RankedTensorType::get(shape, first->getElementType()));
  return success();
}

OpFoldResult ConcatOp::fold(FoldAdaptor) {
  if (getInputs().size() == 1)
    return getInputs().front();
  return {};
}

/// Checks that selecting `sizes` elements from `offsets` with `strides`
/// stays inside `whole` (tg.slice and tg.slice_grad share the rule).
static LogicalResult checkSliceBounds(std::optional<Location> loc,
                                      RankedTensorType whole,
                                      ArrayRef<int64_t> offsets,
                                      ArrayRef<int64_t> sizes,
                                      std::optional<ArrayRef<int64_t>> steps) {
  int64_t rank = whole.getRank();
  SmallVector<int64_t> strides(rank, 1);
  if (steps)
    strides.assign(steps->begin(), steps->end());
  if (static_cast<int64_t>(offsets.size()) != rank ||
      static_cast<int64_t>(sizes.size()) != rank ||
      static_cast<int64_t>(strides.size()) != rank)
    return emitOptionalError(loc, "offsets, sizes and strides need ", rank,
                             " entries each (the input rank)");
  for (int64_t d = 0; d < rank; ++d) {
    int64_t dim = whole.getDimSize(d);
    if (strides[d] < 1)
      return emitOptionalError(loc, "strides[", d, "] = ", strides[d],
                               " must be positive");
    if (sizes[d] < 0 || offsets[d] < 0 || offsets[d] > dim)
      return emitOptionalError(loc, "dimension ", d, ": offset ", offsets[d],
                               " and size ", sizes[d],
                               " must be non-negative and within ", dim);
    // Last index read: offset + (size - 1) * stride, checked without
    // overflow. An offset at the end selects nothing inside (and
    // (dim - 1 - offset) / stride would round -1 / stride up to 0).
    if (sizes[d] > 0 && (offsets[d] == dim ||
                         (sizes[d] - 1) > (dim - 1 - offsets[d]) / strides[d]))
      return emitOptionalError(loc, "dimension ", d, ": slice of ", sizes[d],
                               " elements from offset ", offsets[d],
                               " with stride ", strides[d],
                               " runs past the size ", dim);
  }
  return success();
}

LogicalResult SliceOp::inferReturnTypes(MLIRContext *,
                                        std::optional<Location> loc,
                                        Adaptor adaptor,
                                        SmallVectorImpl<Type> &out) {
  auto input = rankedOrError(loc, adaptor.getInput().getType(), "input");
  if (failed(input))
    return failure();
  std::optional<ArrayRef<int64_t>> strides;
  if (auto s = adaptor.getStridesAttr())
    strides = s.asArrayRef();
  if (failed(checkSliceBounds(loc, *input, adaptor.getOffsets(),
                              adaptor.getSizes(), strides)))
    return failure();
  out.push_back(
      RankedTensorType::get(adaptor.getSizes(), input->getElementType()));
  return success();
}

LogicalResult SliceGradOp::verify() {
  auto grad = cast<RankedTensorType>(getGrad().getType());
  auto result = cast<RankedTensorType>(getType());
  if (grad.getRank() != result.getRank())
    return emitOpError() << "grad has rank " << grad.getRank()
                         << ", the result " << result.getRank();
  return checkSliceBounds(getLoc(), result, getOffsets(), grad.getShape(),
                          getStrides());
}

OpFoldResult SliceOp::fold(FoldAdaptor) {
  bool unitStrides =
      !getStrides() || llvm::all_of(*getStrides(), [](int64_t s) {
        return s == 1;
      });
  if (getType() == getInput().getType() && unitStrides &&
      llvm::all_of(getOffsets(), [](int64_t o) { return o == 0; }))
    return getInput();
  return {};
}

LogicalResult GatherOp::inferReturnTypes(MLIRContext *,
                                         std::optional<Location> loc,
                                         Adaptor adaptor,
                                         SmallVectorImpl<Type> &out) {
  auto table = rankedOrError(loc, adaptor.getTable().getType(), "table");
  auto ids = rankedOrError(loc, adaptor.getIds().getType(), "ids");
  if (failed(table) || failed(ids))
    return failure();
  if (table->getRank() < 1)
    return emitOptionalError(loc, "table must have rank >= 1");
  SmallVector<int64_t> shape(ids->getShape());
  llvm::append_range(shape, table->getShape().drop_front());
  out.push_back(RankedTensorType::get(shape, table->getElementType()));
  return success();
}

//===----------------------------------------------------------------------===//
// ConstantOp and CastOp
//===----------------------------------------------------------------------===//

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

bool CastOp::areCastCompatible(TypeRange inputs, TypeRange outputs) {
  if (inputs.size() != 1 || outputs.size() != 1)
    return false;
  auto in = dyn_cast<RankedTensorType>(inputs.front());
  auto out = dyn_cast<RankedTensorType>(outputs.front());
  return in && out && in.getShape() == out.getShape();
}

/// Whether every value of element type `from` is exactly representable in
/// `to`, so that `from -> to -> from` is the identity.
static bool isExactWidening(Type from, Type to) {
  if (auto f = dyn_cast<FloatType>(from))
    if (auto t = dyn_cast<FloatType>(to))
      return llvm::APFloatBase::isRepresentableBy(f.getFloatSemantics(),
                                                  t.getFloatSemantics());
  if (auto f = dyn_cast<IntegerType>(from))
    if (auto t = dyn_cast<IntegerType>(to))
      return t.getWidth() >= f.getWidth();
  return false;
}

/// Converts a dense constant to `resultType` with the semantics of tg.cast.
static Attribute castConstant(DenseElementsAttr value,
                              RankedTensorType resultType) {
  Type to = resultType.getElementType();
  if (auto fp = dyn_cast<DenseFPElementsAttr>(value)) {
    auto toFloat = dyn_cast<FloatType>(to);
    if (!toFloat)
      return {};
    const llvm::fltSemantics &sem = toFloat.getFloatSemantics();
    return fp.mapValues(to, [&](const APFloat &x) {
      APFloat y = x;
      bool lost;
      y.convert(sem, APFloat::rmNearestTiesToEven, &lost);
      return y.bitcastToAPInt();
    });
  }
  if (auto in = dyn_cast<DenseIntElementsAttr>(value)) {
    auto toInt = dyn_cast<IntegerType>(to);
    if (!toInt)
      return {};
    unsigned width = toInt.getWidth();
    return in.mapValues(to, [&](const APInt &x) {
      return x.sextOrTrunc(width);
    });
  }
  return {};
}

OpFoldResult CastOp::fold(FoldAdaptor adaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // cast(cast(x : T -> U) -> T) is x when U holds every value of T exactly.
  if (auto inner = getInput().getDefiningOp<CastOp>()) {
    Value source = inner.getInput();
    if (source.getType() == getType() &&
        isExactWidening(getElementTypeOrSelf(source.getType()),
                        getElementTypeOrSelf(inner.getType())))
      return source;
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(adaptor.getInput()))
    return castConstant(dense, getType());
  return {};
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

/// logits : [..., C] and labels : [...].
static LogicalResult verifyLogitsAndLabels(Operation *op,
                                           RankedTensorType logits,
                                           RankedTensorType labels) {
  if (logits.getRank() < 1)
    return op->emitOpError("logits must have rank >= 1 (classes last)");
  ArrayRef<int64_t> expected = logits.getShape().drop_back();
  if (labels.getShape() != expected)
    return op->emitOpError()
           << "labels shape " << shapeStr(labels.getShape())
           << " must equal the logits shape without the class dimension "
           << shapeStr(expected);
  return success();
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  return verifyLogitsAndLabels(*this, getLogits().getType(),
                               getLabels().getType());
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  return verifyLogitsAndLabels(*this, getLogits().getType(),
                               getLabels().getType());
}

OperandRole SoftmaxCrossEntropyGradOp::getOperandRole(unsigned index) {
  // The loss gradient is the f32 seed of the backward pass.
  switch (index) {
  case 0:
    return OperandRole::Parameter;
  case 1:
    return OperandRole::Data;
  default:
    return OperandRole::Index;
  }
}

OpOperand &SoftmaxCrossEntropyGradOp::getSeedOperand() {
  return getLossGradMutable();
}

OpOperand &MseLossGradOp::getSeedOperand() { return getLossGradMutable(); }

OpOperand &SeedOp::getSeedOperand() { return getInputMutable(); }

LogicalResult GatherGradOp::verify() {
  RankedTensorType table = getType();
  if (table.getRank() < 1)
    return emitOpError("result table must have rank >= 1");
  SmallVector<int64_t> expected(getIds().getType().getShape());
  llvm::append_range(expected, table.getShape().drop_front());
  if (getGrad().getType().getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "grad shape "
                         << shapeStr(getGrad().getType().getShape())
                         << " must be the ids shape followed by the row shape "
                         << shapeStr(expected);
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer updates
//===----------------------------------------------------------------------===//

/// `value` printed as with %g, for diagnostics.
static std::string fmt(double value) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", value);
  return buf;
}

/// Checks that a float attribute is finite and within [lo, hi) (or [lo, hi]).
static LogicalResult checkRange(Operation *op, StringRef name, float value,
                                float lo, float hi, bool hiInclusive,
                                StringRef range) {
  bool ok = std::isfinite(value) && value >= lo &&
            (hiInclusive ? value <= hi : value < hi);
  if (!ok)
    return op->emitOpError() << "attribute '" << name << "' = " << fmt(value)
                             << " must be in " << range;
  return success();
}

static LogicalResult checkSameShape(Operation *op, StringRef what,
                                    RankedTensorType t,
                                    RankedTensorType param) {
  if (t.getShape() != param.getShape())
    return op->emitOpError() << what << " shape " << shapeStr(t.getShape())
                             << " must equal the param shape "
                             << shapeStr(param.getShape());
  return success();
}

LogicalResult SgdUpdateOp::verify() {
  float inf = std::numeric_limits<float>::infinity();
  float mu = getMomentum().convertToFloat();
  if (failed(checkRange(*this, "lr", getLr().convertToFloat(), 0, inf, false,
                        "[0, inf)")) ||
      failed(checkRange(*this, "momentum", mu, 0, 1, false, "[0, 1)")) ||
      failed(checkRange(*this, "weight_decay",
                        getWeightDecay().convertToFloat(), 0, inf, false,
                        "[0, inf)")))
    return failure();
  if (failed(checkSameShape(*this, "grad", getGrad().getType(),
                            getParam().getType())))
    return failure();
  bool hasBuffer = static_cast<bool>(getMomentumBuffer());
  if (hasBuffer != (mu != 0))
    return emitOpError() << "a momentum_buffer operand is required exactly "
                            "when 'momentum' is non-zero (momentum = "
                         << fmt(mu) << ")";
  if (static_cast<bool>(getNewMomentumBuffer()) != hasBuffer)
    return emitOpError("the new momentum buffer result must be present "
                       "exactly when a momentum_buffer operand is");
  if (hasBuffer && (getMomentumBuffer().getType() != getParam().getType() ||
                    getNewMomentumBuffer().getType() != getParam().getType()))
    return emitOpError("momentum buffer and its result must have the param "
                       "type");
  if (getNesterov() && mu == 0)
    return emitOpError("'nesterov' needs a non-zero 'momentum'");
  return success();
}

// Updated parameters and state are never data: they stay master weights.
bool SgdUpdateOp::isDataResult(unsigned) { return false; }
bool AdamUpdateOp::isDataResult(unsigned) { return false; }
bool UpdateLossScaleOp::isDataResult(unsigned) { return false; }

OperandRole SgdUpdateOp::getOperandRole(unsigned index) {
  if (index == 1)
    return OperandRole::Data;
  Type elem = getElementTypeOrSelf(getOperand(index).getType());
  return isa<FloatType>(elem) ? OperandRole::Parameter : OperandRole::Index;
}

OpOperand &SgdUpdateOp::getGradOperand() { return getGradMutable(); }
Value SgdUpdateOp::getSkipPredicate() { return getSkipIf(); }
void SgdUpdateOp::setSkipPredicate(Value predicate) {
  getSkipIfMutable().assign(predicate);
}

OpOperand &AdamUpdateOp::getGradOperand() { return getGradMutable(); }
Value AdamUpdateOp::getSkipPredicate() { return getSkipIf(); }
void AdamUpdateOp::setSkipPredicate(Value predicate) {
  getSkipIfMutable().assign(predicate);
}

LogicalResult AdamUpdateOp::verify() {
  float inf = std::numeric_limits<float>::infinity();
  if (failed(checkRange(*this, "lr", getLr().convertToFloat(), 0, inf, false,
                        "[0, inf)")) ||
      failed(checkRange(*this, "beta1", getBeta1().convertToFloat(), 0, 1,
                        false, "[0, 1)")) ||
      failed(checkRange(*this, "beta2", getBeta2().convertToFloat(), 0, 1,
                        false, "[0, 1)")) ||
      failed(checkRange(*this, "epsilon", getEpsilon().convertToFloat(), 0,
                        inf, false, "[0, inf)")) ||
      failed(checkRange(*this, "weight_decay",
                        getWeightDecay().convertToFloat(), 0, inf, false,
                        "[0, inf)")))
    return failure();
  if (failed(checkSameShape(*this, "grad", getGrad().getType(),
                            getParam().getType())) ||
      failed(checkSameShape(*this, "first_moment",
                            getFirstMoment().getType(),
                            getParam().getType())))
    return failure();
  return success();
}

OperandRole AdamUpdateOp::getOperandRole(unsigned index) {
  if (index == 1)
    return OperandRole::Data;
  Type elem = getElementTypeOrSelf(getOperand(index).getType());
  return isa<FloatType>(elem) ? OperandRole::Parameter : OperandRole::Index;
}

//===----------------------------------------------------------------------===//
// Loss scaling
//===----------------------------------------------------------------------===//

OperandRole ApplyLossScaleOp::getOperandRole(unsigned index) {
  return index == 0 ? OperandRole::Data : OperandRole::Parameter;
}

LogicalResult UnscaleGradsOp::verify() {
  if (getGrads().empty())
    return emitOpError("needs at least one gradient");
  if (getUnscaled().size() != getGrads().size())
    return emitOpError() << "has " << getGrads().size() << " gradients but "
                         << getUnscaled().size() << " unscaled results";
  for (auto [i, pair] :
       llvm::enumerate(llvm::zip(getGrads().getTypes(),
                                 getUnscaled().getTypes())))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError() << "unscaled result #" << i << " has type "
                           << std::get<1>(pair) << " but gradient #" << i
                           << " has type " << std::get<0>(pair);
  return success();
}

LogicalResult AllReduceOp::verify() {
  if (getInputs().empty())
    return emitOpError("needs at least one input");
  if (getResults().size() != getInputs().size())
    return emitOpError() << "has " << getInputs().size() << " inputs but "
                         << getResults().size() << " results";
  Type element = getElementTypeOrSelf(getInputs().front().getType());
  for (auto [i, pair] : llvm::enumerate(
           llvm::zip(getInputs().getTypes(), getResults().getTypes()))) {
    auto [in, out] = pair;
    if (in != out)
      return emitOpError() << "result #" << i << " has type " << out
                           << " but input #" << i << " has type " << in;
    if (getElementTypeOrSelf(in) != element)
      return emitOpError() << "input #" << i << " has element type "
                           << getElementTypeOrSelf(in) << " but input #0 has "
                           << element
                           << ": one all-reduce sends one element type";
  }
  return success();
}

OperandRole UnscaleGradsOp::getOperandRole(unsigned index) {
  return index < getGrads().size() ? OperandRole::Data
                                   : OperandRole::Parameter;
}

LogicalResult UpdateLossScaleOp::verify() {
  float inf = std::numeric_limits<float>::infinity();
  float growth = getGrowthFactor().convertToFloat();
  if (!(std::isfinite(growth) && growth > 1))
    return emitOpError() << "attribute 'growth_factor' = " << fmt(growth)
                         << " must be finite and greater than 1";
  float backoff = getBackoffFactor().convertToFloat();
  if (!(backoff > 0 && backoff < 1))
    return emitOpError() << "attribute 'backoff_factor' = " << fmt(backoff)
                         << " must be in (0, 1)";
  if (getGrowthInterval() < 1)
    return emitOpError() << "attribute 'growth_interval' = "
                         << getGrowthInterval() << " must be at least 1";
  std::optional<float> lo, hi;
  if (auto m = getMinScale()) {
    lo = m->convertToFloat();
    if (!(*lo > 0 && *lo < inf))
      return emitOpError() << "attribute 'min_scale' = " << fmt(*lo)
                           << " must be positive and finite";
  }
  if (auto m = getMaxScale()) {
    hi = m->convertToFloat();
    if (!(*hi > 0 && *hi < inf))
      return emitOpError() << "attribute 'max_scale' = " << fmt(*hi)
                           << " must be positive and finite";
  }
  if (lo && hi && *lo > *hi)
    return emitOpError() << "'min_scale' = " << fmt(*lo)
                         << " exceeds 'max_scale' = " << fmt(*hi);
  return success();
}

OperandRole UpdateLossScaleOp::getOperandRole(unsigned index) {
  return index == 0 ? OperandRole::Parameter : OperandRole::Index;
}

//===----------------------------------------------------------------------===//
// Numerics checks
//===----------------------------------------------------------------------===//

/// Checks that `type` holds rows of tg.tensor_stats (`tensor<Kx6xf32>`,
/// exactly one row when `oneRow`).
static LogicalResult verifyStatsRows(Operation *op, Type type,
                                     const Twine &what, bool oneRow) {
  auto tensor = cast<RankedTensorType>(type);
  ArrayRef<int64_t> shape = tensor.getShape();
  if (shape.size() != 2 || shape[1] != 6 || shape[0] < 1 ||
      (oneRow && shape[0] != 1))
    return op->emitOpError()
           << what << " must be "
           << (oneRow ? "tensor<1x6xf32>" : "tensor<Kx6xf32> with K >= 1")
           << " (rows of min, max, amax, smallest non-zero magnitude, NaN "
              "count, infinity count), got "
           << type;
  return success();
}

LogicalResult TensorStatsOp::verify() {
  return verifyStatsRows(*this, getStats().getType(), "result", true);
}

LogicalResult RecordNonfiniteOp::verify() {
  if (getStats().empty())
    return emitOpError("needs at least one row of statistics");
  for (auto [i, type] : llvm::enumerate(getStats().getTypes()))
    if (failed(verifyStatsRows(*this, type, "statistics #" + Twine(i), false)))
      return failure();
  return success();
}

#define GET_OP_CLASSES
#include "mp/Dialect/TG/IR/TGOps.cpp.inc"
