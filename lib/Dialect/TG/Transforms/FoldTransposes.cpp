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

  /// transpose(matmul(A, B)) -> matmul(B, A) with both flags flipped, when
  /// the product has no other use (else it would be computed twice) and
  /// neither operand is broadcast over the batch: the libraries run a
  /// batched activation times a weight as one GEMM with the batch folded
  /// into M, which the swapped form, the weight on the left, would split
  /// into a GEMM per batch entry. `t` is erased and nulled.
  void swapProduct(TransposeOp &t) {
    auto m = t.getInput().getDefiningOp<MatmulOp>();
    if (!m || !swapsLastTwo(t) || !m.getResult().hasOneUse() ||
        m->getBlock() != t->getBlock() ||
        !fullyBatched(m.getLhs(), m.getResult()) ||
        !fullyBatched(m.getRhs(), m.getResult()))
      return;
    // The operands dominate the matmul, which comes before the transpose.
    OpBuilder b(t);
    auto swapped = MatmulOp::create(
        b, b.getFusedLoc({m.getLoc(), t.getLoc()}), t.getType(), m.getRhs(),
        m.getLhs(), m.getTransposeRhs() ? UnitAttr() : b.getUnitAttr(),
        m.getTransposeLhs() ? UnitAttr() : b.getUnitAttr(),
        m.getComputeAttr());
    swapped->setDiscardableAttrs(m->getDiscardableAttrDictionary());
    t.getResult().replaceAllUsesWith(swapped.getResult());
    t->erase();
    m->erase();
    t = nullptr;
    ++numProductsSwapped;
    ++numTransposesErased;
  }
};

} // namespace
