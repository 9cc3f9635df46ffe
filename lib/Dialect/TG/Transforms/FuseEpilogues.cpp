//===- FuseEpilogues.cpp - the tg-fuse-epilogues pass ---------------------===//
//
// Folds the bias add, the residual add and the activation that follow a
// tg.matmul into one tg.fused_matmul, which the backends run as one GEMM
// with an epilogue (oneDNN post-ops, cuBLASLt epilogues). The chain grows
// one op at a time, in the order the epilogue applies them
// (activation(product + bias + residual)), and only through values with no
// other use, so nothing is computed twice. ReLU gradients are moved from
// the pre-activation to the ReLU's output, which tells x > 0 as well.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

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

/// The epilogue found after one matmul.
struct Chain {
  MatmulOp matmul;
  Value bias, residual;
  Activation activation = Activation::none;
  /// The ops replaced, in order; the last one's result is the fused result.
  SmallVector<Operation *, 3> ops;
  /// tg.relu_grad operands to move from the pre-activation to the output.
  SmallVector<OpOperand *, 2> reluGrads;

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
    SmallVector<MatmulOp> matmuls;
    getOperation()->walk([&](MatmulOp m) { matmuls.push_back(m); });
    for (MatmulOp m : matmuls) {
      Chain chain = grow(m);
      if (!chain.ops.empty())
        fuse(chain);
    }
  }

private:
  Chain grow(MatmulOp matmul) {
    Chain c{matmul, {}, {}, Activation::none, {}, {}};
    if (!accumulatesWide(matmul))
      return c;
    auto type = cast<RankedTensorType>(matmul.getResult().getType());
    int64_t n = type.getShape().back();
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

  void fuse(Chain &c) {
    Operation *last = c.ops.back();
    // Every operand dominates the last op of the chain (they dominate the
    // op that reads them, which comes before it), and the last op
    // dominates every use of the result.
    SmallVector<Location> locs = {c.matmul.getLoc()};
    for (Operation *op : c.ops)
      locs.push_back(op->getLoc());
    OpBuilder b(last);
    MatmulOp m = c.matmul;
    auto fused = FusedMatmulOp::create(
        b, b.getFusedLoc(locs), last->getResult(0).getType(), m.getLhs(),
        m.getRhs(), c.bias, c.residual, m.getTransposeLhsAttr(),
        m.getTransposeRhsAttr(),
        ActivationAttr::get(b.getContext(), c.activation), m.getComputeAttr());
    last->getResult(0).replaceAllUsesWith(fused.getResult());
    for (OpOperand *use : c.reluGrads)
      use->set(fused.getResult());
    for (Operation *op : llvm::reverse(c.ops))
      op->erase();
    m->erase();
    ++numFused;
    numOpsRemoved += c.ops.size();
  }
};

} // namespace
