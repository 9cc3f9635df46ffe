//===- TGAdjoints.cpp - reverse-mode rules of the tg ops ------------------===//
//
// DifferentiableOpInterface::buildAdjoints for every differentiable tg op:
// given the adjoint dy of an op's result, the adjoints of its operands, built
// from tg ops (the dedicated *_grad ops where they exist). Rules read the
// forward op's operands and results, the activations the backward pass
// saves; none recomputes a forward value.
//
// Broadcasting is undone by summing over the broadcast dimensions
// (reduceToShape). Adjoint ops are named after the forward op
// ("fc1.matmul" -> "fc1.matmul.grad_rhs"), keeping its file position, so
// the precision report and policy overrides can name them.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/TypeUtilities.h"

#include <numeric>

using namespace mlir;
using namespace mp::tg;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The location of the adjoint ops of `op`: its name with `suffix` appended,
/// keeping its file position; ops without a name get `suffix` as name.
Location adjointLoc(Operation *op, StringRef suffix) {
  MLIRContext *ctx = op->getContext();
  Location loc = op->getLoc();
  auto named = [&](NameLoc name, Location child) -> Location {
    return NameLoc::get(
        StringAttr::get(ctx, name.getName().str() + "." + suffix.str()),
        child);
  };
  if (auto name = dyn_cast<NameLoc>(loc))
    return named(name, name.getChildLoc());
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (auto name = dyn_cast<NameLoc>(inner))
        return named(name, loc);
  return NameLoc::get(StringAttr::get(ctx, suffix), loc);
}

/// A rank-0 constant of `elementType` holding `value`.
Value scalar(OpBuilder &b, Location loc, Type elementType, double value) {
  auto type = RankedTensorType::get({}, elementType);
  return ConstantOp::create(
      b, loc, type,
      DenseElementsAttr::get(type, b.getFloatAttr(elementType, value)));
}

/// `v` converted to `type`'s element type when it differs (a deny-list op
/// may store its result in another type than its input).
Value castTo(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  return CastOp::create(b, loc, tensorType(v).clone(getElementTypeOrSelf(type)),
                        v);
}

/// The adjoint of numpy broadcasting: sums `v` over the dimensions that
/// broadcasting `target`'s shape to v's created or stretched, then reshapes
/// to `target`.
Value reduceToShape(OpBuilder &b, Location loc, Value v,
                    RankedTensorType target) {
  RankedTensorType type = tensorType(v);
  if (type.getShape() == target.getShape())
    return v;
  int64_t offset = type.getRank() - target.getRank();
  SmallVector<int64_t> axes, kept;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (d < offset ||
        (target.getDimSize(d - offset) == 1 && type.getDimSize(d) != 1))
      axes.push_back(d);
    else
      kept.push_back(type.getDimSize(d));
  }
  Value sum = v;
  if (!axes.empty())
    sum = ReduceSumOp::create(b, loc, type.clone(kept), v,
                              b.getDenseI64ArrayAttr(axes), nullptr, nullptr);
  if (tensorType(sum).getShape() != target.getShape())
    sum = ReshapeOp::create(b, loc, target.clone(type.getElementType()), sum);
  return sum;
}

Value neg(OpBuilder &b, Location loc, Value v) {
  return NegOp::create(b, loc, v.getType(), v, nullptr);
}

template <typename BinOp>
Value binary(OpBuilder &b, Location loc, Value lhs, Value rhs) {
  SmallVector<Type> types;
  (void)inferBroadcastType(loc, lhs.getType(), rhs.getType(), types);
  return BinOp::create(b, loc, types.front(), lhs, rhs, nullptr);
}

/// `v * c` for a scalar `c`.
Value scaleBy(OpBuilder &b, Location loc, Value v, double c) {
  return binary<MulOp>(
      b, loc, v, scalar(b, loc, getElementTypeOrSelf(v.getType()), c));
}

/// `v` broadcast to `type`'s shape (same element type).
Value broadcastTo(OpBuilder &b, Location loc, Value v, RankedTensorType type) {
  RankedTensorType vt = tensorType(v);
  if (vt.getShape() == type.getShape())
    return v;
  return BroadcastToOp::create(b, loc, type.clone(vt.getElementType()), v);
}

/// The shape of a reduction of `input` over `axes` with its reduced
/// dimensions kept as 1.
RankedTensorType keptDims(RankedTensorType input, ArrayRef<int64_t> axes,
                          Type element) {
  SmallVector<int64_t> shape(input.getShape());
  for (int64_t a : axes)
    shape[a] = 1;
  return RankedTensorType::get(shape, element);
}

/// Fills `out` with null adjoints for every operand of `op`.
void noAdjoints(Operation *op, SmallVectorImpl<Value> &out) {
  out.assign(op->getNumOperands(), Value());
}

//===----------------------------------------------------------------------===//
// Elementwise binary ops
//===----------------------------------------------------------------------===//

/// The rule shared by the broadcasting binary ops: `partial(b, loc, which)`
/// gives dy times the partial derivative with respect to operand `which`
/// (in the broadcast shape), which is then summed back to the operand's
/// shape.
template <typename PartialFn>
LogicalResult binaryAdjoints(Operation *op, OpBuilder &b, Value dy,
                             ArrayRef<bool> wanted,
                             SmallVectorImpl<Value> &out, PartialFn partial) {
  noAdjoints(op, out);
  if (!dy)
    return success();
  static const char *names[] = {"grad_lhs", "grad_rhs"};
  for (unsigned k = 0; k < 2; ++k) {
    if (!wanted[k])
      continue;
    Location loc = adjointLoc(op, names[k]);
    out[k] = reduceToShape(b, loc, partial(b, loc, k),
                           tensorType(op->getOperand(k)));
  }
  return success();
}

} // namespace

LogicalResult AddOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  return binaryAdjoints(*this, b, dys[0], wanted, out,
                        [&](OpBuilder &, Location, unsigned) { return dys[0]; });
}

LogicalResult SubOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  return binaryAdjoints(*this, b, dys[0], wanted, out,
                        [&](OpBuilder &b, Location loc, unsigned k) {
                          return k == 0 ? dys[0] : neg(b, loc, dys[0]);
                        });
}

LogicalResult MulOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  return binaryAdjoints(*this, b, dys[0], wanted, out,
                        [&](OpBuilder &b, Location loc, unsigned k) {
                          return binary<MulOp>(b, loc, dys[0],
                                               getOperand(1 - k));
                        });
}

LogicalResult DivOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  // d(l / r) = dl / r - dr * (l / r) / r.
  return binaryAdjoints(
      *this, b, dys[0], wanted, out, [&](OpBuilder &b, Location loc,
                                         unsigned k) {
        if (k == 0)
          return binary<DivOp>(b, loc, dys[0], getRhs());
        Value dyY = binary<MulOp>(b, loc, dys[0], getResult());
        return neg(b, loc, binary<DivOp>(b, loc, dyY, getRhs()));
      });
}

/// maximum(l, r) = r + relu(l - r) and minimum(l, r) = l - relu(l - r): the
/// relu's gradient is the mask of where l wins (ties go to r for maximum,
/// to l for minimum).
template <typename Op>
static LogicalResult extremumAdjoints(Op op, bool isMax, OpBuilder &b,
                                      ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  Value dy = dys[0];
  Value pick, rest;
  if (dy && (wanted[0] || wanted[1])) {
    Location loc = adjointLoc(op, "grad_mask");
    Value diff = binary<SubOp>(b, loc, op.getLhs(), op.getRhs());
    diff = broadcastTo(b, loc, diff, tensorType(dy));
    // dy where l > r.
    pick = ReluGradOp::create(b, loc, dy.getType(), dy, diff, nullptr);
    rest = binary<SubOp>(b, loc, dy, pick);
  }
  return binaryAdjoints(op, b, dy, wanted, out,
                        [&](OpBuilder &, Location, unsigned k) {
                          bool toLhs = k == 0;
                          return toLhs == isMax ? pick : rest;
                        });
}

LogicalResult MaximumOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &out) {
  return extremumAdjoints(*this, /*isMax=*/true, b, dys, wanted, out);
}

LogicalResult MinimumOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &out) {
  return extremumAdjoints(*this, /*isMax=*/false, b, dys, wanted, out);
}

LogicalResult SelectOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  // dy where the condition picks the operand, zero elsewhere; the condition
  // has no adjoint.
  noAdjoints(*this, out);
  Value dy = dys[0];
  if (!dy)
    return success();
  static const char *names[] = {"", "grad_on_true", "grad_on_false"};
  for (unsigned k = 1; k < 3; ++k) {
    auto operandType = tensorType(getOperand(k));
    if (!wanted[k] || !isa<FloatType>(operandType.getElementType()))
      continue;
    Location loc = adjointLoc(*this, names[k]);
    Value zero = scalar(b, loc, tensorType(dy).getElementType(), 0.0);
    Value picked =
        SelectOp::create(b, loc, dy.getType(), getCondition(),
                         k == 1 ? dy : zero, k == 1 ? zero : dy);
    out[k] = castTo(b, loc, reduceToShape(b, loc, picked, operandType),
                    operandType);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Elementwise unary ops
//===----------------------------------------------------------------------===//

namespace {

/// The rule shared by unary ops: `fn(b, loc, dy)` gives dx, converted to the
/// input's type.
template <typename Fn>
LogicalResult unaryAdjoint(Operation *op, OpBuilder &b, ArrayRef<Value> dys,
                           ArrayRef<bool> wanted, SmallVectorImpl<Value> &out,
                           Fn fn) {
  noAdjoints(op, out);
  if (!dys[0] || !wanted[0])
    return success();
  Location loc = adjointLoc(op, "grad");
  out[0] = castTo(b, loc, fn(b, loc, dys[0]), op->getOperand(0).getType());
  return success();
}

} // namespace

LogicalResult NegOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [](OpBuilder &b, Location loc, Value dy) {
                        return neg(b, loc, dy);
                      });
}

LogicalResult ReluOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return ReluGradOp::create(b, loc, dy.getType(), dy,
                                                  getInput(), nullptr);
                      });
}

LogicalResult TanhOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return TanhGradOp::create(b, loc, dy.getType(), dy,
                                                  getResult(), nullptr);
                      });
}

LogicalResult SigmoidOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return SigmoidGradOp::create(b, loc, dy.getType(), dy,
                                                     getResult(), nullptr);
                      });
}

LogicalResult GeluOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return GeluGradOp::create(b, loc, dy.getType(), dy,
                                                  getInput(),
                                                  getTanhApproxAttr(), nullptr);
                      });
}

LogicalResult DropoutOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &out) {
  // The same mask and scale applied to dy: recomputed from the seed, not
  // stored.
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return DropoutOp::create(
                            b, loc, dy.getType(), dy, getSeed(),
                            getRateAttr(), getStreamAttr(), nullptr);
                      });
}

LogicalResult ExpOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  // d exp(x) = dy * exp(x).
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return binary<MulOp>(
                            b, loc, dy, castTo(b, loc, getResult(), dy.getType()));
                      });
}

LogicalResult LogOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  // d log(x) = dy / x.
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return binary<DivOp>(
                            b, loc, dy, castTo(b, loc, getInput(), dy.getType()));
                      });
}

LogicalResult SqrtOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &out) {
  // d sqrt(x) = dy / (2 sqrt(x)).
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return scaleBy(
                            b, loc, binary<DivOp>(b, loc, dy, getResult()), 0.5);
                      });
}

LogicalResult RsqrtOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &out) {
  // d x^(-1/2) = -1/2 dy x^(-3/2) = -1/2 dy y^3.
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        Value y = castTo(b, loc, getResult(), dy.getType());
                        Value y3 = binary<MulOp>(b, loc, y,
                                                 binary<MulOp>(b, loc, y, y));
                        return scaleBy(b, loc, binary<MulOp>(b, loc, dy, y3),
                                       -0.5);
                      });
}

LogicalResult SquareOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  // d x^2 = 2 x dy.
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return scaleBy(
                            b, loc, binary<MulOp>(b, loc, dy, getInput()), 2.0);
                      });
}

LogicalResult CumSumOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  // Each x[j] adds to y[k] for k >= j (k > j when exclusive): dx is the
  // running sum of dy in the other direction, equally inclusive.
  return unaryAdjoint(
      *this, b, dys, wanted, out, [&](OpBuilder &b, Location loc, Value dy) {
        return CumSumOp::create(b, loc, dy.getType(), dy, getAxisAttr(),
                                getExclusiveAttr(),
                                getReverse() ? UnitAttr() : b.getUnitAttr(),
                                getComputeAttr());
      });
}

LogicalResult SinOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  // d sin(x) = cos(x) dy.
  return unaryAdjoint(
      *this, b, dys, wanted, out, [&](OpBuilder &b, Location loc, Value dy) {
        Value x = castTo(b, loc, getInput(), dy.getType());
        return binary<MulOp>(b, loc, dy,
                             CosOp::create(b, loc, dy.getType(), x));
      });
}

LogicalResult CosOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  // d cos(x) = -sin(x) dy.
  return unaryAdjoint(
      *this, b, dys, wanted, out, [&](OpBuilder &b, Location loc, Value dy) {
        Value x = castTo(b, loc, getInput(), dy.getType());
        Value s = SinOp::create(b, loc, dy.getType(), x);
        return scaleBy(b, loc, binary<MulOp>(b, loc, dy, s), -1.0);
      });
}

LogicalResult ErfOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                   ArrayRef<bool> wanted,
                                   SmallVectorImpl<Value> &out) {
  // d erf(x) = 2/sqrt(pi) exp(-x^2) dy.
  return unaryAdjoint(
      *this, b, dys, wanted, out, [&](OpBuilder &b, Location loc, Value dy) {
        Value x = castTo(b, loc, getInput(), dy.getType());
        Value minusSquare = scaleBy(b, loc, binary<MulOp>(b, loc, x, x), -1.0);
        Value e = ExpOp::create(b, loc, dy.getType(), minusSquare);
        return scaleBy(b, loc, binary<MulOp>(b, loc, dy, e),
                       1.1283791670955126); // 2 / sqrt(pi)
      });
}

//===----------------------------------------------------------------------===//
// Softmax, normalisation, reductions
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return SoftmaxGradOp::create(
                            b, loc, getInput().getType(), dy, getResult(),
                            getAxisAttr(), nullptr);
                      });
}

LogicalResult LogSoftmaxOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return LogSoftmaxGradOp::create(
                            b, loc, getInput().getType(), dy, getResult(),
                            getAxisAttr(), nullptr);
                      });
}

bool LayerNormOp::isDifferentiableResult(unsigned index) {
  // The mean and reciprocal deviation are statistics saved for the
  // backward pass, not values a loss may depend on.
  return index == 0;
}

LogicalResult LayerNormOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  if (!dys[0] || !llvm::is_contained(wanted, true))
    return success();
  auto grad = LayerNormGradOp::create(
      b, adjointLoc(*this, "grad"), getInput().getType(),
      getScale().getType(), getBias().getType(), dys[0], getInput(),
      getScale(), getMean(), getRstd(), getAxisAttr(), nullptr);
  for (unsigned k = 0; k < 3; ++k)
    if (wanted[k])
      out[k] = grad->getResult(k);
  return success();
}

namespace {

/// dy of a reduction over `axes`, reshaped to keep the reduced dimensions
/// and broadcast back to the input's shape.
Value spreadOverAxes(OpBuilder &b, Location loc, Value dy,
                     RankedTensorType input, ArrayRef<int64_t> axes) {
  RankedTensorType kept =
      keptDims(input, axes, getElementTypeOrSelf(dy.getType()));
  if (tensorType(dy).getShape() != kept.getShape())
    dy = ReshapeOp::create(b, loc, kept, dy);
  return broadcastTo(b, loc, dy, input);
}

int64_t reducedCount(RankedTensorType input, ArrayRef<int64_t> axes) {
  int64_t n = 1;
  for (int64_t a : axes)
    n *= input.getDimSize(a);
  return n;
}

} // namespace

LogicalResult ReduceSumOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return spreadOverAxes(b, loc, dy,
                                              tensorType(getInput()),
                                              getAxes());
                      });
}

LogicalResult ReduceMeanOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                          ArrayRef<bool> wanted,
                                          SmallVectorImpl<Value> &out) {
  return unaryAdjoint(
      *this, b, dys, wanted, out, [&](OpBuilder &b, Location loc, Value dy) {
        auto input = tensorType(getInput());
        Value spread = spreadOverAxes(b, loc, dy, input, getAxes());
        return scaleBy(b, loc, spread,
                       1.0 / double(reducedCount(input, getAxes())));
      });
}

LogicalResult ReduceMaxOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  // The gradient goes to the maxima, shared equally among ties (as
  // TensorFlow does): mask = 1 where x equals the maximum, found as the
  // complement of relu'(max - x); dx = dy * mask / count(mask).
  return unaryAdjoint(
      *this, b, dys, wanted, out, [&](OpBuilder &b, Location loc, Value dy) {
        auto input = tensorType(getInput());
        Type element = getElementTypeOrSelf(dy.getType());
        auto full = input.clone(element);
        Value x = castTo(b, loc, getInput(), full);
        Value max = spreadOverAxes(
            b, loc, castTo(b, loc, getResult(), tensorType(getResult()).clone(element)),
            input, getAxes());
        Value ones = broadcastTo(b, loc, scalar(b, loc, element, 1.0), full);
        Value below = ReluGradOp::create(b, loc, full, ones,
                                         binary<SubOp>(b, loc, max, x), nullptr);
        Value mask = binary<SubOp>(b, loc, ones, below);
        Value count = ReduceSumOp::create(
            b, loc, keptDims(input, getAxes(), element), mask,
            b.getDenseI64ArrayAttr(getAxes()), b.getUnitAttr(), nullptr);
        Value share = binary<DivOp>(b, loc, mask, broadcastTo(b, loc, count, full));
        return binary<MulOp>(b, loc, spreadOverAxes(b, loc, dy, input, getAxes()),
                             share);
      });
}

//===----------------------------------------------------------------------===//
// Contraction
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  Value dy = dys[0];
  if (!dy)
    return success();
  Value a = getLhs(), w = getRhs();
  bool ta = getTransposeLhs(), tw = getTransposeRhs();
  auto at = tensorType(a), wt = tensorType(w), yt = tensorType(getResult());
  Type element = getElementTypeOrSelf(a.getType());
  dy = castTo(b, getLoc(), dy, yt.clone(element));
  UnitAttr unit = b.getUnitAttr();
  auto flag = [&](bool f) { return f ? unit : UnitAttr(); };
  auto matmul = [&](Location loc, Value l, Value r, bool tl, bool tr,
                    ArrayRef<int64_t> shape) -> Value {
    return MatmulOp::create(b, loc, RankedTensorType::get(shape, element), l,
                            r, flag(tl), flag(tr), nullptr);
  };
  // The result's matrix dimensions and batch.
  int64_t rank = yt.getRank();
  SmallVector<int64_t> batch(yt.getShape().drop_back(2));
  int64_t m = yt.getDimSize(rank - 2), n = yt.getDimSize(rank - 1);
  int64_t k = ta ? at.getDimSize(at.getRank() - 2)
                 : at.getDimSize(at.getRank() - 1);
  auto withBatch = [&](int64_t rows, int64_t cols) {
    SmallVector<int64_t> shape(batch);
    shape.push_back(rows);
    shape.push_back(cols);
    return shape;
  };
  int64_t rows = std::accumulate(batch.begin(), batch.end(), int64_t(1),
                                 std::multiplies<int64_t>()) * m;

  if (wanted[0]) {
    Location loc = adjointLoc(*this, "grad_lhs");
    // A = op(A) [M, K]; dop(A) = dy @ op(W)^T.
    Value d = ta ? matmul(loc, w, dy, tw, true, withBatch(k, m))
                 : matmul(loc, dy, w, false, !tw, withBatch(m, k));
    out[0] = reduceToShape(b, loc, d, at);
  }
  if (wanted[1]) {
    Location loc = adjointLoc(*this, "grad_rhs");
    // dop(W) = op(A)^T @ dy. A weight shared by every matrix of a batched
    // activation: fold the batch into the rows (one large GEMM, no batched
    // product to sum afterwards), as a hand-written backward pass does.
    bool foldBatch = wt.getRank() == 2 && at.getRank() == rank && rank > 2 &&
                     !ta && at.getShape().drop_back(2) == ArrayRef(batch);
    if (foldBatch) {
      Value a2 = ReshapeOp::create(b, loc,
                                   RankedTensorType::get({rows, k}, element), a);
      Value dy2 = ReshapeOp::create(
          b, loc, RankedTensorType::get({rows, n}, element), dy);
      out[1] = tw ? matmul(loc, dy2, a2, true, false, {n, k})
                  : matmul(loc, a2, dy2, true, false, {k, n});
    } else {
      Value d = tw ? matmul(loc, dy, a, true, ta, withBatch(n, k))
                   : matmul(loc, a, dy, !ta, false, withBatch(k, n));
      out[1] = reduceToShape(b, loc, d, wt);
    }
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

LogicalResult TransposeOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  return unaryAdjoint(
      *this, b, dys, wanted, out, [&](OpBuilder &b, Location loc, Value dy) {
        ArrayRef<int64_t> perm = getPermutation();
        SmallVector<int64_t> inverse(perm.size());
        for (auto [i, p] : llvm::enumerate(perm))
          inverse[p] = i;
        return TransposeOp::create(
            b, loc, tensorType(getInput()).clone(getElementTypeOrSelf(dy)), dy,
            b.getDenseI64ArrayAttr(inverse));
      });
}

LogicalResult ReshapeOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return ReshapeOp::create(
                            b, loc,
                            tensorType(getInput()).clone(
                                getElementTypeOrSelf(dy)),
                            dy);
                      });
}

LogicalResult BroadcastToOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                           ArrayRef<bool> wanted,
                                           SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return reduceToShape(
                            b, loc, dy,
                            tensorType(getInput()).clone(
                                getElementTypeOrSelf(dy)));
                      });
}

LogicalResult ConcatOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  Value dy = dys[0];
  if (!dy)
    return success();
  int64_t axis = getAxis(), offset = 0;
  int64_t rank = tensorType(dy).getRank();
  for (auto [k, input] : llvm::enumerate(getInputs())) {
    auto type = tensorType(input);
    if (wanted[k]) {
      Location loc = adjointLoc(*this, "grad_" + std::to_string(k));
      SmallVector<int64_t> offsets(rank, 0);
      offsets[axis] = offset;
      out[k] = SliceOp::create(
          b, loc, type.clone(getElementTypeOrSelf(dy)), dy,
          b.getDenseI64ArrayAttr(offsets),
          b.getDenseI64ArrayAttr(type.getShape()), nullptr);
    }
    offset += type.getDimSize(axis);
  }
  return success();
}

LogicalResult SliceOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                     ArrayRef<bool> wanted,
                                     SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        return SliceGradOp::create(
                            b, loc,
                            tensorType(getInput()).clone(
                                getElementTypeOrSelf(dy)),
                            dy, getOffsetsAttr(), getStridesAttr());
                      });
}

LogicalResult SliceGradOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [&](OpBuilder &b, Location loc, Value dy) {
                        auto grad = tensorType(getGrad());
                        return SliceOp::create(
                            b, loc, grad.clone(getElementTypeOrSelf(dy)), dy,
                            getOffsetsAttr(),
                            b.getDenseI64ArrayAttr(grad.getShape()),
                            getStridesAttr());
                      });
}

LogicalResult GatherOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  if (!dys[0] || !wanted[0])
    return success();
  // Rows gathered several times add up.
  out[0] = GatherGradOp::create(b, adjointLoc(*this, "grad"),
                                getTable().getType(), dys[0], getIds(),
                                nullptr);
  return success();
}

LogicalResult CastOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                    ArrayRef<bool> wanted,
                                    SmallVectorImpl<Value> &out) {
  return unaryAdjoint(*this, b, dys, wanted, out,
                      [](OpBuilder &, Location, Value dy) { return dy; });
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

LogicalResult SoftmaxCrossEntropyOp::buildAdjoints(
    OpBuilder &b, ArrayRef<Value> dys, ArrayRef<bool> wanted,
    SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  if (!dys[0] || !wanted[0])
    return success();
  // The loss's adjoint is the seed of the backward pass, which loss scaling
  // multiplies by the scale.
  out[0] = SoftmaxCrossEntropyGradOp::create(b, adjointLoc(*this, "grad"),
                                             getLogits().getType(), dys[0],
                                             getLogits(), getLabels(), nullptr);
  return success();
}

LogicalResult MseLossOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                       ArrayRef<bool> wanted,
                                       SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  if (!dys[0] || !llvm::is_contained(wanted, true))
    return success();
  Location loc = adjointLoc(*this, "grad");
  Value dPrediction = MseLossGradOp::create(b, loc, getPrediction().getType(),
                                            dys[0], getPrediction(),
                                            getTarget(), nullptr);
  if (wanted[0])
    out[0] = dPrediction;
  if (wanted[1])
    out[1] = castTo(b, loc, neg(b, loc, dPrediction), getTarget().getType());
  return success();
}

//===----------------------------------------------------------------------===//
// Convolution, pooling and batch norm
//===----------------------------------------------------------------------===//

LogicalResult Conv2dOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                      ArrayRef<bool> wanted,
                                      SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  Value dy = dys[0];
  if (!dy)
    return success();
  // The gradients read dy in the operands' storage type, as matmul's do.
  Type data = getElementTypeOrSelf(getInput().getType());
  if (getElementTypeOrSelf(dy.getType()) != data)
    dy = castTo(b, adjointLoc(*this, "grad"), dy, tensorType(dy).clone(data));
  if (wanted[0])
    out[0] = Conv2dGradInputOp::create(
        b, adjointLoc(*this, "grad_input"), getInput().getType(), dy,
        getFilter(), getStridesAttr(), getPaddingAttr(), getDilationsAttr(),
        getGroupsAttr(), getChannelsLastAttr(), nullptr);
  if (wanted[1])
    out[1] = Conv2dGradFilterOp::create(
        b, adjointLoc(*this, "grad_filter"), getFilter().getType(), dy,
        getInput(), getStridesAttr(), getPaddingAttr(), getDilationsAttr(),
        getGroupsAttr(), getChannelsLastAttr(), nullptr);
  return success();
}

LogicalResult MaxPool2dOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  if (!dys[0] || !wanted[0])
    return success();
  out[0] = MaxPool2dGradOp::create(
      b, adjointLoc(*this, "grad"), getInput().getType(), dys[0], getInput(),
      getWindowAttr(), getStridesAttr(), getPaddingAttr(),
      getChannelsLastAttr(), nullptr);
  return success();
}

LogicalResult AvgPool2dOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  if (!dys[0] || !wanted[0])
    return success();
  out[0] = AvgPool2dGradOp::create(
      b, adjointLoc(*this, "grad"), getInput().getType(), dys[0],
      getWindowAttr(), getStridesAttr(), getPaddingAttr(),
      getChannelsLastAttr(), getCountIncludePadAttr(), nullptr);
  return success();
}

LogicalResult BatchNormOp::buildAdjoints(OpBuilder &b, ArrayRef<Value> dys,
                                         ArrayRef<bool> wanted,
                                         SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  // Only the input, scale and bias have gradients; the running statistics
  // are state.
  if (!dys[0] || !(wanted[0] || wanted[1] || wanted[2]))
    return success();
  auto grad = BatchNormGradOp::create(
      b, adjointLoc(*this, "grad"), getInput().getType(), getScale().getType(),
      getBias().getType(), dys[0], getInput(), getScale(), getMean(),
      getRstd(), getChannelsLastAttr(), nullptr);
  for (unsigned k = 0; k < 3; ++k)
    if (wanted[k])
      out[k] = grad->getResult(k);
  return success();
}

LogicalResult BatchNormInferenceOp::buildAdjoints(OpBuilder &b,
                                                  ArrayRef<Value> dys,
                                                  ArrayRef<bool> wanted,
                                                  SmallVectorImpl<Value> &out) {
  noAdjoints(*this, out);
  Value dy = dys[0];
  if (!dy || !llvm::is_contained(wanted, true))
    return success();
  // With fixed statistics the op is affine per channel:
  // y = (x - mean) * inv * scale + bias, inv = 1 / sqrt(variance + eps).
  Location loc = adjointLoc(*this, "grad");
  RankedTensorType input = getInput().getType();
  RankedTensorType channels = getScale().getType();
  int64_t c = channels.getDimSize(0);
  SmallVector<int64_t> spread = getChannelsLast()
                                    ? SmallVector<int64_t>{c}
                                    : SmallVector<int64_t>{c, 1, 1};
  Type compute = getElementTypeOrSelf(dy.getType());
  auto perChannel = [&](Value v) {
    v = castTo(b, loc, v, tensorType(v).clone(compute));
    return ReshapeOp::create(b, loc, RankedTensorType::get(spread, compute),
                             v)
        .getResult();
  };
  auto toChannels = [&](Value v, Type type) {
    v = reduceToShape(b, loc, v, RankedTensorType::get(spread, compute));
    v = ReshapeOp::create(b, loc, RankedTensorType::get({c}, compute), v);
    return castTo(b, loc, v, type);
  };
  Value variance = getVariance();
  Value eps = scalar(b, loc, getElementTypeOrSelf(variance.getType()),
                     getEpsilon().convertToDouble());
  Value inv = binary<AddOp>(b, loc, variance, eps);
  inv = RsqrtOp::create(b, loc, inv.getType(), inv, nullptr);
  if (wanted[0]) {
    Value k = binary<MulOp>(b, loc, castTo(b, loc, getScale(), inv.getType()),
                            inv);
    Value dx = binary<MulOp>(b, loc, dy, perChannel(k));
    out[0] = castTo(b, loc, dx, input);
  }
  if (wanted[1]) {
    Value centred = binary<SubOp>(
        b, loc, castTo(b, loc, getInput(), tensorType(dy)),
        perChannel(getMean()));
    Value normalised = binary<MulOp>(b, loc, centred, perChannel(inv));
    out[1] = toChannels(binary<MulOp>(b, loc, dy, normalised), channels);
  }
  if (wanted[2])
    out[2] = toChannels(dy, getBias().getType());
  // The statistics, when they are computed values: dL/dmean = -sum(dy * k),
  // dL/dvariance = -1/2 sum(dy * (x - mean) * k * inv^2), k = scale * inv.
  if (wanted[3] || wanted[4]) {
    Value k = binary<MulOp>(b, loc, castTo(b, loc, getScale(), inv.getType()),
                            inv);
    Value dyk = binary<MulOp>(b, loc, dy, perChannel(k));
    if (wanted[3])
      out[3] = toChannels(neg(b, loc, dyk), getMean().getType());
    if (wanted[4]) {
      Value centred = binary<SubOp>(
          b, loc, castTo(b, loc, getInput(), tensorType(dy)),
          perChannel(getMean()));
      Value inv2 = scaleBy(b, loc, binary<MulOp>(b, loc, inv, inv), -0.5);
      Value v = binary<MulOp>(b, loc, binary<MulOp>(b, loc, dyk, centred),
                              perChannel(inv2));
      out[4] = toChannels(v, getVariance().getType());
    }
  }
  return success();
}
