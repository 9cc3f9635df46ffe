//===- TGCanonicalize.cpp - canonicalization patterns of the tg ops -------===//
//
// Rewrites that take copies out of the data movement exporters produce.
// PyTorch's attention exports split a fused QKV projection by transposing
// the whole product, slicing it and transposing each slice again; the
// adjoint of each slice then writes zeros over the whole product and adds
// sum them. The patterns move slices above transposes, and above reshapes
// that only add or drop dimensions of size 1; what is left of the
// transpose of the whole then moves only dimensions of size 1 and becomes
// a reshape. Slice gradients that tile a tensor are summed as one concat.
//
//===----------------------------------------------------------------------===//

#include "mp/Dialect/TG/IR/TGOps.h"

#include "mlir/IR/PatternMatch.h"

#include <algorithm>
#include <optional>

using namespace mlir;
using namespace mp::tg;

namespace {

/// Whether a slice's strides (absent: all 1) are all 1.
bool unitStrides(std::optional<ArrayRef<int64_t>> strides) {
  return !strides || llvm::all_of(*strides, [](int64_t s) { return s == 1; });
}

/// A tg.slice of `input`, its strides left out when they are all 1.
Value createSlice(PatternRewriter &rewriter, Location loc, Value input,
                  ArrayRef<int64_t> offsets, ArrayRef<int64_t> sizes,
                  ArrayRef<int64_t> strides) {
  return SliceOp::create(
      rewriter, loc, input, rewriter.getDenseI64ArrayAttr(offsets),
      rewriter.getDenseI64ArrayAttr(sizes),
      unitStrides(strides) ? DenseI64ArrayAttr()
                           : rewriter.getDenseI64ArrayAttr(strides));
}

/// slice(transpose(x, p)) -> transpose(slice(x), p), with the selection
/// permuted back onto x, when every user of the transpose is a slice and
/// the slices together select at most all of it: then the transpose dies
/// and the copies moved are no more than before, and fewer once the
/// transpose of a slice moves only dimensions of size 1 (a reshape, below).
struct SliceOfTranspose : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto transpose = slice.getInput().getDefiningOp<TransposeOp>();
    if (!transpose)
      return failure();
    int64_t selected = 0;
    for (Operation *user : transpose->getUsers()) {
      auto s = dyn_cast<SliceOp>(user);
      if (!s)
        return failure();
      selected += s.getType().getNumElements();
    }
    if (selected > transpose.getType().getNumElements())
      return failure();
    ArrayRef<int64_t> perm = transpose.getPermutation();
    int64_t rank = perm.size();
    SmallVector<int64_t> offsets(rank), sizes(rank), strides(rank, 1);
    for (int64_t d = 0; d < rank; ++d) {
      offsets[perm[d]] = slice.getOffsets()[d];
      sizes[perm[d]] = slice.getSizes()[d];
      if (std::optional<ArrayRef<int64_t>> s = slice.getStrides())
        strides[perm[d]] = (*s)[d];
    }
    Value inner = createSlice(rewriter, slice.getLoc(), transpose.getInput(),
                              offsets, sizes, strides);
    rewriter.replaceOpWithNewOp<TransposeOp>(slice, slice.getType(), inner,
                                             perm);
    return success();
  }
};

/// The positions of the dimensions of `shape` larger than 1.
SmallVector<int64_t> nonUnitDims(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> dims;
  for (int64_t d = 0, e = shape.size(); d < e; ++d)
    if (shape[d] != 1)
      dims.push_back(d);
  return dims;
}

/// slice(reshape(x)) -> reshape(slice(x)) when the reshape only inserts or
/// drops dimensions of size 1: the selection carries over dimension by
/// dimension, and a slice above the transpose the reshape may read can
/// then move above that too.
struct SliceOfUnitReshape : OpRewritePattern<SliceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SliceOp slice,
                                PatternRewriter &rewriter) const override {
    auto reshape = slice.getInput().getDefiningOp<ReshapeOp>();
    if (!reshape || slice.getType().getNumElements() == 0)
      return failure();
    ArrayRef<int64_t> from = reshape.getInput().getType().getShape();
    ArrayRef<int64_t> to = reshape.getType().getShape();
    SmallVector<int64_t> fromDims = nonUnitDims(from), toDims = nonUnitDims(to);
    if (fromDims.size() != toDims.size())
      return failure();
    for (auto [f, t] : llvm::zip(fromDims, toDims))
      if (from[f] != to[t])
        return failure();
    int64_t rank = from.size();
    SmallVector<int64_t> offsets(rank, 0), sizes(rank, 1), strides(rank, 1);
    for (auto [f, t] : llvm::zip(fromDims, toDims)) {
      offsets[f] = slice.getOffsets()[t];
      sizes[f] = slice.getSizes()[t];
      if (std::optional<ArrayRef<int64_t>> s = slice.getStrides())
        strides[f] = (*s)[t];
    }
    Value inner = createSlice(rewriter, slice.getLoc(), reshape.getInput(),
                              offsets, sizes, strides);
    rewriter.replaceOpWithNewOp<ReshapeOp>(slice, slice.getType(), inner);
    return success();
  }
};

/// A transpose that keeps the order of the dimensions larger than 1 leaves
/// the elements where they are: a reshape.
struct TransposeOfUnitDims : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(TransposeOp transpose,
                                PatternRewriter &rewriter) const override {
    if (!isReshapeTranspose(transpose.getInput().getType().getShape(),
                            transpose.getPermutation()))
      return failure();
    rewriter.replaceOpWithNewOp<ReshapeOp>(transpose, transpose.getType(),
                                           transpose.getInput());
    return success();
  }
};

/// A sum (a tree of adds, each inner one used once) of slice gradients,
/// each used once, whose selections tile the result along one dimension
/// (unit strides, the whole extent of every other dimension, no gaps and no
/// overlap) is the concat of their gradients in offset order: the adjoint
/// of a split. Each slice gradient writes the whole result, mostly zeros,
/// and each add reads two results; the concat writes it once. A gradient's
/// value is the same (x + 0 is x, but for the sign of a zero) where the
/// adds compute in a type that holds every stored value: the storage type
/// itself, f32 for f16 and bf16, or f64.
struct SumOfSliceGradsToConcat : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AddOp add,
                                PatternRewriter &rewriter) const override {
    auto type = cast<RankedTensorType>(add.getType());
    SmallVector<SliceGradOp> parts;
    if (!collect(add, type, /*root=*/true, parts))
      return failure();
    // The split dimension: the one where some selection is not whole.
    std::optional<int64_t> axis;
    for (SliceGradOp part : parts) {
      if (!unitStrides(part.getStrides()))
        return failure();
      ArrayRef<int64_t> shape = part.getGrad().getType().getShape();
      for (int64_t d = 0; d < type.getRank(); ++d) {
        if (part.getOffsets()[d] == 0 && shape[d] == type.getDimSize(d))
          continue;
        if (axis && *axis != d)
          return failure();
        axis = d;
      }
    }
    if (!axis)
      return failure();
    llvm::stable_sort(parts, [&](SliceGradOp a, SliceGradOp b) {
      return a.getOffsets()[*axis] < b.getOffsets()[*axis];
    });
    int64_t at = 0;
    SmallVector<Value> grads;
    for (SliceGradOp part : parts) {
      if (part.getOffsets()[*axis] != at)
        return failure();
      at += part.getGrad().getType().getDimSize(*axis);
      grads.push_back(part.getGrad());
    }
    if (at != type.getDimSize(*axis))
      return failure();
    rewriter.replaceOpWithNewOp<ConcatOp>(add, type, grads, *axis);
    return success();
  }

private:
  /// Appends the slice gradients summed by `v` (the root add, or an
  /// operand of the tree) to `parts`; false if `v` is anything else.
  static bool collect(Value v, RankedTensorType type, bool root,
                      SmallVectorImpl<SliceGradOp> &parts) {
    if (!root && !v.hasOneUse())
      return false;
    if (auto part = v.getDefiningOp<SliceGradOp>()) {
      parts.push_back(part);
      return part.getType() == type;
    }
    auto add = v.getDefiningOp<AddOp>();
    return add && add.getType() == type && addsExactly(add) &&
           collect(add.getLhs(), type, false, parts) &&
           collect(add.getRhs(), type, false, parts);
  }

  /// Whether `add` computes in a type that holds every value of its
  /// storage type, so that x + 0 is x.
  static bool addsExactly(AddOp add) {
    Type stored = add.getType().getElementType();
    FloatType compute =
        cast<PrecisionOpInterface>(add.getOperation()).getComputeType();
    return compute == stored || compute.isF64() ||
           (compute.isF32() && (stored.isF16() || stored.isBF16()));
  }
};

} // namespace

void SliceOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                          MLIRContext *context) {
  patterns.add<SliceOfTranspose, SliceOfUnitReshape>(context);
}

void TransposeOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                              MLIRContext *context) {
  patterns.add<TransposeOfUnitDims>(context);
}

void AddOp::getCanonicalizationPatterns(RewritePatternSet &patterns,
                                        MLIRContext *context) {
  patterns.add<SumOfSliceGradsToConcat>(context);
}
