//===- RaiseDecomposedOps.cpp - the tg-raise-decomposed-ops pass ----------===//
//
// Greedy patterns that recognise the elementwise chains exporters write for
// GELU, softmax, log-softmax and layer norm, and replace each chain with
// the one tg op. Matching is structural: each pattern starts at the op the
// chain cannot do without (erf, tanh, the final division or subtraction,
// the first reduce_mean), checks every operand it expects, and requires
// intermediate values to have no other users, so a replacement never
// changes what another op sees.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace mp::tg {
#define GEN_PASS_DEF_TGRAISEDECOMPOSEDOPS
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp::tg;

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// The value of a constant holding one floating-point element.
std::optional<double> scalarValue(Value v) {
  auto c = v.getDefiningOp<ConstantOp>();
  if (!c)
    return std::nullopt;
  auto attr = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!attr || !isa<FloatType>(attr.getElementType()) ||
      attr.getNumElements() != 1)
    return std::nullopt;
  return (*attr.getValues<APFloat>().begin()).convertToDouble();
}

bool near(std::optional<double> value, double expected) {
  return value && std::fabs(*value - expected) <= 1e-4 * std::fabs(expected);
}

bool isScalar(Value v, double expected) {
  return near(scalarValue(v), expected);
}

/// The operand of binary op `op` other than `v`, if `v` is one of them.
Value otherOperand(Operation *op, Value v) {
  if (op->getOperand(0) == v)
    return op->getOperand(1);
  if (op->getOperand(1) == v)
    return op->getOperand(0);
  return {};
}

/// The only user of `v`, if it has exactly one use.
Operation *onlyUser(Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// The leaves of the product tree at `v`: operands of tg.mul (and the two
/// factors of tg.square) through intermediate values with one use each.
/// `ops` collects the multiplications.
void collectFactors(Value v, bool isRoot, SmallVectorImpl<Value> &factors,
                    SmallVectorImpl<Operation *> &ops, int depth = 0) {
  Operation *def = v.getDefiningOp();
  if (depth < 6 && def && (isRoot || v.hasOneUse())) {
    if (auto mul = dyn_cast<MulOp>(def)) {
      ops.push_back(mul);
      collectFactors(mul.getLhs(), false, factors, ops, depth + 1);
      collectFactors(mul.getRhs(), false, factors, ops, depth + 1);
      return;
    }
    if (auto square = dyn_cast<SquareOp>(def)) {
      ops.push_back(square);
      factors.push_back(square.getInput());
      factors.push_back(square.getInput());
      return;
    }
  }
  factors.push_back(v);
}

/// Whether `factors` are exactly `expected` values plus constants whose
/// product is `constant`, in any order.
bool isProductOf(ArrayRef<Value> factors, ArrayRef<Value> expected,
                 double constant) {
  SmallVector<Value> rest(expected);
  double c = 1.0;
  bool sawConstant = false;
  for (Value f : factors) {
    auto it = llvm::find(rest, f);
    if (it != rest.end()) {
      rest.erase(it);
      continue;
    }
    std::optional<double> value = scalarValue(f);
    if (!value)
      return false;
    c *= *value;
    sawConstant = true;
  }
  return rest.empty() && (sawConstant ? near(c, constant) : constant == 1.0);
}

/// Walks up the multiplications above `u` (each with `u`'s chain as its only
/// use) to the first product equal to `x * u * constant`, and returns it.
Operation *findProduct(Value u, Value x, double constant,
                       SmallVectorImpl<Operation *> &matched) {
  Value cur = u;
  for (int level = 0; level < 4; ++level) {
    Operation *user = onlyUser(cur);
    if (!isa_and_nonnull<MulOp>(user))
      return nullptr;
    cur = user->getResult(0);
    SmallVector<Value> factors;
    SmallVector<Operation *> ops;
    collectFactors(cur, /*isRoot=*/true, factors, ops);
    if (isProductOf(factors, {x, u}, constant)) {
      matched.append(ops.begin(), ops.end());
      return user;
    }
  }
  return nullptr;
}

/// The name for the op replacing `ops`: the module path their names share
/// ("/encoder/layer.0/act/Div", ".../Erf" -> "/encoder/layer.0/act/Gelu"),
/// else `root`'s name with the op appended; the file position of `root`.
Location raisedLoc(ArrayRef<Operation *> ops, Operation *root,
                   StringRef opName) {
  SmallVector<StringRef> names;
  for (Operation *op : ops)
    if (auto name = dyn_cast<NameLoc>(op->getLoc()))
      names.push_back(name.getName().getValue());
  Location child = root->getLoc();
  if (auto name = dyn_cast<NameLoc>(child))
    child = name.getChildLoc();
  MLIRContext *ctx = root->getContext();
  if (names.empty())
    return root->getLoc();
  StringRef prefix = names.front();
  for (StringRef n : names) {
    size_t k = 0;
    while (k < prefix.size() && k < n.size() && prefix[k] == n[k])
      ++k;
    prefix = prefix.take_front(k);
  }
  size_t slash = prefix.find_last_of('/');
  std::string name = slash != StringRef::npos && slash > 0
                         ? (prefix.take_front(slash) + "/" + opName).str()
                         : (names.back() + "." + opName.lower()).str();
  return NameLoc::get(StringAttr::get(ctx, name), child);
}

//===----------------------------------------------------------------------===//
// GELU
//===----------------------------------------------------------------------===//

/// `1 + t` with `t` used only there: returns the sum.
Value onePlus(Value t, SmallVectorImpl<Operation *> &matched) {
  auto add = dyn_cast_or_null<AddOp>(onlyUser(t));
  if (!add || !isScalar(otherOperand(add, t), 1.0) ||
      add.getType() != t.getType())
    return {};
  matched.push_back(add);
  return add.getResult();
}

struct RaiseErfGelu : OpRewritePattern<ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ErfOp erf,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> matched{erf};
    // x / sqrt(2) or x * (1 / sqrt(2)).
    Operation *scale = erf.getInput().getDefiningOp();
    if (!scale || !erf.getInput().hasOneUse())
      return failure();
    Value x;
    if (auto div = dyn_cast<DivOp>(scale)) {
      if (isScalar(div.getRhs(), M_SQRT2))
        x = div.getLhs();
    } else if (auto mul = dyn_cast<MulOp>(scale)) {
      if (isScalar(mul.getRhs(), M_SQRT1_2))
        x = mul.getLhs();
      else if (isScalar(mul.getLhs(), M_SQRT1_2))
        x = mul.getRhs();
    }
    if (!x || x.getType() != erf.getType())
      return failure();
    matched.push_back(scale);
    Value u = onePlus(erf.getResult(), matched);
    if (!u)
      return failure();
    Operation *root = findProduct(u, x, 0.5, matched);
    if (!root || root->getResult(0).getType() != x.getType())
      return failure();
    // The location is read before the replacement erases `root`.
    Location loc = raisedLoc(matched, root, "Gelu");
    rewriter.replaceOpWithNewOp<GeluOp>(root, x.getType(), x, UnitAttr(),
                                        nullptr)
        ->setLoc(loc);
    return success();
  }
};

struct RaiseTanhGelu : OpRewritePattern<TanhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TanhOp tanh,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> matched{tanh};
    // sqrt(2/pi) * (x + 0.044715 x^3).
    auto outer = tanh.getInput().getDefiningOp<MulOp>();
    if (!outer || !tanh.getInput().hasOneUse())
      return failure();
    constexpr double kSqrt2OverPi = 0.79788456080286535588;
    Value inner;
    if (isScalar(outer.getLhs(), kSqrt2OverPi))
      inner = outer.getRhs();
    else if (isScalar(outer.getRhs(), kSqrt2OverPi))
      inner = outer.getLhs();
    auto sum = inner ? inner.getDefiningOp<AddOp>() : AddOp();
    if (!sum || !inner.hasOneUse())
      return failure();
    matched.append({outer, sum});
    // One addend is x, the other 0.044715 x^3.
    for (auto [x, cubic] : {std::pair(sum.getLhs(), sum.getRhs()),
                            std::pair(sum.getRhs(), sum.getLhs())}) {
      SmallVector<Value> factors;
      SmallVector<Operation *> ops;
      if (!cubic.hasOneUse() || x.getType() != tanh.getType())
        continue;
      collectFactors(cubic, /*isRoot=*/true, factors, ops);
      if (!isProductOf(factors, {x, x, x}, 0.044715))
        continue;
      matched.append(ops.begin(), ops.end());
      Value u = onePlus(tanh.getResult(), matched);
      if (!u)
        return failure();
      Operation *root = findProduct(u, x, 0.5, matched);
      if (!root || root->getResult(0).getType() != x.getType())
        return failure();
      Location loc = raisedLoc(matched, root, "Gelu");
      rewriter
          .replaceOpWithNewOp<GeluOp>(root, x.getType(), x,
                                      rewriter.getUnitAttr(), nullptr)
          ->setLoc(loc);
      return success();
    }
    return failure();
  }
};

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// The single axis of a keep-dims reduction of `input`, or nothing.
template <typename Op>
std::optional<int64_t> reducedAxis(Value v, Value input) {
  auto op = v.getDefiningOp<Op>();
  if (!op || op.getInput() != input || !op.getKeepDims() ||
      op.getAxes().size() != 1)
    return std::nullopt;
  return op.getAxes().front();
}

/// `z = x - reduce_max(x, axis)` (then x and the max op) or z itself.
Value stabilisedInput(Value z, int64_t axis,
                      SmallVectorImpl<Operation *> &matched) {
  if (auto sub = z.getDefiningOp<SubOp>()) {
    Value x = sub.getLhs();
    if (reducedAxis<ReduceMaxOp>(sub.getRhs(), x) == axis &&
        sub.getRhs().hasOneUse() && x.getType() == z.getType()) {
      matched.append({sub, sub.getRhs().getDefiningOp()});
      return x;
    }
  }
  return z;
}

/// `e = exp(z)` and `s = reduce_sum(e, axis)` with e used by s and one
/// more op: returns z and the axis.
std::optional<std::pair<Value, int64_t>>
expAndSum(Value e, Value s, SmallVectorImpl<Operation *> &matched) {
  auto exp = e.getDefiningOp<ExpOp>();
  if (!exp || exp.getInput().getType() != e.getType())
    return std::nullopt;
  std::optional<int64_t> axis = reducedAxis<ReduceSumOp>(s, e);
  if (!axis)
    return std::nullopt;
  matched.append({exp, s.getDefiningOp()});
  return std::pair(exp.getInput(), *axis);
}

struct RaiseSoftmax : OpRewritePattern<DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(DivOp div,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> matched{div};
    Value e = div.getLhs(), s = div.getRhs();
    // e feeds the sum and this division only; the sum only the division.
    if (!s.hasOneUse() || llvm::range_size(e.getUses()) != 2 ||
        e.getType() != div.getType())
      return failure();
    auto found = expAndSum(e, s, matched);
    if (!found)
      return failure();
    auto [z, axis] = *found;
    if (!z.hasOneUse())
      return failure();
    Value x = stabilisedInput(z, axis, matched);
    if (x.getType() != div.getType())
      return failure();
    Location loc = raisedLoc(matched, div, "Softmax");
    rewriter
        .replaceOpWithNewOp<SoftmaxOp>(div, div.getType(), x,
                                       rewriter.getI64IntegerAttr(axis),
                                       nullptr)
        ->setLoc(loc);
    return success();
  }
};

struct RaiseLogSoftmax : OpRewritePattern<SubOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SubOp sub,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> matched{sub};
    // z - log(reduce_sum(exp(z))).
    Value z = sub.getLhs();
    auto log = sub.getRhs().getDefiningOp<LogOp>();
    if (!log || !sub.getRhs().hasOneUse() || !log.getInput().hasOneUse())
      return failure();
    Value s = log.getInput();
    auto sum = s.getDefiningOp<ReduceSumOp>();
    if (!sum || !sum.getInput().hasOneUse())
      return failure();
    matched.push_back(log);
    auto found = expAndSum(sum.getInput(), s, matched);
    if (!found || found->first != z || llvm::range_size(z.getUses()) != 2)
      return failure();
    Value x = stabilisedInput(z, found->second, matched);
    if (x.getType() != sub.getType())
      return failure();
    Location loc = raisedLoc(matched, sub, "LogSoftmax");
    rewriter
        .replaceOpWithNewOp<LogSoftmaxOp>(
            sub, sub.getType(), x, rewriter.getI64IntegerAttr(found->second),
            nullptr)
        ->setLoc(loc);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Layer norm
//===----------------------------------------------------------------------===//

/// Whether `axes` are the trailing dimensions [first, rank).
bool isTrailing(ArrayRef<int64_t> axes, int64_t rank) {
  if (axes.empty())
    return false;
  for (auto [k, a] : llvm::enumerate(axes))
    if (a != rank - int64_t(axes.size()) + int64_t(k))
      return false;
  return true;
}

/// The shape of `v` without leading ones, when it broadcasts to the
/// normalised shape (so `v` does not vary over the batch dimensions).
std::optional<SmallVector<int64_t>>
normalisedShape(Value v, ArrayRef<int64_t> normalised) {
  ArrayRef<int64_t> shape = tensorType(v).getShape();
  while (shape.size() > normalised.size()) {
    if (shape.front() != 1)
      return std::nullopt;
    shape = shape.drop_front();
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    int64_t target = normalised[normalised.size() - shape.size() + d];
    if (shape[d] != 1 && shape[d] != target)
      return std::nullopt;
  }
  return SmallVector<int64_t>(shape);
}

/// `v` reshaped and broadcast to the normalised shape.
Value toNormalised(PatternRewriter &rewriter, Location loc, Value v,
                   ArrayRef<int64_t> shape, ArrayRef<int64_t> normalised) {
  auto type = tensorType(v);
  Value r = v;
  if (shape != type.getShape())
    r = ReshapeOp::create(rewriter, loc, type.clone(shape), v);
  if (shape != normalised)
    r = BroadcastToOp::create(rewriter, loc, type.clone(normalised), r);
  return r;
}

struct RaiseLayerNorm : OpRewritePattern<ReduceMeanOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReduceMeanOp mean,
                                PatternRewriter &rewriter) const override {
    SmallVector<Operation *> matched{mean};
    Value x = mean.getInput();
    auto xt = tensorType(x);
    ArrayRef<int64_t> axes = mean.getAxes();
    if (!mean.getKeepDims() || !isTrailing(axes, xt.getRank()) ||
        !mean.getResult().hasOneUse() ||
        tensorType(mean.getResult()).getElementType() != xt.getElementType())
      return failure();
    // d = x - mean, used by the variance and the normalisation.
    auto diff = dyn_cast<SubOp>(onlyUser(mean.getResult()));
    if (!diff || diff.getLhs() != x || diff.getType() != x.getType())
      return failure();
    matched.push_back(diff);
    Value d = diff.getResult();
    // var = reduce_mean(d^2) over the same axes.
    Operation *square = nullptr;
    ReduceMeanOp var;
    Operation *normalise = nullptr;
    for (Operation *user : d.getUsers()) {
      bool isSquare =
          isa<SquareOp>(user) ||
          (isa<MulOp>(user) && user->getOperand(0) == d &&
           user->getOperand(1) == d);
      if (isSquare) {
        if (square && square != user)
          return failure();
        square = user;
      } else if (isa<DivOp, MulOp>(user)) {
        if (normalise && normalise != user)
          return failure();
        normalise = user;
      } else {
        return failure();
      }
    }
    if (!square || !normalise || !square->getResult(0).hasOneUse())
      return failure();
    var = dyn_cast<ReduceMeanOp>(onlyUser(square->getResult(0)));
    if (!var || var.getAxes() != axes || !var.getKeepDims() ||
        !var.getResult().hasOneUse())
      return failure();
    matched.append({square, var});
    // var + eps, then sqrt and divide, or rsqrt and multiply.
    auto addEps = dyn_cast<AddOp>(onlyUser(var.getResult()));
    if (!addEps)
      return failure();
    std::optional<double> eps =
        scalarValue(otherOperand(addEps, var.getResult()));
    if (!eps || !(*eps > 0) || !addEps.getResult().hasOneUse())
      return failure();
    matched.push_back(addEps);
    Operation *root = onlyUser(addEps.getResult());
    if (auto sqrt = dyn_cast_or_null<SqrtOp>(root)) {
      auto div = dyn_cast<DivOp>(normalise);
      if (!div || div.getLhs() != d || div.getRhs() != sqrt.getResult() ||
          !sqrt.getResult().hasOneUse())
        return failure();
      matched.push_back(sqrt);
    } else if (auto rsqrt = dyn_cast_or_null<RsqrtOp>(root)) {
      if (!isa<MulOp>(normalise) ||
          otherOperand(normalise, d) != rsqrt.getResult() ||
          !rsqrt.getResult().hasOneUse())
        return failure();
      matched.push_back(rsqrt);
    } else {
      return failure();
    }
    matched.push_back(normalise);
    Value y = normalise->getResult(0);
    if (y.getType() != x.getType())
      return failure();
    // The optional affine part: * gamma, + beta, with parameters that
    // broadcast over the normalised dimensions only.
    SmallVector<int64_t> normalised(xt.getShape().drop_front(axes.front()));
    Value gamma, beta;
    std::optional<SmallVector<int64_t>> gammaShape, betaShape;
    Operation *last = normalise;
    if (auto mul = dyn_cast_or_null<MulOp>(onlyUser(y))) {
      Value g = otherOperand(mul, y);
      if (mul.getType() == x.getType() &&
          (gammaShape = normalisedShape(g, normalised))) {
        gamma = g;
        matched.push_back(mul);
        last = mul;
        y = mul.getResult();
      }
    }
    if (auto add = dyn_cast_or_null<AddOp>(onlyUser(y))) {
      Value b = otherOperand(add, y);
      if (add.getType() == x.getType() &&
          (betaShape = normalisedShape(b, normalised))) {
        beta = b;
        matched.push_back(add);
        last = add;
      }
    }
    // Everything matched: build.
    rewriter.setInsertionPoint(last);
    Location loc = raisedLoc(matched, last, "LayerNorm");
    if (gamma)
      gamma = toNormalised(rewriter, loc, gamma, *gammaShape, normalised);
    if (beta)
      beta = toNormalised(rewriter, loc, beta, *betaShape, normalised);
    auto paramType = xt.clone(normalised);
    auto filled = [&](double value) -> Value {
      return ConstantOp::create(
          rewriter, loc, paramType,
          DenseElementsAttr::get(
              paramType, rewriter.getFloatAttr(xt.getElementType(), value)));
    };
    if (!gamma)
      gamma = filled(1.0);
    if (!beta)
      beta = filled(0.0);
    Type stat = xt.getElementType().isF64() ? xt.getElementType()
                                            : rewriter.getF32Type();
    auto statType =
        RankedTensorType::get(xt.getShape().take_front(axes.front()), stat);
    auto ln = LayerNormOp::create(
        rewriter, loc,
        TypeRange{x.getType(), statType, statType}, x, gamma, beta,
        rewriter.getI64IntegerAttr(axes.front()),
        rewriter.getF32FloatAttr(static_cast<float>(*eps)), nullptr);
    rewriter.replaceOp(last, ln.getResult());
    return success();
  }
};

struct TGRaiseDecomposedOpsPass
    : public mp::tg::impl::TGRaiseDecomposedOpsBase<TGRaiseDecomposedOpsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RaiseErfGelu, RaiseTanhGelu, RaiseSoftmax, RaiseLogSoftmax,
                 RaiseLayerNorm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
