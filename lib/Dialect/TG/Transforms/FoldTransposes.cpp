//===- FoldTransposes.cpp - the tg-fold-transposes pass -------------------===//
//
// Folds the tg.transposes that swap the two innermost dimensions into the
// matmuls around them: an operand produced by one is read through the
// matmul's transpose flag instead, and a transposed product is computed
// directly as the product of the swapped operands. The GEMM libraries take
// transposed operands as strides, so each fold saves a copy of a tensor.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mp::tg {
#define GEN_PASS_DEF_TGFOLDTRANSPOSES
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp;
using namespace mp::tg;

namespace {

/// Whether `t` swaps the last two dimensions and keeps every other one:
/// [1, 0], [0, 2, 1], [0, 1, 3, 2], ...
bool swapsLastTwo(TransposeOp t) {
  ArrayRef<int64_t> perm = t.getPermutation();
  int64_t rank = perm.size();
  if (rank < 2 || perm[rank - 1] != rank - 2 || perm[rank - 2] != rank - 1)
    return false;
  for (int64_t d = 0; d < rank - 2; ++d)
    if (perm[d] != d)
      return false;
  return true;
}

/// Whether `operand` has every batch dimension of `result` (a matmul's),
/// none broadcast.
bool fullyBatched(Value operand, Value result) {
  auto o = cast<RankedTensorType>(operand.getType());
  auto r = cast<RankedTensorType>(result.getType());
  return o.getRank() == r.getRank() &&
         o.getShape().drop_back(2) == r.getShape().drop_back(2);
}

/// The input of the last-two-dimension swap that produces `v`, or null.
Value swappedInput(Value v) {
  auto t = v.getDefiningOp<TransposeOp>();
  return t && swapsLastTwo(t) ? t.getInput() : Value();
}

class FoldTransposes
    : public mp::tg::impl::TGFoldTransposesBase<FoldTransposes> {
public:
  using TGFoldTransposesBase::TGFoldTransposesBase;

  void runOnOperation() override {
    // Products first, so that the operands of a swapped matmul fold too.
    // Only transposes that had uses are erased once dead: the pass removes
    // what it made redundant and leaves the rest of the IR as it was.
    SmallVector<TransposeOp> transposes;
    getOperation()->walk([&](TransposeOp t) {
      if (!t->use_empty())
        transposes.push_back(t);
    });
    for (TransposeOp &t : transposes)
      swapProduct(t);

    getOperation()->walk([&](Operation *op) {
      if (auto m = dyn_cast<MatmulOp>(op))
        foldOperands(m);
      else if (auto m = dyn_cast<FusedMatmulOp>(op))
        foldOperands(m);
    });

    // Users come after their operands: in reverse, a transpose read only
    // by a transpose that dies here is dead by the time it is visited.
    for (TransposeOp t : llvm::reverse(transposes))
      if (t && t->use_empty()) {
        t->erase();
        ++numTransposesErased;
      }
  }

private:
  /// Reads each operand of `m` that a swap produces through the flag (and
  /// through as many swaps of swaps as there are).
  template <typename Op> void foldOperands(Op m) {
    while (Value in = swappedInput(m.getLhs())) {
      m.getLhsMutable().assign(in);
      m.setTransposeLhs(!m.getTransposeLhs());
      ++numOperandsFolded;
    }
    while (Value in = swappedInput(m.getRhs())) {
      m.getRhsMutable().assign(in);
      m.setTransposeRhs(!m.getTransposeRhs());
      ++numOperandsFolded;
    }
  }

  /// B^T A^T for the product A B of `m` (a matmul, or a fused matmul
  /// with a scale only), of type `type`.
  static Operation *swappedProduct(OpBuilder &b, Location loc, Type type,
                                   MatmulOp m) {
    return MatmulOp::create(
        b, loc, type, m.getRhs(), m.getLhs(),
        m.getTransposeRhs() ? UnitAttr() : b.getUnitAttr(),
        m.getTransposeLhs() ? UnitAttr() : b.getUnitAttr(),
        m.getComputeAttr());
  }
  static Operation *swappedProduct(OpBuilder &b, Location loc, Type type,
                                   FusedMatmulOp m) {
    return FusedMatmulOp::create(
        b, loc, type, /*bias_grad=*/Type(), m.getRhs(), m.getLhs(), Value(),
        Value(), m.getTransposeRhs() ? UnitAttr() : b.getUnitAttr(),
        m.getTransposeLhs() ? UnitAttr() : b.getUnitAttr(),
        m.getActivationAttr(), m.getAlphaAttr(), /*bias_grad_of=*/nullptr,
        m.getComputeAttr());
  }

  /// transpose(matmul(A, B)) -> matmul(B, A) with both flags flipped, when
  /// the product has no other use (else it would be computed twice) and
  /// neither operand is broadcast over the batch: the libraries run a
  /// batched activation times a weight as one GEMM with the batch folded
  /// into M, which the swapped form, the weight on the left, would split
  /// into a GEMM per batch entry. A fused matmul swaps too when its epilogue
  /// is only a scale (alpha), which commutes with the transpose, and it
  /// sums no bias gradient. `t` is erased and nulled.
  void swapProduct(TransposeOp &t) {
    Operation *m = t.getInput().getDefiningOp();
    auto fused = dyn_cast_or_null<FusedMatmulOp>(m);
    if (!isa_and_nonnull<MatmulOp>(m) &&
        (!fused || fused.getBias() || fused.getResidual() ||
         fused.getBiasGrad() || fused.getActivation() != Activation::none))
      return;
    Value lhs = m->getOperand(0), rhs = m->getOperand(1);
    if (!swapsLastTwo(t) || !m->getResult(0).hasOneUse() ||
        m->getBlock() != t->getBlock() ||
        !fullyBatched(lhs, m->getResult(0)) ||
        !fullyBatched(rhs, m->getResult(0)))
      return;
    // The operands dominate the matmul, which comes before the transpose.
    OpBuilder b(t);
    Location loc = b.getFusedLoc({m->getLoc(), t.getLoc()});
    Operation *swapped =
        fused ? swappedProduct(b, loc, t.getType(), fused)
              : swappedProduct(b, loc, t.getType(), cast<MatmulOp>(m));
    swapped->setDiscardableAttrs(m->getDiscardableAttrDictionary());
    t.getResult().replaceAllUsesWith(swapped->getResult(0));
    t->erase();
    m->erase();
    t = nullptr;
    ++numProductsSwapped;
    ++numTransposesErased;
  }
};

} // namespace
