//===- Softmax.cpp - softmax, reductions and losses on the CPU ------------===//
//
// Softmax subtracts the maximum first; cross-entropy uses log-sum-exp the
// same way. All accumulate in the compute type (Compute.h).
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Compute.h"

#include <vector>

using namespace mp::rt;

static bool valid(const mpTensor *t) {
  return t && t->data && isFloatType(t->elementType) && mpNumElements(t) >= 0;
}

extern "C" mpStatus mpSoftmax(const mpTensor *in, mpTensor *out,
                              int64_t axis, int32_t logSoftmax,
                              mpElementType compute) {
  AxisView v;
  if (!valid(in) || !valid(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !v.init(in, axis))
    return MP_ERROR_INVALID_ARGUMENT;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        T mx = -INFINITY;
        for (int64_t k = 0; k < v.len; ++k)
          mx = std::max(mx, a.in(in, v.index(o, k, i)));
        T sum = 0;
        for (int64_t k = 0; k < v.len; ++k)
          sum = a.add(sum, a.exp(a.sub(a.in(in, v.index(o, k, i)), mx)));
        T logSum = a.log(sum);
        for (int64_t k = 0; k < v.len; ++k) {
          T x = a.sub(a.in(in, v.index(o, k, i)), mx);
          a.out(out, v.index(o, k, i),
                logSoftmax ? a.sub(x, logSum) : a.div(a.exp(x), sum));
        }
      }
  });
  return MP_OK;
}

extern "C" mpStatus mpSoftmaxGrad(const mpTensor *dy, const mpTensor *y,
                                  mpTensor *dx, int64_t axis,
                                  int32_t logSoftmax, mpElementType compute) {
  AxisView v;
  if (!valid(dy) || !valid(y) || !valid(dx) || !sameShape(dy, y) ||
      !sameShape(dy, dx) || !isFloatType(compute) || !v.init(dy, axis))
    return MP_ERROR_INVALID_ARGUMENT;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        T sum = 0;
        for (int64_t k = 0; k < v.len; ++k) {
          int64_t j = v.index(o, k, i);
          sum = a.add(sum, logSoftmax ? a.in(dy, j)
                                      : a.mul(a.in(dy, j), a.in(y, j)));
        }
        for (int64_t k = 0; k < v.len; ++k) {
          int64_t j = v.index(o, k, i);
          T r = logSoftmax
                    ? a.sub(a.in(dy, j), a.mul(a.exp(a.in(y, j)), sum))
                    : a.mul(a.in(y, j), a.sub(a.in(dy, j), sum));
          a.out(dx, j, r);
        }
      }
  });
  return MP_OK;
}

extern "C" mpStatus mpReduce(mpReduceKind kind, const mpTensor *in,
                             mpTensor *out, const int64_t *axes,
                             int32_t numAxes, mpElementType compute) {
  if (!valid(in) || !valid(out) || !isFloatType(compute) || numAxes < 0 ||
      (numAxes && !axes) || kind < MP_REDUCE_SUM || kind > MP_REDUCE_MAX)
    return MP_ERROR_INVALID_ARGUMENT;
  bool reduced[MP_MAX_RANK] = {};
  int64_t count = 1, kept = 1;
  for (int32_t i = 0; i < numAxes; ++i) {
    if (axes[i] < 0 || axes[i] >= in->rank || (i && axes[i] <= axes[i - 1]))
      return MP_ERROR_INVALID_ARGUMENT;
    reduced[axes[i]] = true;
  }
  for (int32_t d = 0; d < in->rank; ++d)
    (reduced[d] ? count : kept) *= in->shape[d];
  if (mpNumElements(out) != kept)
    return MP_ERROR_INVALID_ARGUMENT;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    std::vector<T> acc(kept, kind == MP_REDUCE_MAX ? T(-INFINITY) : T(0));
    int64_t n = mpNumElements(in);
    for (int64_t i = 0; i < n; ++i) {
      // Output index: the coordinates of the kept dimensions.
      int64_t rest = i, o = 0, stride = 1;
      for (int32_t d = in->rank - 1; d >= 0; --d) {
        int64_t c = rest % in->shape[d];
        rest /= in->shape[d];
        if (!reduced[d]) {
          o += c * stride;
          stride *= in->shape[d];
        }
      }
      T x = a.in(in, i);
      acc[o] = kind == MP_REDUCE_MAX ? (std::isnan(x) || x > acc[o] ? x : acc[o])
                                     : a.add(acc[o], x);
    }
    for (int64_t o = 0; o < kept; ++o)
      a.out(out, o, kind == MP_REDUCE_MEAN ? a.div(acc[o], T(count)) : acc[o]);
  });
  return MP_OK;
}

/// Label `i` of an i32 or i64 tensor.
static int64_t label(const mpTensor *labels, int64_t i) {
  return labels->elementType == MP_I32
             ? static_cast<const int32_t *>(labels->data)[i]
             : static_cast<const int64_t *>(labels->data)[i];
}

/// The maximum of logits row `r` and the sum of exp(x - max) over it.
template <typename A, typename T>
static void rowStats(const A &a, const mpTensor *logits, int64_t r,
                     int64_t classes, T &mx, T &sum) {
  mx = -INFINITY;
  for (int64_t c = 0; c < classes; ++c)
    mx = std::max(mx, a.in(logits, r * classes + c));
  sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    sum = a.add(sum, a.exp(a.sub(a.in(logits, r * classes + c), mx)));
}

static bool validLogits(const mpTensor *logits, const mpTensor *labels) {
  if (!valid(logits) || logits->rank < 1 || !labels || !labels->data ||
      (labels->elementType != MP_I32 && labels->elementType != MP_I64) ||
      labels->rank != logits->rank - 1)
    return false;
  for (int32_t d = 0; d < labels->rank; ++d)
    if (labels->shape[d] != logits->shape[d])
      return false;
  return true;
}

extern "C" mpStatus mpSoftmaxCrossEntropy(const mpTensor *logits,
                                          const mpTensor *labels,
                                          mpTensor *loss,
                                          mpElementType compute) {
  if (!validLogits(logits, labels) || !valid(loss) || loss->rank != 0 ||
      !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t classes = logits->shape[logits->rank - 1];
  int64_t rows = mpNumElements(labels);
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    T total = 0;
    for (int64_t r = 0; r < rows; ++r) {
      int64_t y = label(labels, r);
      if (y < 0 || y >= classes)
        continue;
      T mx, sum;
      rowStats(a, logits, r, classes, mx, sum);
      // -log_softmax[y] = log(sum) - (x_y - max)
      total = a.add(total, a.sub(a.log(sum),
                                 a.sub(a.in(logits, r * classes + y), mx)));
    }
    a.out(loss, 0, rows ? a.div(total, T(rows)) : T(0));
  });
  return MP_OK;
}

extern "C" mpStatus mpSoftmaxCrossEntropyGrad(const mpTensor *dloss,
                                              const mpTensor *logits,
                                              const mpTensor *labels,
                                              mpTensor *dlogits,
                                              mpElementType compute) {
  if (!valid(dloss) || dloss->rank != 0 || !validLogits(logits, labels) ||
      !valid(dlogits) || !sameShape(logits, dlogits) || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t classes = logits->shape[logits->rank - 1];
  int64_t rows = mpNumElements(labels);
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    T scale = rows ? a.div(a.in(dloss, 0), T(rows)) : T(0);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t y = label(labels, r);
      if (y < 0 || y >= classes) {
        for (int64_t c = 0; c < classes; ++c)
          a.out(dlogits, r * classes + c, T(0));
        continue;
      }
      T mx, sum;
      rowStats(a, logits, r, classes, mx, sum);
      for (int64_t c = 0; c < classes; ++c) {
        T p = a.div(a.exp(a.sub(a.in(logits, r * classes + c), mx)), sum);
        a.out(dlogits, r * classes + c,
              a.mul(scale, c == y ? a.sub(p, T(1)) : p));
      }
    }
  });
  return MP_OK;
}

extern "C" mpStatus mpMseLoss(const mpTensor *prediction,
                              const mpTensor *target, mpTensor *loss,
                              mpElementType compute) {
  if (!valid(prediction) || !valid(target) || !sameShape(prediction, target) ||
      !valid(loss) || loss->rank != 0 || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(prediction);
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    T total = 0;
    for (int64_t i = 0; i < n; ++i) {
      T d = a.sub(a.in(prediction, i), a.in(target, i));
      total = a.add(total, a.mul(d, d));
    }
    a.out(loss, 0, n ? a.div(total, T(n)) : T(0));
  });
  return MP_OK;
}

extern "C" mpStatus mpMseLossGrad(const mpTensor *dloss,
                                  const mpTensor *prediction,
                                  const mpTensor *target,
                                  mpTensor *dprediction,
                                  mpElementType compute) {
  if (!valid(dloss) || dloss->rank != 0 || !valid(prediction) ||
      !valid(target) || !sameShape(prediction, target) || !valid(dprediction) ||
      !sameShape(prediction, dprediction) || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(prediction);
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    // (p - t) * (2 / n) first, then the seed: a seed scaled close to the
    // largest float (loss scaling) must not overflow through 2 * dloss.
    T twoOverN = n ? a.div(T(2), T(n)) : T(0);
    T seed = a.in(dloss, 0);
    for (int64_t i = 0; i < n; ++i)
      a.out(dprediction, i,
            a.mul(a.mul(a.sub(a.in(prediction, i), a.in(target, i)), twoOverN),
                  seed));
  });
  return MP_OK;
}
