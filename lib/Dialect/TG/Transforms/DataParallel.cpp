//===- DataParallel.cpp - the tg-data-parallel pass -----------------------===//
//
// Turns a training step into its data-parallel form: every gradient an
// optimizer update reads is averaged across the ranks first, by
// `tg.all_reduce mean` ops over buckets of gradients. Buckets follow the
// order in which the backward pass produces the gradients (as PyTorch DDP's
// do), close at `bucket-mb`, and each all-reduce sits right after the last
// producer of its bucket, so a runtime with asynchronous collectives can
// send it while the rest of the backward pass runs.
//
// Where the step is already loss-scaled, the gradients are reduced before
// `tg.unscale_grads`, so the overflow check reads the same reduced
// gradients on every rank and every rank skips the same steps.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/Transforms/Passes.h"

#include "mp/Dialect/TG/IR/TGOps.h"
#include "mp/Dialect/TG/IR/TrainStep.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace mp::tg {
#define GEN_PASS_DEF_TGDATAPARALLEL
#include "mp/Dialect/TG/Transforms/Passes.h.inc"
} // namespace mp::tg

using namespace mlir;
using namespace mp;
using namespace mp::tg;

namespace {

/// A gradient to reduce, and the operands that read it.
struct Gradient {
  Value value;
  SmallVector<OpOperand *, 2> uses;
  int64_t bytes = 0;
};

/// The op defining `v`, or null for a block argument: an argument is
/// available from the start of the block.
Operation *producer(Value v) { return v.getDefiningOp(); }

/// Whether `a` comes before `b` in their block; null is the block's start.
bool before(Operation *a, Operation *b) {
  if (!a)
    return b != nullptr;
  if (!b)
    return false;
  return a->isBeforeInBlock(b);
}

int64_t byteSize(Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  return type.getNumElements() *
         int64_t(type.getElementType().getIntOrFloatBitWidth() / 8);
}

struct DataParallelPass
    : public tg::impl::TGDataParallelBase<DataParallelPass> {
  using Base::Base;

  LogicalResult parallelize(FunctionOpInterface fn, int64_t capBytes) {
    Block &body = fn.getFunctionBody().front();
    bool reduced = false;
    SmallVector<OptimizerOpInterface> updates;
    fn->walk([&](Operation *op) {
      reduced |= isa<AllReduceOp>(op);
      if (auto u = dyn_cast<OptimizerOpInterface>(op))
        updates.push_back(u);
    });
    if (reduced) {
      fn.emitRemark("tg-data-parallel: step already reduces its gradients");
      return success();
    }
    if (updates.empty())
      return fn.emitError("tg-data-parallel: a training step needs optimizer "
                          "updates whose gradients it can average");

    // The gradients, in the order the backward pass produces them. With
    // loss scaling, the scaled gradients before tg.unscale_grads.
    llvm::MapVector<Value, Gradient> grads;
    auto add = [&](OpOperand &use) {
      Gradient &g = grads[use.get()];
      g.value = use.get();
      g.bytes = byteSize(use.get());
      g.uses.push_back(&use);
    };
    // Every gradient of an unscale the updates read: they all feed its
    // overflow check, which must see the same values on every rank.
    SmallPtrSet<Operation *, 2> unscales;
    bool scaled = false;
    fn->walk([&](UnscaleGradsOp) { scaled = true; });
    for (OptimizerOpInterface u : updates) {
      if (u->getBlock() != &body)
        return u->emitError("tg-data-parallel: optimizer updates must be in "
                            "the step's entry block");
      OpOperand &use = u.getGradOperand();
      auto unscale = use.get().getDefiningOp<UnscaleGradsOp>();
      if (!unscale) {
        if (scaled)
          return u->emitError(
              "tg-data-parallel: in a loss-scaled step every update must "
              "read its gradient from tg.unscale_grads, so that the "
              "gradients are reduced before the overflow check");
        add(use);
        continue;
      }
      if (unscales.insert(unscale).second)
        for (OpOperand &grad : unscale.getGradsMutable())
          add(grad);
    }
    SmallVector<Gradient> order;
    for (auto &entry : grads)
      order.push_back(entry.second);
    llvm::stable_sort(order, [](const Gradient &a, const Gradient &b) {
      return before(producer(a.value), producer(b.value));
    });

    // Greedy buckets: one element type each, at most `capBytes` (a single
    // larger gradient is a bucket of its own), and every gradient of a
    // bucket produced before any of the bucket's users runs.
    struct Bucket {
      SmallVector<Gradient *> grads;
      int64_t bytes = 0;
      Operation *lastProducer = nullptr, *firstUser = nullptr;
    };
    SmallVector<Bucket> buckets;
    for (Gradient &g : order) {
      Operation *firstUser = nullptr;
      for (OpOperand *o : g.uses)
        if (!firstUser || o->getOwner()->isBeforeInBlock(firstUser))
          firstUser = o->getOwner();
      Bucket *open = buckets.empty() ? nullptr : &buckets.back();
      bool fits = open &&
                  getElementTypeOrSelf(open->grads.front()->value) ==
                      getElementTypeOrSelf(g.value) &&
                  open->bytes + g.bytes <= capBytes &&
                  before(producer(g.value), open->firstUser) &&
                  before(open->lastProducer, firstUser);
      if (!fits) {
        buckets.emplace_back();
        open = &buckets.back();
        open->firstUser = firstUser;
      }
      open->grads.push_back(&g);
      open->bytes += g.bytes;
      if (before(open->lastProducer, producer(g.value)))
        open->lastProducer = producer(g.value);
      if (firstUser->isBeforeInBlock(open->firstUser))
        open->firstUser = firstUser;
    }

    MLIRContext *ctx = &getContext();
    OpBuilder b(ctx);
    // Buckets that follow one producer (or the block's start) go after one
    // another, in bucket order.
    Operation *anchor = nullptr, *previous = nullptr;
    for (auto [k, bucket] : llvm::enumerate(buckets)) {
      if (previous && bucket.lastProducer == anchor)
        b.setInsertionPointAfter(previous);
      else if (bucket.lastProducer)
        b.setInsertionPointAfter(bucket.lastProducer);
      else
        b.setInsertionPointToStart(&body);
      anchor = bucket.lastProducer;
      SmallVector<Value> values;
      SmallVector<Type> types;
      for (Gradient *g : bucket.grads) {
        values.push_back(g->value);
        types.push_back(g->value.getType());
      }
      Location loc = NameLoc::get(
          StringAttr::get(ctx, "dp.bucket" + std::to_string(k)), fn.getLoc());
      auto reduce = AllReduceOp::create(b, loc, types,
                                        CollectiveReduction::mean, values,
                                        /*compute=*/nullptr);
      for (auto [g, result] : llvm::zip(bucket.grads, reduce.getResults()))
        for (OpOperand *o : g->uses)
          o->set(result);
      previous = reduce;
    }
    return success();
  }

  void runOnOperation() override {
    if (!(bucketMb >= 0) || !std::isfinite(bucketMb)) {
      getOperation().emitError()
          << "tg-data-parallel: option 'bucket-mb' = "
          << llvm::formatv("{0}", double(bucketMb)).str()
          << " must be a finite number of MiB, at least 0";
      return signalPassFailure();
    }
    int64_t capBytes = int64_t(std::min<double>(bucketMb, 1e9) * 1024 * 1024);
    SmallVector<FunctionOpInterface> steps;
    getOperation().walk([&](FunctionOpInterface fn) {
      if (isTrainStep(fn) && !fn.isExternal())
        steps.push_back(fn);
    });
    for (FunctionOpInterface fn : steps)
      if (failed(parallelize(fn, capBytes)))
        return signalPassFailure();
  }
};

} // namespace
