//===- FuseEpilogues.cpp - the tg-fuse-epilogues pass ---------------------===//
//
// Folds the scalings, the bias add, the residual add and the activation
// that follow a tg.matmul into one tg.fused_matmul, which the backends run
// as one GEMM with an epilogue (oneDNN post-ops, cuBLASLt epilogues). The
// chain grows one op at a time, in the order the epilogue applies them
// (activation(alpha * product + bias + residual)), and only through values
// with no other use, so nothing is computed twice. Operands multiplied by
// a constant scalar are read unscaled, the scalar moving into alpha, when
// every use of the product is a matmul's operand; a plain SGD update of
// the product (a weight gradient) becomes its epilogue, the parameter the
// residual and -lr the alpha. ReLU gradients are moved from the
// pre-activation to the ReLU's output, which tells x > 0 as well. A weight
// gradient sums its output-gradient operand along k as well where a
// tg.reduce_sum of that gradient is its layer's bias gradient. With
// report=<file>, every matmul's outcome is written as JSON.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/Transforms/PrecisionPolicy.h"
#include "mp/Support/Json.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ScopedPrinter.h"

#include <cmath>
#include <limits>
#include <optional>

namespace mp::tg {
#define GEN_PASS_DEF_TGFUSEEPILOGUES
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp;
using namespace mp::tg;

namespace {

/// The only user of `v` when it is in the block of `v`'s producer, or null.
Operation *soleUser(Value v) {
  if (!v.hasOneUse())
    return nullptr;
  Operation *user = *v.getUsers().begin();
  return user->getBlock() == v.getParentBlock() ? user : nullptr;
}

/// The operand of the binary `add` that is not `v` (the first if both are).
Value otherOperand(AddOp add, Value v) {
  return add.getLhs() == v ? add.getRhs() : add.getLhs();
}

/// The value of a one-element floating-point constant, or nothing.
std::optional<double> scalarConstant(Value v) {
  ElementsAttr value;
  if (!matchPattern(v, m_Constant(&value)) || value.getNumElements() != 1 ||
      !isa<FloatType>(value.getElementType()))
    return std::nullopt;
  auto first = value.try_value_begin<APFloat>();
  if (!first)
    return std::nullopt;
  double d = (**first).convertToDouble();
  return std::isfinite(d) ? std::optional<double>(d) : std::nullopt;
}

/// Whether `alpha` is one the runtime takes in every compute type: finite
/// in f32 (an f32 product rounds it to f32).
bool fitsAlpha(double alpha) {
  return std::fabs(alpha) <= double(std::numeric_limits<float>::max());
}

/// The largest scalar an operand scaling folds: two of them stay far inside
/// f32's range, whatever joins after them (each step checks fitsAlpha).
constexpr double kLargestOperandScale = 0x1p32;

/// `mul` as x * c with c a constant scalar and x of the product's type:
/// x and c, or nothing.
std::optional<std::pair<Value, double>> scaling(MulOp mul) {
  for (auto [x, c] : {std::pair(mul.getLhs(), mul.getRhs()),
                      std::pair(mul.getRhs(), mul.getLhs())})
    if (x.getType() == mul.getType())
      if (std::optional<double> s = scalarConstant(c))
        return std::pair(x, *s);
  return std::nullopt;
}

/// `v` through every reshape that produced it. A reshape keeps the
/// elements' order, so any two reshapes of that value with the same last
/// dimension hold the same rows, whatever the shapes in between (attention
/// regroups a projection's [tokens, 3 x width] gradient as [.., 3, width]
/// and back).
Value reshapeSource(Value v) {
  while (auto reshape = v.getDefiningOp<ReshapeOp>())
    v = reshape.getInput();
  return v;
}

/// `v` and every value reshaped from it, directly or through other
/// reshapes: the lowering makes each of them a view of v's buffer.
SmallVector<Value> reshapesOf(Value v) {
  SmallVector<Value> views = {v};
  for (size_t i = 0; i < views.size(); ++i)
    for (Operation *user : views[i].getUsers())
      if (auto reshape = dyn_cast<ReshapeOp>(user))
        views.push_back(reshape.getResult());
  return views;
}

/// The last dimension of a ranked tensor value, or nothing for a scalar.
std::optional<int64_t> lastDim(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 0)
    return std::nullopt;
  return type.getShape().back();
}

/// Whether `sum` adds up the rows of its input: every dimension but the
/// last reduced and dropped.
bool sumsRows(ReduceSumOp sum) {
  auto in = cast<RankedTensorType>(sum.getInput().getType());
  auto out = cast<RankedTensorType>(sum.getType());
  ArrayRef<int64_t> axes = sum.getAxes();
  if (in.getRank() < 2 || sum.getKeepDims() || out.getRank() != 1 ||
      out.getDimSize(0) != in.getShape().back() ||
      int64_t(axes.size()) != in.getRank() - 1)
    return false;
  for (auto [i, axis] : llvm::enumerate(axes))
    if (axis != int64_t(i))
      return false;
  return true;
}

/// Whether every use of `op`'s results comes after `point`, in its block.
bool usedOnlyAfter(Operation *op, Operation *point) {
  for (Operation *user : op->getUsers()) {
    Operation *at = point->getBlock()->findAncestorOpInBlock(*user);
    if (!at || at == point || !point->isBeforeInBlock(at))
      return false;
  }
  return true;
}

/// The epilogue found after one matmul.
struct Chain {
  MatmulOp matmul;
  /// The operands read in place of the matmul's (unscaled).
  Value lhs, rhs;
  double alpha = 1;
  Value bias, residual;
  Activation activation = Activation::none;
  /// The ops replaced, in order; the last one's result is the fused result.
  SmallVector<Operation *, 3> ops;
  /// tg.relu_grad operands to move from the pre-activation to the output.
  SmallVector<OpOperand *, 2> reluGrads;
  /// The sum along k of one operand that the fused op gives as bias_grad.
  ReduceSumOp biasGrad;
  MatmulOperand biasGradOf = MatmulOperand::lhs;

  Value result() {
    return ops.empty() ? Value(matmul.getResult()) : ops.back()->getResult(0);
  }
};

/// Whether the product accumulates precisely enough for its epilogue to be
/// computed in the same type: f32 or wider (the AMP pass's choice).
bool accumulatesWide(MatmulOp matmul) {
  FloatType compute = cast<PrecisionOpInterface>(matmul.getOperation())
                          .getComputeType();
  return compute && compute.getWidth() >= 32;
}

class FuseEpilogues
    : public mp::tg::impl::TGFuseEpiloguesBase<FuseEpilogues> {
public:
  using TGFuseEpiloguesBase::TGFuseEpiloguesBase;

  void runOnOperation() override {
    // A pass manager may run this instance again.
    totals = Totals();
    operandScalings.clear();
    scalars.clear();
    SmallVector<MatmulOp> matmuls;
    getOperation()->walk([&](MatmulOp m) { matmuls.push_back(m); });
    if (scale)
      findOperandScalings();
    llvm::json::Array decisions;
    for (MatmulOp m : matmuls) {
      Chain chain = grow(m);
      if (biasGrad && accumulatesWide(m))
        growBiasGrad(chain);
      bool fuses = !chain.ops.empty() || chain.lhs != m.getLhs() ||
                   chain.rhs != m.getRhs() || chain.biasGrad;
      if (!reportFile.empty())
        decisions.push_back(describe(chain, fuses));
      if (fuses)
        fuse(chain);
    }
    // The scalings read through: every use was a matmul's operand.
    for (MulOp mul : operandScalings)
      erase(mul);
    // The scalars folded into alphas, once nothing else reads them.
    for (Operation *c : scalars)
      if (c->use_empty())
        c->erase();
    if (!reportFile.empty() && failed(writeReport(std::move(decisions))))
      return signalPassFailure();
  }

private:
  /// What the report counts (the statistics are compiled out of release
  /// builds of LLVM).
  struct Totals {
    int64_t matmuls = 0, fused = 0, opsFolded = 0, biasGrads = 0;
  } totals;

  /// The report's entry for one matmul, written before it is fused.
  llvm::json::Object describe(Chain &c, bool fuses) {
    MatmulOp m = c.matmul;
    auto fn = m->getParentOfType<func::FuncOp>();
    FloatType compute =
        cast<PrecisionOpInterface>(m.getOperation()).getComputeType();
    llvm::json::Object entry{
        {"location", getReportLocation(m.getLoc())},
        {"function", fn ? fn.getSymName().str() : std::string()},
        {"result", llvm::to_string(m.getType())},
        {"compute", compute ? llvm::to_string(compute) : std::string("none")},
        {"fused", fuses}};
    ++totals.matmuls;
    if (!compute) {
      entry["reason"] = "the product has no floating-point compute type";
      return entry;
    }
    if (!accumulatesWide(m)) {
      entry["reason"] = "the product accumulates in " +
                        llvm::to_string(compute) +
                        "; an epilogue in that type would round where the "
                        "ops after it do not";
      return entry;
    }
    llvm::json::Array epilogue;
    for (Operation *op : c.ops) {
      StringRef role = TypeSwitch<Operation *, StringRef>(op)
                           .Case([](MulOp) { return "alpha"; })
                           .Case([&](AddOp add) {
                             return c.bias && (add.getLhs() == c.bias ||
                                               add.getRhs() == c.bias)
                                        ? "bias"
                                        : "residual";
                           })
                           .Case([](SgdUpdateOp) {
                             return "residual (the parameter) and alpha "
                                    "(-lr)";
                           })
                           .Default([](Operation *) { return "activation"; });
      epilogue.push_back(
          (op->getName().getStringRef() + " (" + role + ")").str());
    }
    entry["epilogue"] = std::move(epilogue);
    if (c.alpha != 1)
      entry["alpha"] = c.alpha;
    llvm::json::Array unscaled;
    if (c.lhs != m.getLhs())
      unscaled.push_back("lhs");
    if (c.rhs != m.getRhs())
      unscaled.push_back("rhs");
    if (!unscaled.empty())
      entry["read_unscaled"] = std::move(unscaled);
    if (c.biasGrad)
      entry["bias_grad_of"] = stringifyMatmulOperand(c.biasGradOf).str();
    if (!c.reluGrads.empty())
      entry["relu_grads_moved_to_output"] = int64_t(c.reluGrads.size());
    // Where the chain stopped: what reads its value (the ops that joined
    // it are not readers any more once it is fused).
    SmallVector<Operation *> users;
    for (OpOperand &use : c.result().getUses())
      if (!llvm::is_contained(c.reluGrads, &use))
        users.push_back(use.getOwner());
    // In program order (the use list is not): by the op of the matmul's
    // block that holds each, readers in no such op last.
    Block *block = m->getBlock();
    llvm::stable_sort(users, [&](Operation *a, Operation *b) {
      Operation *x = block->findAncestorOpInBlock(*a);
      Operation *y = block->findAncestorOpInBlock(*b);
      return x && (!y || (x != y && x->isBeforeInBlock(y)));
    });
    llvm::json::Array readers;
    for (Operation *user : users)
      readers.push_back(user->getName().getStringRef().str());
    entry["stopped_before"] = std::move(readers);
    return entry;
  }

  LogicalResult writeReport(llvm::json::Array decisions) {
    llvm::json::Object report{
        {"options", llvm::json::Object{{"activation", bool(activation)},
                                       {"residual", bool(residual)},
                                       {"scale", bool(scale)},
                                       {"optimizer", bool(optimizer)},
                                       {"bias-grad", bool(biasGrad)}}},
        {"matmuls", totals.matmuls},
        {"fused", totals.fused},
        {"ops_folded", totals.opsFolded},
        {"operand_scalings_removed", int64_t(operandScalings.size())},
        {"bias_grads", totals.biasGrads},
        {"decisions", std::move(decisions)}};
    if (llvm::Error e =
            writeJsonFile(reportFile, llvm::json::Value(std::move(report))))
      return getOperation()->emitError()
             << "tg-fuse-epilogues: report: " << llvm::toString(std::move(e));
    return success();
  }

  /// Multiplications by a constant scalar whose every use is an operand of
  /// a matmul this pass fuses: it reads x and takes c into its alpha.
  llvm::SetVector<MulOp> operandScalings;
  /// The constants of erased scalings.
  llvm::SetVector<Operation *> scalars;

  /// Erases `op`, keeping its constant operands as candidates to erase.
  void erase(Operation *op) {
    if (isa<MulOp>(op))
      for (Value v : op->getOperands())
        if (auto c = v.getDefiningOp<ConstantOp>())
          scalars.insert(c);
    op->erase();
  }

  void findOperandScalings() {
    getOperation()->walk([&](MulOp mul) {
      std::optional<std::pair<Value, double>> s = scaling(mul);
      if (!s || mul->use_empty() ||
          std::fabs(s->second) > kLargestOperandScale)
        return;
      for (Operation *user : mul->getUsers()) {
        auto m = dyn_cast<MatmulOp>(user);
        if (!m || !accumulatesWide(m))
          return;
      }
      operandScalings.insert(mul);
    });
  }

  /// `v` unscaled, with its scale multiplied into `alpha`. (x is read when
  /// asked: a fused producer of x replaces it.)
  Value unscaled(Value v, double &alpha) {
    auto mul = v.getDefiningOp<MulOp>();
    if (!mul || !operandScalings.contains(mul))
      return v;
    std::pair<Value, double> s = *scaling(mul);
    alpha *= s.second;
    return s.first;
  }

  Chain grow(MatmulOp matmul) {
    Chain c{matmul, matmul.getLhs(), matmul.getRhs()};
    if (!accumulatesWide(matmul))
      return c;
    c.lhs = unscaled(c.lhs, c.alpha);
    c.rhs = unscaled(c.rhs, c.alpha);
    auto type = cast<RankedTensorType>(matmul.getResult().getType());
    int64_t n = type.getShape().back();
    // Scalings of the product: (x * c) * d is x * (c d).
    while (scale)
      if (auto mul = dyn_cast_or_null<MulOp>(soleUser(c.result()))) {
        std::optional<std::pair<Value, double>> s = scaling(mul);
        if (!s || s->first != c.result() || operandScalings.contains(mul) ||
            !fitsAlpha(c.alpha * s->second))
          break;
        c.alpha *= s->second;
        c.ops.push_back(mul);
      } else {
        break;
      }
    // A plain SGD update of the product: param - lr * product.
    if (optimizer && growUpdate(c))
      return c;
    // The bias: a vector of the last dimension.
    if (auto add = dyn_cast_or_null<AddOp>(soleUser(c.result()))) {
      Value other = otherOperand(add, c.result());
      auto vector = cast<RankedTensorType>(other.getType());
      if (add.getType() == type && vector.getRank() == 1 &&
          vector.getDimSize(0) == n && other != c.result()) {
        c.bias = other;
        c.ops.push_back(add);
      }
    }
    // The residual: a tensor of the product's type.
    if (residual)
      if (auto add = dyn_cast_or_null<AddOp>(soleUser(c.result()))) {
        Value other = otherOperand(add, c.result());
        if (add.getType() == type && other.getType() == type &&
            other != c.result()) {
          c.residual = other;
          c.ops.push_back(add);
        }
      }
    if (activation)
      growActivation(c);
    return c;
  }

  /// Adds a tg.relu or tg.gelu that reads the chain's value, when no other
  /// op needs that value (a ReLU gradient's read moves to the output).
  void growActivation(Chain &c) {
    Value z = c.result();
    Operation *act = nullptr;
    SmallVector<OpOperand *, 2> reluGrads;
    for (OpOperand &use : z.getUses()) {
      Operation *user = use.getOwner();
      if (isa<ReluOp, GeluOp>(user) && !act) {
        act = user;
        continue;
      }
      // A gradient that reads the output instead must come after the
      // activation, where the fused op will be.
      auto grad = dyn_cast<ReluGradOp>(user);
      if (grad && use.getOperandNumber() == 1 && grad.getGrad() != z &&
          grad->getBlock() == z.getParentBlock()) {
        reluGrads.push_back(&use);
        continue;
      }
      return;
    }
    if (!act || act->getBlock() != z.getParentBlock() ||
        act->getResult(0).getType() != z.getType())
      return;
    for (OpOperand *use : reluGrads)
      if (!act->isBeforeInBlock(use->getOwner()))
        return;
    if (auto gelu = dyn_cast<GeluOp>(act)) {
      if (!reluGrads.empty())
        return;
      c.activation =
          gelu.getTanhApprox() ? Activation::gelu_tanh : Activation::gelu;
    } else {
      c.activation = Activation::relu;
    }
    c.ops.push_back(act);
    c.reluGrads = std::move(reluGrads);
  }

  /// Adds the tg.sgd_update that is the only user of the chain's value, as
  /// a residual and alpha, when it is a plain one: no momentum, no weight
  /// decay, no predicate (loss scaling's skip), in f32 or wider, of a
  /// parameter of the product's type that the step does not cast (a master
  /// weight under mixed precision keeps its update, into which
  /// tg-shadow-weights folds the cast).
  bool growUpdate(Chain &c) {
    auto update = dyn_cast_or_null<SgdUpdateOp>(soleUser(c.result()));
    if (!update || update.getGrad() != c.result() ||
        update.getMomentumBuffer() || update.getSkipIf() ||
        update.getMomentum().convertToFloat() != 0.0f ||
        update.getWeightDecay().convertToFloat() != 0.0f ||
        update.getParam().getType() != c.result().getType() ||
        update.getParam() == c.lhs || update.getParam() == c.rhs ||
        llvm::any_of(update.getParam().getUsers(),
                     [](Operation *user) { return isa<CastOp>(user); }))
      return false;
    FloatType compute =
        cast<PrecisionOpInterface>(update.getOperation()).getComputeType();
    double alpha = c.alpha * -double(update.getLr().convertToFloat());
    if (!compute || compute.getWidth() < 32 || !fitsAlpha(alpha))
      return false;
    c.alpha = alpha;
    c.residual = update.getParam();
    c.ops.push_back(update);
    return true;
  }

  /// Finds the tg.reduce_sum that adds up the rows of an operand the
  /// product reads with k along its rows (a transposed lhs, a plain rhs),
  /// as stored (not unscaled), in the product's compute type, when the
  /// fused op, where the chain ends, comes before every use of the sum.
  void growBiasGrad(Chain &c) {
    MatmulOp m = c.matmul;
    if (cast<RankedTensorType>(m.getType()).getRank() != 2)
      return;
    Operation *last = c.ops.empty() ? m.getOperation() : c.ops.back();
    FloatType compute =
        cast<PrecisionOpInterface>(m.getOperation()).getComputeType();
    struct Side {
      MatmulOperand of;
      Value operand, read;
      bool kAlongRows;
    };
    for (const Side &side :
         {Side{MatmulOperand::lhs, m.getLhs(), c.lhs, m.getTransposeLhs()},
          Side{MatmulOperand::rhs, m.getRhs(), c.rhs, !m.getTransposeRhs()}}) {
      if (!side.kAlongRows || side.read != side.operand)
        continue;
      // The operand's source and every reshape of it: those with the
      // operand's last dimension hold its rows.
      std::optional<int64_t> width = lastDim(side.operand);
      for (Value view : reshapesOf(reshapeSource(side.operand))) {
        if (lastDim(view) != width)
          continue;
        for (Operation *user : view.getUsers()) {
          auto sum = dyn_cast<ReduceSumOp>(user);
          if (sum && sumsRows(sum) && sum->getBlock() == last->getBlock() &&
              cast<PrecisionOpInterface>(sum.getOperation()).getComputeType() ==
                  compute &&
              usedOnlyAfter(sum, last)) {
            c.biasGrad = sum;
            c.biasGradOf = side.of;
            return;
          }
        }
      }
    }
  }

  /// The op after which the fused op goes: the first point after the
  /// product where its operands are defined and every other reader of the
  /// residual has read it (so the result may overwrite it in place), or the
  /// chain's last op if that comes first. Tensors are values, so any point
  /// between the operands' definitions and the result's first use is
  /// correct; this one is for speed. A weight gradient whose SGD
  /// update joined it then runs where the product was, next to the input
  /// gradient that reads the same output gradient, and not at the step's
  /// end with the updates, by when that gradient has left the cache.
  Operation *placement(Chain &c, Operation *last) {
    Block *block = last->getBlock();
    Operation *at = c.matmul;
    auto after = [&](Operation *op) {
      if (Operation *inBlock = op ? block->findAncestorOpInBlock(*op) : nullptr)
        if (at->isBeforeInBlock(inBlock))
          at = inBlock;
    };
    for (Value v : {c.lhs, c.rhs, c.bias, c.residual})
      if (v)
        after(v.getDefiningOp());
    // The residual's readers, directly or through reshapes (views of its
    // buffer).
    if (c.residual)
      for (Value view : reshapesOf(c.residual))
        for (Operation *user : view.getUsers())
          if (user != c.matmul.getOperation() &&
              !llvm::is_contained(c.ops, user))
            after(user);
    return last->isBeforeInBlock(at) ? last : at;
  }

  void fuse(Chain &c) {
    Operation *last = c.ops.empty() ? c.matmul.getOperation() : c.ops.back();
    // Every operand dominates the point chosen (it comes after their
    // definitions), which comes no later than the last op of the chain,
    // which dominates every use of the result.
    SmallVector<Location> locs = {c.matmul.getLoc()};
    for (Operation *op : c.ops)
      locs.push_back(op->getLoc());
    OpBuilder b(last->getContext());
    b.setInsertionPointAfter(placement(c, last));
    MatmulOp m = c.matmul;
    if (c.biasGrad)
      locs.push_back(c.biasGrad.getLoc());
    auto fused = FusedMatmulOp::create(
        b, b.getFusedLoc(locs), last->getResult(0).getType(),
        c.biasGrad ? c.biasGrad.getType() : Type(), c.lhs, c.rhs, c.bias,
        c.residual, m.getTransposeLhsAttr(), m.getTransposeRhsAttr(),
        ActivationAttr::get(b.getContext(), c.activation),
        b.getF64FloatAttr(c.alpha),
        c.biasGrad ? MatmulOperandAttr::get(b.getContext(), c.biasGradOf)
                   : MatmulOperandAttr(),
        m.getComputeAttr());
    last->getResult(0).replaceAllUsesWith(fused.getResult());
    for (OpOperand *use : c.reluGrads)
      use->set(fused.getResult());
    for (Operation *op : llvm::reverse(c.ops))
      erase(op);
    m->erase();
    ++numFused;
    numOpsRemoved += c.ops.size();
    ++totals.fused;
    totals.opsFolded += c.ops.size();
    if (c.biasGrad) {
      // The sum goes, and the reshapes that only it read.
      c.biasGrad.getResult().replaceAllUsesWith(fused.getBiasGrad());
      Value in = c.biasGrad.getInput();
      c.biasGrad->erase();
      while (auto reshape = in.getDefiningOp<ReshapeOp>()) {
        if (!reshape->use_empty())
          break;
        in = reshape.getInput();
        reshape->erase();
      }
      ++numBiasGrads;
      ++numOpsRemoved;
      ++totals.biasGrads;
      ++totals.opsFolded;
    }
  }
};

} // namespace
