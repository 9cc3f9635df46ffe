//===- Checks.h - argument checks shared by the backends ----------*- C++ -*-===//
//
// Internal to the runtime. The shape rules of the kernels in MPRuntime.h,
// written once for the CPU and the CUDA backend (host code only).
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_LIB_CHECKS_H
#define MP_RUNTIME_LIB_CHECKS_H

#include "mp/Runtime/MPRuntime.h"

#include <initializer_list>

namespace mp::rt {

inline bool isFloatType(mpElementType t) {
  return t == MP_F32 || t == MP_F16 || t == MP_BF16 || t == MP_F64;
}

/// Whether `t` is a rank-0 tensor of `type` with data.
inline bool isScalar(const mpTensor *t, mpElementType type) {
  return t && t->data && t->rank == 0 && t->elementType == type;
}

/// Dropout's non-tensor arguments: an i64 scalar seed, a rate in [0, 1)
/// and a non-negative stream.
inline bool validDropout(const mpTensor *seed, float rate, int64_t stream) {
  return isScalar(seed, MP_I64) && rate >= 0 && rate < 1 && stream >= 0;
}

inline bool sameShape(const mpTensor *a, const mpTensor *b) {
  if (a->rank != b->rank)
    return false;
  for (int32_t d = 0; d < a->rank; ++d)
    if (a->shape[d] != b->shape[d])
      return false;
  return true;
}

/// numpy broadcasting of `lhs` and `rhs` to `out`: per output dimension, the
/// element stride of each operand (0 where it broadcasts). False when the
/// shapes do not broadcast to out's.
inline bool broadcastStrides(const mpTensor &lhs, const mpTensor &rhs,
                             const mpTensor &out, int64_t *lhsStrides,
                             int64_t *rhsStrides) {
  int32_t rank = out.rank;
  if (lhs.rank > rank || rhs.rank > rank)
    return false;
  int64_t lstride = 1, rstride = 1;
  for (int32_t d = rank - 1; d >= 0; --d) {
    int32_t ld = d - (rank - lhs.rank), rd = d - (rank - rhs.rank);
    int64_t lsz = ld >= 0 ? lhs.shape[ld] : 1;
    int64_t rsz = rd >= 0 ? rhs.shape[rd] : 1;
    int64_t osz = out.shape[d];
    if ((lsz != osz && lsz != 1) || (rsz != osz && rsz != 1) ||
        (lsz != osz && rsz != osz))
      return false;
    lhsStrides[d] = lsz == 1 ? 0 : lstride;
    rhsStrides[d] = rsz == 1 ? 0 : rstride;
    lstride *= lsz;
    rstride *= rsz;
  }
  return true;
}

/// numpy broadcasting of `in` to `out`: per output dimension, the element
/// stride of `in` (0 where it broadcasts). False when `in` does not
/// broadcast to out's shape.
inline bool broadcastStridesTo(const mpTensor &in, const mpTensor &out,
                               int64_t *strides) {
  if (in.rank > out.rank)
    return false;
  int64_t stride = 1;
  for (int32_t d = out.rank - 1; d >= 0; --d) {
    int32_t id = d - (out.rank - in.rank);
    int64_t size = id >= 0 ? in.shape[id] : 1;
    if (size != out.shape[d] && size != 1)
      return false;
    strides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  return true;
}

/// The shape rules of mpCompare and mpSelect: operands that broadcast to
/// `out` (none larger than it), of the types the entry points take.
inline bool validCompare(const mpTensor *lhs, const mpTensor *rhs,
                         const mpTensor *out, int kind) {
  return lhs && rhs && out && lhs->elementType == rhs->elementType &&
         out->elementType == MP_I1 && kind >= MP_EQ && kind <= MP_GE &&
         mpNumElements(lhs) >= 0 && mpNumElements(rhs) >= 0 &&
         mpNumElements(out) >= 0 && mpElementSize(lhs->elementType) > 0;
}

inline bool validSelect(const mpTensor *cond, const mpTensor *onTrue,
                        const mpTensor *onFalse, const mpTensor *out) {
  return cond && onTrue && onFalse && out && cond->elementType == MP_I1 &&
         onTrue->elementType == out->elementType &&
         onFalse->elementType == out->elementType &&
         mpElementSize(out->elementType) > 0 && mpNumElements(cond) >= 0 &&
         mpNumElements(onTrue) >= 0 && mpNumElements(onFalse) >= 0 &&
         mpNumElements(out) >= 0;
}

/// Whether `count` elements from `offset`, `stride` apart, lie in
/// [0, size), decided without forming (count - 1) * stride, which a huge
/// stride would overflow. An empty slice fits anywhere.
inline bool sliceFits(int64_t offset, int64_t count, int64_t stride,
                      int64_t size) {
  if (stride < 1 || offset < 0 || count < 0)
    return false;
  if (count == 0)
    return true;
  return offset < size &&
         (count == 1 || stride <= (size - 1 - offset) / (count - 1));
}

/// Layer norm over [axis, rank) of `x`: `scale` has those dimensions, a
/// statistic (mean, rstd) one element per row. Sets rows and cols.
inline bool layerNormShape(const mpTensor *x, const mpTensor *scale,
                           const mpTensor *stat, int64_t axis, int64_t &rows,
                           int64_t &cols) {
  if (axis < 0 || axis >= x->rank || scale->rank != x->rank - axis)
    return false;
  rows = cols = 1;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (d < axis)
      rows *= x->shape[d];
    else if (scale->shape[d - axis] != x->shape[d])
      return false;
    else
      cols *= x->shape[d];
  }
  return !stat || mpNumElements(stat) == rows;
}

/// A rank-4 activation as N, C, H, W in either layout, with its element
/// index.
struct Act {
  int64_t n = 0, c = 0, h = 0, w = 0;
  bool channelsLast = false;

  bool init(const mpTensor *t, bool last) {
    if (!t || !t->data || t->rank != 4 || !isFloatType(t->elementType))
      return false;
    channelsLast = last;
    n = t->shape[0];
    c = last ? t->shape[3] : t->shape[1];
    h = last ? t->shape[1] : t->shape[2];
    w = last ? t->shape[2] : t->shape[3];
    return n > 0 && c > 0 && h > 0 && w > 0;
  }
  int64_t at(int64_t b, int64_t ch, int64_t y, int64_t x) const {
    return channelsLast ? ((b * h + y) * w + x) * c + ch
                        : ((b * c + ch) * h + y) * w + x;
  }
};

/// The geometry of one window sweep, checked: `input` and `out` are
/// activations whose spatial sizes agree with `kh`, `kw` and `win`.
inline bool windowShape(const Act &in, const Act &out, int64_t kh, int64_t kw,
                        const mpWindow *win) {
  if (!win || win->strides[0] < 1 || win->strides[1] < 1 ||
      win->dilations[0] < 1 || win->dilations[1] < 1 || kh < 1 || kw < 1)
    return false;
  for (int k = 0; k < 4; ++k)
    if (win->padding[k] < 0)
      return false;
  int64_t eh = (kh - 1) * win->dilations[0] + 1,
          ew = (kw - 1) * win->dilations[1] + 1;
  int64_t ph = in.h + win->padding[0] + win->padding[2],
          pw = in.w + win->padding[1] + win->padding[3];
  return ph >= eh && pw >= ew && out.n == in.n &&
         out.h == (ph - eh) / win->strides[0] + 1 &&
         out.w == (pw - ew) / win->strides[1] + 1;
}

/// Calls `body(oy, ox, y0, x0)` for every output position with the input
/// position of its window's top-left corner (possibly in the padding).
template <typename Body>
void forEachPosition(const Act &out, const mpWindow *w, Body body) {
  for (int64_t oy = 0; oy < out.h; ++oy)
    for (int64_t ox = 0; ox < out.w; ++ox)
      body(oy, ox, oy * w->strides[0] - w->padding[0],
           ox * w->strides[1] - w->padding[1]);
}

/// A convolution's input, filter and output, checked.
struct ConvShape {
  Act in, out;
  int64_t kh = 0, kw = 0, groups = 1;
  bool init(const mpTensor *input, const mpTensor *filter,
            const mpTensor *output, const mpWindow *win) {
    if (!win || !filter || !filter->data || filter->rank != 4 ||
        !isFloatType(filter->elementType) ||
        !in.init(input, win->channelsLast) ||
        !out.init(output, win->channelsLast))
      return false;
    groups = win->groups;
    kh = filter->shape[2];
    kw = filter->shape[3];
    return groups >= 1 && in.c % groups == 0 && out.c % groups == 0 &&
           filter->shape[0] == out.c && filter->shape[1] * groups == in.c &&
           windowShape(in, out, kh, kw, win);
  }
  int64_t filterAt(int64_t o, int64_t ci, int64_t y, int64_t x) const {
    return ((o * (in.c / groups) + ci) * kh + y) * kw + x;
  }
};

/// A batch norm's activation and per-channel tensors, checked.
inline bool batchNormShape(const mpTensor *x, const mpTensor *y,
                           std::initializer_list<const mpTensor *> perChannel,
                           int32_t channelsLast, Act &act) {
  Act other;
  if (!act.init(x, channelsLast) || !other.init(y, channelsLast) ||
      other.n != act.n || other.c != act.c || other.h != act.h ||
      other.w != act.w)
    return false;
  for (const mpTensor *t : perChannel)
    if (!t || !t->data || !isFloatType(t->elementType) ||
        mpNumElements(t) != act.c)
      return false;
  return true;
}

/// The arguments of mpUnscaleGrads.
inline bool unscaleArguments(int32_t count, const mpTensor *grads,
                             const mpTensor *unscaled, const mpTensor *scale,
                             const mpTensor *foundInf) {
  if (count < 1 || !grads || !unscaled || !isScalar(scale, MP_F32) ||
      !isScalar(foundInf, MP_I1))
    return false;
  for (int32_t i = 0; i < count; ++i)
    if (!isFloatType(grads[i].elementType) ||
        grads[i].elementType != unscaled[i].elementType ||
        !sameShape(&grads[i], &unscaled[i]) || mpNumElements(&grads[i]) < 0)
      return false;
  return true;
}

/// A [K, 6] f32 tensor of range statistics (rows of mpTensorStats).
inline bool isStatsRows(const mpTensor *t) {
  return t && t->data && t->elementType == MP_F32 && t->rank == 2 &&
         t->shape[0] >= 1 && t->shape[1] == 6;
}

/// The arguments of mpRecordNonfinite.
inline bool recordNonfiniteArguments(const mpTensor *status, int32_t count,
                                     const mpTensor *stats, const mpTensor *out,
                                     int64_t opId) {
  if (!isScalar(status, MP_I64) || !isScalar(out, MP_I64) || count < 1 ||
      !stats || opId < 0)
    return false;
  for (int32_t i = 0; i < count; ++i)
    if (!isStatsRows(&stats[i]))
      return false;
  return true;
}

/// f32 state of the shape of `param` (momentum buffers, Adam moments).
inline bool isStateFor(const mpTensor *t, const mpTensor *param) {
  return t && t->data && t->elementType == MP_F32 && sameShape(t, param);
}

/// f32 parameter with a float gradient of its shape and an optional i1 skip
/// predicate: what both optimizer updates take.
inline bool updateArguments(const mpTensor *param, const mpTensor *grad,
                            const mpTensor *skip) {
  return param && param->data && param->elementType == MP_F32 && grad &&
         grad->data && isFloatType(grad->elementType) &&
         sameShape(grad, param) && (!skip || isScalar(skip, MP_I1));
}

/// The arguments of mpSgdUpdate: a momentum buffer exactly when momentum is
/// non-zero, apart from the parameter (the kernels update both in place
/// and assume they do not overlap).
inline bool sgdArguments(const mpTensor *param, const mpTensor *grad,
                         const mpTensor *momentumBuffer, const mpTensor *skip,
                         float momentum) {
  return updateArguments(param, grad, skip) &&
         (momentum != 0) == (momentumBuffer != nullptr) &&
         (!momentumBuffer || (isStateFor(momentumBuffer, param) &&
                              momentumBuffer->data != param->data));
}

/// The arguments of mpAdamUpdate: the parameter and its two moments are
/// three buffers.
inline bool adamArguments(const mpTensor *param, const mpTensor *grad,
                          const mpTensor *firstMoment,
                          const mpTensor *secondMoment, const mpTensor *step,
                          const mpTensor *skip) {
  return updateArguments(param, grad, skip) &&
         isStateFor(firstMoment, param) && isStateFor(secondMoment, param) &&
         isScalar(step, MP_I64) && firstMoment->data != param->data &&
         secondMoment->data != param->data &&
         firstMoment->data != secondMoment->data;
}

/// The `copy` of mpSgdUpdateWithCopy and mpAdamUpdateWithCopy: absent, or
/// an f16 or bf16 tensor of the parameter's shape.
inline bool isCopyFor(const mpTensor *copy, const mpTensor *param) {
  return !copy || (copy->data &&
                   (copy->elementType == MP_F16 ||
                    copy->elementType == MP_BF16) &&
                   sameShape(copy, param));
}

/// mpFusedMatmulBiasGrad's rule for its sums: two 2-D operands, a known
/// `biasGradOf`, and a floating-point vector `biasGrad` with one element
/// per line summed (row of op(lhs), column of op(rhs)). Gives the operand
/// summed and the axis that holds k in it as stored (0 for a transposed
/// lhs or a plain rhs, 1 otherwise).
inline bool planBiasGrad(const mpTensor *lhs, const mpTensor *rhs,
                         const mpTensor *biasGrad, int32_t biasGradOf,
                         bool transposeLhs, bool transposeRhs,
                         const mpTensor *&summed, int64_t &axis) {
  if (!lhs || !rhs || !biasGrad || lhs->rank != 2 || rhs->rank != 2 ||
      biasGrad->rank != 1 || !isFloatType(biasGrad->elementType) ||
      (biasGradOf != MP_MATMUL_LHS && biasGradOf != MP_MATMUL_RHS))
    return false;
  bool ofLhs = biasGradOf == MP_MATMUL_LHS;
  summed = ofLhs ? lhs : rhs;
  axis = (ofLhs ? transposeLhs : !transposeRhs) ? 0 : 1;
  return biasGrad->shape[0] == summed->shape[1 - axis];
}

} // namespace mp::rt

#endif // MP_RUNTIME_LIB_CHECKS_H
