//===- FoldTransposes.cpp - the tg-fold-transposes pass -------------------===//
//
// Folds the tg.transposes that swap the two innermost dimensions into the
// matmuls around them: an operand produced by one is read through the
// matmul's transpose flag instead, and a transposed product is computed
// directly as the product of the swapped operands. The GEMM libraries take
// transposed operands as strides, so each fold saves a copy of a tensor.
// With report=<file>, what became of every transpose is written as JSON.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/Transforms/PrecisionPolicy.h"
#include "mp/Support/Json.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/ScopedPrinter.h"

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
    // A pass manager may run this instance again.
    records.clear();
    recordOf.clear();
    // Products first, so that the operands of a swapped matmul fold too.
    // Only transposes that had uses are erased once dead: the pass removes
    // what it made redundant and leaves the rest of the IR as it was.
    SmallVector<TransposeOp> transposes;
    getOperation()->walk([&](TransposeOp t) {
      if (!t->use_empty())
        transposes.push_back(t);
    });
    if (!reportFile.empty())
      for (auto [k, t] : llvm::enumerate(transposes)) {
        records.push_back(describe(t));
        recordOf[t] = k;
      }
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
    for (TransposeOp t : llvm::reverse(transposes)) {
      if (!t)
        continue;
      if (t->use_empty()) {
        if (Record *r = record(t))
          r->erased = true;
        t->erase();
        ++numTransposesErased;
      } else if (Record *r = record(t)) {
        r->readers = readersOf(t);
      }
    }
    if (!reportFile.empty() && failed(writeReport()))
      return signalPassFailure();
  }

private:
  /// Reads each operand of `m` that a swap produces through the flag (and
  /// through as many swaps of swaps as there are).
  template <typename Op> void foldOperands(Op m) {
    while (Value in = swappedInput(m.getLhs())) {
      noteFold(m.getLhs());
      m.getLhsMutable().assign(in);
      m.setTransposeLhs(!m.getTransposeLhs());
      ++numOperandsFolded;
    }
    while (Value in = swappedInput(m.getRhs())) {
      noteFold(m.getRhs());
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
    if (!isa_and_nonnull<MatmulOp, FusedMatmulOp>(m) || !swapsLastTwo(t))
      return;
    if (StringRef why = whyNotSwapped(t, m); !why.empty()) {
      if (Record *r = record(t))
        r->notSwapped = why;
      return;
    }
    // The operands dominate the matmul, which comes before the transpose.
    OpBuilder b(t);
    Location loc = b.getFusedLoc({m->getLoc(), t.getLoc()});
    Operation *swapped =
        isa<FusedMatmulOp>(m)
            ? swappedProduct(b, loc, t.getType(), cast<FusedMatmulOp>(m))
            : swappedProduct(b, loc, t.getType(), cast<MatmulOp>(m));
    swapped->setDiscardableAttrs(m->getDiscardableAttrDictionary());
    if (Record *r = record(t)) {
      r->swapped = m->getName().getStringRef().str();
      r->erased = true;
    }
    t.getResult().replaceAllUsesWith(swapped->getResult(0));
    t->erase();
    m->erase();
    t = nullptr;
    ++numProductsSwapped;
    ++numTransposesErased;
  }

  /// Why the product `m` that `t` transposes cannot be computed swapped,
  /// or "" if it can.
  static StringRef whyNotSwapped(TransposeOp t, Operation *m) {
    if (auto fused = dyn_cast<FusedMatmulOp>(m);
        fused &&
        (fused.getBias() || fused.getResidual() || fused.getBiasGrad() ||
         fused.getActivation() != Activation::none))
      return "the fused product's epilogue is more than a scale, and does "
             "not commute with the transpose";
    if (!m->getResult(0).hasOneUse())
      return "the product has other readers: swapped, it would be computed "
             "twice";
    if (m->getBlock() != t->getBlock())
      return "the product is in another block";
    if (!fullyBatched(m->getOperand(0), m->getResult(0)) ||
        !fullyBatched(m->getOperand(1), m->getResult(0)))
      return "an operand is broadcast over the batch: swapped, the product "
             "would run as a GEMM per batch entry";
    return "";
  }

  //===--------------------------------------------------------------------===//
  // The report
  //===--------------------------------------------------------------------===//

  /// What became of one transpose that had uses.
  struct Record {
    llvm::json::Object entry;
    /// The operands of matmuls now read through a flag instead.
    int64_t operandsFolded = 0;
    /// The product's op, if the transpose was computed as a swapped one.
    std::string swapped;
    /// Why the product it transposes could not be swapped.
    std::string notSwapped;
    bool erased = false;
    /// What still reads a transpose that stays.
    SmallVector<std::string> readers;
  };
  std::vector<Record> records;
  llvm::DenseMap<Operation *, size_t> recordOf;

  Record *record(TransposeOp t) {
    if (!t)
      return nullptr;
    auto it = recordOf.find(t);
    return it == recordOf.end() ? nullptr : &records[it->second];
  }

  /// Notes that the operand `v`, a transpose's result, is read through a
  /// flag from now on.
  void noteFold(Value v) {
    if (Record *r = record(v.getDefiningOp<TransposeOp>()))
      ++r->operandsFolded;
  }

  static Record describe(TransposeOp t) {
    auto fn = t->getParentOfType<func::FuncOp>();
    llvm::json::Array perm;
    for (int64_t d : t.getPermutation())
      perm.push_back(d);
    Record r;
    r.entry = llvm::json::Object{
        {"location", getReportLocation(t.getLoc())},
        {"function", fn ? fn.getSymName().str() : std::string()},
        {"permutation", std::move(perm)},
        {"result", llvm::to_string(t.getType())}};
    if (!swapsLastTwo(t))
      r.entry["reason"] = "it moves more than the last two dimensions, "
                          "which no transpose flag reads";
    return r;
  }

  /// The ops that read `t`, in program order, each once.
  static SmallVector<std::string> readersOf(TransposeOp t) {
    SmallVector<Operation *> users(t->getUsers());
    Block *block = t->getBlock();
    llvm::stable_sort(users, [&](Operation *a, Operation *b) {
      Operation *x = block->findAncestorOpInBlock(*a);
      Operation *y = block->findAncestorOpInBlock(*b);
      return x && (!y || (x != y && x->isBeforeInBlock(y)));
    });
    SmallVector<std::string> names;
    for (Operation *user : users) {
      std::string name = user->getName().getStringRef().str();
      if (!llvm::is_contained(names, name))
        names.push_back(name);
    }
    return names;
  }

  LogicalResult writeReport() {
    int64_t erased = 0, swapped = 0, folded = 0;
    llvm::json::Array decisions;
    for (Record &r : records) {
      llvm::json::Object entry = std::move(r.entry);
      entry["erased"] = r.erased;
      if (r.erased)
        entry.erase("reason");
      if (!r.swapped.empty()) {
        entry["product_swapped"] = r.swapped;
        ++swapped;
      } else if (!r.notSwapped.empty()) {
        entry["product_not_swapped"] = r.notSwapped;
      }
      if (r.operandsFolded)
        entry["operands_folded"] = r.operandsFolded;
      if (!r.erased) {
        llvm::json::Array readers;
        for (std::string &name : r.readers)
          readers.push_back(std::move(name));
        entry["kept_for"] = std::move(readers);
      }
      erased += r.erased;
      folded += r.operandsFolded;
      decisions.push_back(std::move(entry));
    }
    llvm::json::Object report{{"transposes", int64_t(records.size())},
                              {"erased", erased},
                              {"products_swapped", swapped},
                              {"operands_folded", folded},
                              {"decisions", std::move(decisions)}};
    if (llvm::Error e =
            writeJsonFile(reportFile, llvm::json::Value(std::move(report))))
      return getOperation()->emitError()
             << "tg-fold-transposes: report: " << llvm::toString(std::move(e));
    return success();
  }
};

} // namespace
