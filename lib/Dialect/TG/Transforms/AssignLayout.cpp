//===- AssignLayout.cpp - the tg-assign-layout pass -----------------------===//
//
// Gives the convolutions, pooling and batch-norm ops of each function one
// activation layout (NCHW or NHWC), then moves the transposes this needs
// out of the way: they sink through layout-agnostic elementwise ops, are
// absorbed by reductions, become reshapes where they move only size-1
// dimensions, and cancel in back-to-back pairs (TransposeOp's fold); CSE
// then merges transposes of one value. What is left are transposes at the
// edges of the converted region, which the report counts.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Support/Json.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Dominance.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/JSON.h"

namespace mp::tg {
#define GEN_PASS_DEF_TGASSIGNLAYOUT
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp;
using namespace mp::tg;

namespace {

constexpr int64_t kToLast[] = {0, 2, 3, 1};  // NCHW -> NHWC
constexpr int64_t kToFirst[] = {0, 3, 1, 2}; // NHWC -> NCHW

/// Whether `t` changes layout (NCHW <-> NHWC): the only transposes the
/// pass moves, so that a model's own transposes (attention heads) stay
/// where they are.
bool isLayoutTranspose(TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPermutation();
  return perm == ArrayRef<int64_t>(kToLast) ||
         perm == ArrayRef<int64_t>(kToFirst);
}

/// The ops whose activations have a layout (a `channels_last` attribute).
bool hasLayout(Operation *op) {
  return isa<Conv2dOp, Conv2dGradInputOp, Conv2dGradFilterOp, MaxPool2dOp,
             AvgPool2dOp, MaxPool2dGradOp, AvgPool2dGradOp, BatchNormOp,
             BatchNormInferenceOp, BatchNormGradOp>(op);
}

bool isChannelsLast(Operation *op) {
  return op->hasAttr("channels_last");
}

/// Whether operand `i` of a layout op is an activation (filters are OIHW
/// in both layouts; batch-norm statistics are per channel).
bool isActivationOperand(Operation *op, unsigned i) {
  if (isa<Conv2dOp, Conv2dGradInputOp>(op))
    return i == 0;
  auto type = dyn_cast<RankedTensorType>(op->getOperand(i).getType());
  return type && type.getRank() == 4;
}

bool isActivationResult(Operation *op, unsigned i) {
  if (isa<Conv2dGradFilterOp>(op))
    return false;
  auto type = dyn_cast<RankedTensorType>(op->getResult(i).getType());
  return type && type.getRank() == 4;
}

/// `type` with its dimensions permuted as a transpose by `perm` would.
RankedTensorType permuted(RankedTensorType type, ArrayRef<int64_t> perm) {
  SmallVector<int64_t> shape;
  for (int64_t p : perm)
    shape.push_back(type.getDimSize(p));
  return type.clone(shape);
}

SmallVector<int64_t> inverse(ArrayRef<int64_t> perm) {
  SmallVector<int64_t> inv(perm.size());
  for (auto [i, p] : llvm::enumerate(perm))
    inv[p] = int64_t(i);
  return inv;
}

/// Rewrites a layout op to `toLast` (NHWC) or NCHW: transposed activation
/// operands in, activation results transposed back.
void convert(Operation *op, bool toLast, OpBuilder &b) {
  ArrayRef<int64_t> in = toLast ? kToLast : kToFirst;
  ArrayRef<int64_t> out = toLast ? kToFirst : kToLast;
  b.setInsertionPoint(op);
  SmallVector<Value> operands(op->getOperands());
  for (unsigned i = 0, e = op->getNumOperands(); i < e; ++i)
    if (isActivationOperand(op, i))
      operands[i] = TransposeOp::create(b, op->getLoc(), operands[i], in);
  Operation *flipped = b.clone(*op);
  flipped->setOperands(operands);
  if (toLast)
    flipped->setAttr("channels_last", b.getUnitAttr());
  else
    flipped->removeAttr("channels_last");
  b.setInsertionPointAfter(flipped);
  for (unsigned i = 0, e = op->getNumResults(); i < e; ++i) {
    Value result = flipped->getResult(i);
    if (isActivationResult(op, i)) {
      result.setType(permuted(cast<RankedTensorType>(result.getType()), in));
      result = TransposeOp::create(b, op->getLoc(), result, out);
    }
    op->getResult(i).replaceAllUsesWith(result);
  }
  op->erase();
}

/// Ops that compute each element from the same element of their operands,
/// so that a transpose commutes with them. Dropout and random numbers are
/// not among them: what they draw depends on the element's position.
bool isLayoutAgnostic(Operation *op) {
  return isa<AddOp, SubOp, MulOp, DivOp, MaximumOp, MinimumOp, NegOp, ReluOp,
             TanhOp, SigmoidOp, ExpOp, LogOp, SqrtOp, RsqrtOp, SquareOp, ErfOp,
             SinOp, CosOp, GeluOp, ReluGradOp, TanhGradOp, SigmoidGradOp,
             GeluGradOp, CastOp>(op);
}

/// Whether `t` broadcasts against a tensor of any layout unchanged.
bool broadcastsAnyway(Type t) {
  return llvm::all_of(cast<RankedTensorType>(t).getShape(),
                      [](int64_t d) { return d == 1; });
}

/// `type` as an operand of a rank-`rank` elementwise op sees it: numpy's
/// broadcasting aligns the trailing dimensions, so a lower rank gains
/// leading 1s.
RankedTensorType expanded(RankedTensorType type, int64_t rank) {
  SmallVector<int64_t> shape(rank - type.getRank(), 1);
  llvm::append_range(shape, type.getShape());
  return type.clone(shape);
}

/// Whether operand `v` of a rank-`inv.size()` elementwise op can be had
/// permuted by `inv` without moving data: a (broadcasting) operand where
/// only size-1 dimensions move, which is a reshape; a broadcast of such a
/// tensor; a splat constant; or a layout-agnostic op whose operands can
/// (the gradient of a global average pool: a broadcast, a cast and a
/// scaling). Such an op is copied for this use, so that its other users
/// keep the layout they read.
bool permutesForFree(Value v, ArrayRef<int64_t> inv, int depth = 0) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = int64_t(inv.size());
  if (type.getRank() > rank)
    return false;
  if (broadcastsAnyway(type) ||
      isReshapeTranspose(expanded(type, rank).getShape(), inv))
    return true;
  if (type.getRank() != rank)
    return false;
  if (auto broadcast = v.getDefiningOp<BroadcastToOp>()) {
    auto source = cast<RankedTensorType>(broadcast.getInput().getType());
    return source.getRank() == rank &&
           isReshapeTranspose(source.getShape(), inv);
  }
  if (auto constant = v.getDefiningOp<ConstantOp>()) {
    auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
    return dense && dense.isSplat();
  }
  Operation *op = v.getDefiningOp();
  if (!op || depth == 8 || !isLayoutAgnostic(op))
    return false;
  return llvm::all_of(op->getOperands(), [&](Value operand) {
    return permutesForFree(operand, inv, depth + 1);
  });
}

/// Operand `v` permuted by `inv`, where permutesForFree(v, inv).
Value permuteForFree(PatternRewriter &rewriter, Location loc, Value v,
                     ArrayRef<int64_t> inv) {
  auto type = cast<RankedTensorType>(v.getType());
  int64_t rank = int64_t(inv.size());
  if (broadcastsAnyway(type))
    return v;
  RankedTensorType target = permuted(expanded(type, rank), inv);
  if (isReshapeTranspose(expanded(type, rank).getShape(), inv))
    return ReshapeOp::create(rewriter, loc, target, v);
  if (auto broadcast = v.getDefiningOp<BroadcastToOp>()) {
    auto source = cast<RankedTensorType>(broadcast.getInput().getType());
    Value reshaped = ReshapeOp::create(rewriter, loc, permuted(source, inv),
                                       broadcast.getInput());
    return BroadcastToOp::create(rewriter, loc, target, reshaped);
  }
  if (auto constant = v.getDefiningOp<ConstantOp>())
    return ConstantOp::create(
        rewriter, loc, target,
        cast<DenseElementsAttr>(constant.getValue()).reshape(target));
  Operation *op = v.getDefiningOp();
  SmallVector<Value> operands;
  for (Value operand : op->getOperands())
    operands.push_back(permuteForFree(rewriter, loc, operand, inv));
  Operation *copy = rewriter.clone(*op);
  copy->setOperands(operands);
  copy->getResult(0).setType(target);
  return copy->getResult(0);
}

/// op(transpose(a, p), transpose(b, p)) -> transpose(op(a, b), p) for a
/// layout-agnostic op whose other operands permute for free (scalars,
/// per-channel scales, broadcasts).
struct SinkTranspose : RewritePattern {
  SinkTranspose(MLIRContext *ctx)
      : RewritePattern(MatchAnyOpTypeTag(), /*benefit=*/1, ctx) {}

  LogicalResult matchAndRewrite(Operation *op,
                                PatternRewriter &rewriter) const override {
    if (!isLayoutAgnostic(op) || op->getNumResults() != 1)
      return failure();
    auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!resultType)
      return failure();
    // The permutation of a transposed operand of the result's full shape.
    std::optional<SmallVector<int64_t>> perm;
    for (Value v : op->getOperands())
      if (auto t = v.getDefiningOp<TransposeOp>())
        if (isLayoutTranspose(t) &&
            t.getType().getShape() == resultType.getShape()) {
          perm.emplace(t.getPermutation());
          break;
        }
    if (!perm)
      return failure();
    SmallVector<int64_t> inv = inverse(*perm);
    // The input of `v`'s transpose by `perm`, if it is one.
    auto untransposed = [&](Value v) -> Value {
      auto t = v.getDefiningOp<TransposeOp>();
      return t && t.getPermutation() == ArrayRef<int64_t>(*perm)
                 ? t.getInput()
                 : Value();
    };
    // Check every operand before creating anything.
    for (Value v : op->getOperands())
      if (!untransposed(v) && !permutesForFree(v, inv))
        return failure();
    SmallVector<Value> operands;
    for (Value v : op->getOperands()) {
      Value input = untransposed(v);
      if (!input)
        input = permuteForFree(rewriter, op->getLoc(), v, inv);
      operands.push_back(input);
    }
    Operation *sunk = rewriter.clone(*op);
    sunk->setOperands(operands);
    sunk->getResult(0).setType(permuted(resultType, inv));
    rewriter.replaceOpWithNewOp<TransposeOp>(op, sunk->getResult(0), *perm);
    return success();
  }
};

/// reduce(transpose(x, p), axes) -> reduce(x, p(axes)), where the kept
/// dimensions stay in order (or are kept as size 1, and the transpose
/// sinks below the reduction).
template <typename Reduce>
struct ReduceThroughTranspose : OpRewritePattern<Reduce> {
  using OpRewritePattern<Reduce>::OpRewritePattern;

  LogicalResult matchAndRewrite(Reduce op,
                                PatternRewriter &rewriter) const override {
    auto t = op.getInput().template getDefiningOp<TransposeOp>();
    if (!t || !isLayoutTranspose(t))
      return failure();
    ArrayRef<int64_t> perm = t.getPermutation();
    SmallVector<int64_t> axes;
    for (int64_t a : op.getAxes())
      axes.push_back(perm[a]);
    llvm::sort(axes);
    if (!op.getKeepDims()) {
      int64_t last = -1;
      for (int64_t i = 0, e = int64_t(perm.size()); i < e; ++i) {
        if (llvm::is_contained(op.getAxes(), i))
          continue;
        if (perm[i] < last)
          return failure();
        last = perm[i];
      }
    }
    auto reduced = cast<Reduce>(rewriter.clone(*op));
    reduced.getInputMutable().assign(t.getInput());
    reduced.setAxes(axes);
    if (!op.getKeepDims()) {
      rewriter.replaceOp(op, reduced.getResult());
      return success();
    }
    reduced.getResult().setType(
        permuted(op.getType(), inverse(perm)));
    rewriter.replaceOpWithNewOp<TransposeOp>(op, reduced.getResult(), perm);
    return success();
  }
};

/// A transpose of a value that permutes for free: a reshape where it
/// moves only size-1 dimensions, or the broadcasts and elementwise ops
/// that make the value, rebuilt in the new order.
struct TransposeForFree : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp op,
                                PatternRewriter &rewriter) const override {
    if (!isLayoutTranspose(op) ||
        !permutesForFree(op.getInput(), op.getPermutation()))
      return failure();
    rewriter.replaceOp(op, permuteForFree(rewriter, op.getLoc(), op.getInput(),
                                          op.getPermutation()));
    return success();
  }
};

/// The transposes of rank-4 tensors in `fn`, and their elements.
std::pair<int64_t, int64_t> countTransposes(func::FuncOp fn) {
  int64_t count = 0, elements = 0;
  fn.walk([&](TransposeOp t) {
    if (t.getType().getRank() != 4)
      return;
    ++count;
    elements += t.getType().getNumElements();
  });
  return {count, elements};
}

struct TGAssignLayoutPass
    : public mp::tg::impl::TGAssignLayoutBase<TGAssignLayoutPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (layout != "auto" && layout != "nhwc" && layout != "nchw" &&
        layout != "off") {
      module.emitError() << "tg-assign-layout: layout '" << layout
                         << "' is not auto, nhwc, nchw or off";
      return signalPassFailure();
    }
    if (target != "cpu" && target != "cuda") {
      module.emitError() << "tg-assign-layout: target '" << target
                         << "' is not cpu or cuda";
      return signalPassFailure();
    }
    llvm::json::Array functions;
    for (auto fn : module.getOps<func::FuncOp>()) {
      SmallVector<Operation *> ops;
      fn.walk([&](Operation *op) {
        if (hasLayout(op))
          ops.push_back(op);
      });
      if (ops.empty() || layout == "off")
        continue;
      bool toLast;
      std::string reason;
      if (layout == "auto") {
        toLast = target == "cpu";
        reason = toLast ? "the CPU backend's convolutions (oneDNN) run NHWC "
                          "directly and NCHW as im2col GEMMs"
                        : "the CUDA backend's convolutions are direct "
                          "kernels, coalesced in NCHW; NHWC waits for cuDNN's "
                          "tensor-core kernels";
      } else {
        toLast = layout == "nhwc";
        reason = "layout=" + layout.getValue();
      }
      auto [before, beforeElements] = countTransposes(fn);
      llvm::json::Array changed;
      OpBuilder b(fn.getContext());
      for (Operation *op : ops) {
        if (isChannelsLast(op) == toLast)
          continue;
        std::string loc;
        llvm::raw_string_ostream os(loc);
        op->getLoc().print(os);
        changed.push_back(llvm::json::Object{
            {"op", op->getName().getStringRef()},
            {"loc", loc},
            {"from", toLast ? "nchw" : "nhwc"},
            {"to", toLast ? "nhwc" : "nchw"}});
        convert(op, toLast, b);
      }
      RewritePatternSet patterns(fn.getContext());
      patterns.add<SinkTranspose, TransposeForFree,
                   ReduceThroughTranspose<ReduceSumOp>,
                   ReduceThroughTranspose<ReduceMeanOp>,
                   ReduceThroughTranspose<ReduceMaxOp>>(fn.getContext());
      if (failed(applyPatternsGreedily(fn, std::move(patterns)))) {
        fn.emitError() << "tg-assign-layout: moving the transposes did not "
                          "converge";
        return signalPassFailure();
      }
      // One transpose per value: the ops reading the input image each
      // got their own.
      IRRewriter rewriter(fn.getContext());
      DominanceInfo dominance(fn);
      eliminateCommonSubExpressions(rewriter, dominance, fn);
      auto [after, afterElements] = countTransposes(fn);
      functions.push_back(llvm::json::Object{
          {"function", fn.getSymName()},
          {"layout", toLast ? "nhwc" : "nchw"},
          {"reason", reason},
          {"changed", std::move(changed)},
          {"transposes",
           llvm::json::Object{{"before", before},
                              {"after", after},
                              {"elements_before", beforeElements},
                              {"elements_after", afterElements}}}});
    }
    if (reportFile.empty())
      return;
    llvm::json::Object report{{"layout", layout.getValue()},
                              {"target", target.getValue()},
                              {"functions", std::move(functions)}};
    if (llvm::Error e =
            writeJsonFile(reportFile, llvm::json::Value(std::move(report)))) {
      module.emitError() << "tg-assign-layout: report: "
                         << llvm::toString(std::move(e));
      return signalPassFailure();
    }
  }
};

} // namespace
