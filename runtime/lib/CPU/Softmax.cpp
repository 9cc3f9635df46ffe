//===- Softmax.cpp - softmax, reductions and losses on the CPU ------------===//
//
// Softmax subtracts the maximum first; cross-entropy uses log-sum-exp the
// same way. All accumulate in the compute type (Compute.h).
//
// With the fast kernels on and f32 compute, softmax over the last axis and
// reductions over one contiguous run of axes, or two runs around kept ones
// (NCHW's [N, C, H, W] to [C]), read rows or tiles (in place when stored as
// f32, converted otherwise) and split rows (or kept elements) across
// threads; softmax's row loops are compiled for the CPU's vector
// instructions. A reduction's sum still adds its inputs one by one in input
// order, so the result is the reference loop's. Softmax and its gradient
// reduce each row in eight interleaved lanes instead (laneReduce), eight
// independent chains, held in one vector value on the fast path (laneSum,
// laneMax, laneDot); their reference loops take the same order, so the two
// agree.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Compute.h"
#include "Math.h"
#include "Tiles.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

using namespace mp::rt;

static bool valid(const mpTensor *t) {
  return t && t->data && isFloatType(t->elementType) && mpNumElements(t) >= 0;
}

/// The fast paths' loops over one row, over f32 buffers that do not overlap
/// (__restrict), each the reference loop's expression in its order;
/// compiled for AVX-512, AVX2 and the baseline.
/// * softmaxRow: y = softmax(x) or log-softmax(x), with e as scratch;
/// * softmaxGradRow: dx from dy and the forward result p.
#define MP_SOFTMAX_LOOPS(SUFFIX, TARGET)                                       \
  TARGET static void softmaxRow##SUFFIX(                                       \
      const float *__restrict x, int64_t n, int32_t logSoftmax,                \
      float *__restrict e, float *__restrict y) {                              \
    float mx = laneMax(x, n);                                                  \
    for (int64_t k = 0; k < n; ++k)                                            \
      e[k] = expF(x[k] - mx);                                                  \
    float sum = laneSum(e, n);                                                 \
    if (logSoftmax) {                                                          \
      float logSum = std::log(sum);                                            \
      for (int64_t k = 0; k < n; ++k)                                          \
        y[k] = (x[k] - mx) - logSum;                                           \
    } else {                                                                   \
      for (int64_t k = 0; k < n; ++k)                                          \
        y[k] = e[k] / sum;                                                     \
    }                                                                          \
  }                                                                            \
  TARGET static void softmaxGradRow##SUFFIX(                                   \
      const float *__restrict dy, const float *__restrict p, int64_t n,        \
      int32_t logSoftmax, float *__restrict dx) {                              \
    if (logSoftmax) {                                                          \
      float sum = laneSum(dy, n);                                              \
      for (int64_t k = 0; k < n; ++k)                                          \
        dx[k] = dy[k] - expF(p[k]) * sum;                                      \
    } else {                                                                   \
      float sum = laneDot(dy, p, n);                                           \
      for (int64_t k = 0; k < n; ++k)                                          \
        dx[k] = p[k] * (dy[k] - sum);                                          \
    }                                                                          \
  }
MP_SOFTMAX_LOOPS(Avx512, MP_TARGET_AVX512)
MP_SOFTMAX_LOOPS(Avx2, MP_TARGET_AVX2)
MP_SOFTMAX_LOOPS(Base, )
#undef MP_SOFTMAX_LOOPS

static bool fastSoftmax(const mpTensor *in, mpTensor *out, const AxisView &v,
                        int32_t logSoftmax, mpElementType compute) {
  if (v.inner != 1 || !f32FastPath(compute, {in, out}))
    return false;
  int64_t len = v.len;
  auto softmaxRow = forIsa(softmaxRowAvx512, softmaxRowAvx2, softmaxRowBase);
  parallelFor(v.outer, rowGrain(len), [&](int64_t begin, int64_t end) {
    float *x = scratchRow(0, len), *e = scratchRow(1, len),
          *buf = scratchRow(2, len);
    for (int64_t o = begin; o < end; ++o) {
      float *y = outRowF32(out, o * len, buf, {in});
      softmaxRow(rowF32(in, o * len, len, x), len, logSoftmax, e, y);
      storeRowF32(y, len, out, o * len);
    }
  });
  return true;
}

static bool fastSoftmaxGrad(const mpTensor *dy, const mpTensor *y, mpTensor *dx,
                            const AxisView &v, int32_t logSoftmax,
                            mpElementType compute) {
  if (v.inner != 1 || !f32FastPath(compute, {dy, y, dx}))
    return false;
  int64_t len = v.len;
  auto softmaxGradRow =
      forIsa(softmaxGradRowAvx512, softmaxGradRowAvx2, softmaxGradRowBase);
  parallelFor(v.outer, rowGrain(len), [&](int64_t begin, int64_t end) {
    float *g = scratchRow(0, len), *p = scratchRow(1, len),
          *buf = scratchRow(2, len);
    for (int64_t o = begin; o < end; ++o) {
      float *out = outRowF32(dx, o * len, buf, {dy, y});
      softmaxGradRow(rowF32(dy, o * len, len, g), rowF32(y, o * len, len, p),
                     len, logSoftmax, out);
      storeRowF32(out, len, dx, o * len);
    }
  });
  return true;
}

extern "C" mpStatus mpSoftmax(const mpTensor *in, mpTensor *out,
                              int64_t axis, int32_t logSoftmax,
                              mpElementType compute) {
  AxisView v;
  if (!valid(in) || !valid(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !v.init(in, axis))
    return MP_ERROR_INVALID_ARGUMENT;
  if (fastSoftmax(in, out, v, logSoftmax, compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        T mx = laneReduce(
            v.len, T(-INFINITY),
            [&](int64_t k) { return a.in(in, v.index(o, k, i)); }, maxOf<T>);
        T sum = laneReduce(
            v.len, T(0),
            [&](int64_t k) {
              return a.exp(a.sub(a.in(in, v.index(o, k, i)), mx));
            },
            [&](T x, T y) { return a.add(x, y); });
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
  if (fastSoftmaxGrad(dy, y, dx, v, logSoftmax, compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        T sum = laneReduce(
            v.len, T(0),
            [&](int64_t k) {
              int64_t j = v.index(o, k, i);
              return logSoftmax ? a.in(dy, j)
                                : a.mul(a.in(dy, j), a.in(y, j));
            },
            [&](T x, T y) { return a.add(x, y); });
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

/// mpReduce with f32 compute where the reduced axes form one run, as
/// [outer, count, inner], or two around kept ones, as [outer, count, kept,
/// inner] with the second run innermost (a convolution's bias gradient in
/// NCHW: axes 0, 2 and 3); false for other cases. Dimensions of size 1
/// join either run.
static bool fastReduce(mpReduceKind kind, const mpTensor *in, mpTensor *out,
                       const bool *reduced, mpElementType compute) {
  if (!f32FastPath(compute, {in, out}))
    return false;
  // The dimensions as runs of reduced or kept ones, outermost first.
  int64_t size[MP_MAX_RANK];
  bool runReduced[MP_MAX_RANK];
  int32_t runs = 0;
  for (int32_t d = 0; d < in->rank; ++d) {
    if (in->shape[d] == 1)
      continue;
    if (runs && runReduced[runs - 1] == reduced[d]) {
      size[runs - 1] *= in->shape[d];
    } else {
      size[runs] = in->shape[d];
      runReduced[runs++] = reduced[d];
    }
  }
  int32_t r = 0;
  int64_t outer = 1, count = 1, kept = 1, inner = 1;
  if (r < runs && !runReduced[r])
    outer = size[r++];
  if (r < runs)
    count = size[r++]; // reduced
  if (r + 2 == runs) { // kept, then reduced
    kept = size[r];
    inner = size[r + 1];
  } else if (r + 1 == runs) { // kept
    inner = size[r];
  } else if (r != runs) {
    return false; // more runs
  }
  bool max = kind == MP_REDUCE_MAX;
  bool twoRuns = r + 2 == runs;
  int64_t reducedCount = twoRuns ? count * inner : count;
  auto finish = [&](float *acc, int64_t n, int64_t at) {
    if (kind == MP_REDUCE_MEAN)
      for (int64_t j = 0; j < n; ++j)
        acc[j] = acc[j] / float(reducedCount);
    storeF32(acc, n, out->data, out->elementType, at);
  };
  auto combine = [max](float acc, float x) {
    return max ? (std::isnan(x) || x > acc ? x : acc) : acc + x;
  };
  if (twoRuns) {
    // Output [o, k] combines [o, :, k, :] in the reference loop's order,
    // the outer run, then the inner one, in a chain of its own. kBlock
    // neighbouring outputs go together, their chains interleaved, reading
    // their rows a piece of up to kPiece elements at a time (converted into
    // a buffer of that size unless stored as f32).
    constexpr int64_t kBlock = 8, kPiece = kTile / kBlock;
    int64_t blocks = (kept + kBlock - 1) / kBlock;
    parallelFor(outer * blocks,
                std::max<int64_t>(1, 16 * kTile / (count * kBlock * inner + 1)),
                [&](int64_t begin, int64_t end) {
                  float buf[kBlock][kPiece];
                  for (int64_t u = begin; u < end; ++u) {
                    int64_t o = u / blocks, k0 = u % blocks * kBlock;
                    int64_t nb = std::min(kBlock, kept - k0);
                    float acc[kBlock];
                    for (int64_t b = 0; b < nb; ++b)
                      acc[b] = max ? -INFINITY : 0.0f;
                    for (int64_t c = 0; c < count; ++c) {
                      int64_t base = ((o * count + c) * kept + k0) * inner;
                      for (int64_t j0 = 0; j0 < inner; j0 += kPiece) {
                        int64_t len = std::min(kPiece, inner - j0);
                        const float *row[kBlock];
                        for (int64_t b = 0; b < nb; ++b)
                          row[b] = rowF32(in, base + b * inner + j0, len,
                                          buf[b]);
                        for (int64_t j = 0; j < len; ++j)
                          for (int64_t b = 0; b < nb; ++b)
                            acc[b] = combine(acc[b], row[b][j]);
                      }
                    }
                    finish(acc, nb, o * kept + k0);
                  }
                });
    return true;
  }
  if (inner == 1) {
    // Each output reduces one contiguous row.
    parallelFor(outer, std::max<int64_t>(1, 16 * kTile / (count + 1)),
                [&](int64_t begin, int64_t end) {
                  float x[kTile];
                  for (int64_t o = begin; o < end; ++o) {
                    float acc = max ? -INFINITY : 0.0f;
                    for (int64_t k = 0; k < count; k += kTile) {
                      int64_t n = std::min(kTile, count - k);
                      const float *row = rowF32(in, o * count + k, n, x);
                      for (int64_t j = 0; j < n; ++j)
                        acc = combine(acc, row[j]);
                    }
                    finish(&acc, 1, o);
                  }
                });
    return true;
  }
  // Each output column [o, :, i] adds rows in order; threads take columns,
  // in pieces of a tile, or narrower when there are fewer tiles than
  // threads (a bias gradient: [tokens, 768] to [768]).
  int64_t columns = outer * inner;
  int64_t width = std::min<int64_t>(
      kTile, std::max<int64_t>(64, (columns / kernelThreads() + 15) / 16 * 16));
  auto combineRow = max ? maxRow : addRow;
  parallelFor((columns + width - 1) / width,
              std::max<int64_t>(1, 16 / (count + 1)),
              [&](int64_t begin, int64_t end) {
                float acc[kTile], x[kTile];
                for (int64_t t = begin; t < end; ++t) {
                  int64_t c0 = t * width, n = std::min(width, columns - c0);
                  // A tile never crosses an outer index when inner is a
                  // multiple of kTile; otherwise go piece by piece.
                  for (int64_t c = c0; c < c0 + n;) {
                    int64_t o = c / inner, i = c % inner;
                    int64_t len = std::min(c0 + n - c, inner - i);
                    float *a = acc + (c - c0);
                    for (int64_t j = 0; j < len; ++j)
                      a[j] = max ? -INFINITY : 0.0f;
                    for (int64_t k = 0; k < count; ++k)
                      combineRow(a,
                                 rowF32(in, (o * count + k) * inner + i, len,
                                        x),
                                 len);
                    c += len;
                  }
                  finish(acc, n, c0);
                }
              });
  return true;
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
  if (fastReduce(kind, in, out, reduced, compute))
    return MP_OK;
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

extern "C" mpStatus mpCumSum(const mpTensor *in, mpTensor *out, int64_t axis,
                             int32_t exclusive, int32_t reverse,
                             mpElementType compute) {
  AxisView v;
  if (!valid(in) || !valid(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !v.init(in, axis))
    return MP_ERROR_INVALID_ARGUMENT;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t o = 0; o < v.outer; ++o)
      for (int64_t i = 0; i < v.inner; ++i) {
        T sum = 0;
        for (int64_t j = 0; j < v.len; ++j) {
          int64_t k = v.index(o, reverse ? v.len - 1 - j : j, i);
          T x = a.in(in, k);
          if (!exclusive)
            sum = a.add(sum, x);
          a.out(out, k, sum);
          if (exclusive)
            sum = a.add(sum, x);
        }
      }
  });
  return MP_OK;
}

/// Label `i` of an i32 or i64 tensor.
static int64_t label(const mpTensor *labels, int64_t i) {
  return labels->elementType == MP_I32
             ? static_cast<const int32_t *>(labels->data)[i]
             : static_cast<const int64_t *>(labels->data)[i];
}

/// How many of the labels are in [0, classes): the positions the mean of
/// the cross-entropy is over (the others, e.g. Hugging Face's -100, are
/// ignored).
static int64_t labelledRows(const mpTensor *labels, int64_t classes) {
  int64_t counted = 0, rows = mpNumElements(labels);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t y = label(labels, r);
    counted += y >= 0 && y < classes;
  }
  return counted;
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

/// f32 compute: rows across threads. Each row's exponentials come from a
/// vectorised loop and are summed in order, as rowStats sums them; the
/// loss's terms are kept per row and added in row order afterwards.
static void fastRowStats(const float *x, int64_t classes, float *e, float &mx,
                         float &sum) {
  mx = -INFINITY;
  for (int64_t c = 0; c < classes; ++c)
    mx = std::max(mx, x[c]);
  expShifted(x, mx, e, classes);
  sum = 0;
  for (int64_t c = 0; c < classes; ++c)
    sum = sum + e[c];
}

static bool fastSoftmaxCrossEntropy(const mpTensor *logits,
                                    const mpTensor *labels, mpTensor *loss,
                                    int64_t counted, mpElementType compute) {
  if (!f32FastPath(compute, {logits, loss}))
    return false;
  int64_t classes = logits->shape[logits->rank - 1];
  int64_t rows = mpNumElements(labels);
  std::vector<float> terms(rows);
  parallelFor(rows, rowGrain(classes), [&](int64_t begin, int64_t end) {
    float *x = scratchRow(0, classes), *e = scratchRow(1, classes);
    for (int64_t r = begin; r < end; ++r) {
      int64_t y = label(labels, r);
      if (y < 0 || y >= classes)
        continue;
      loadF32(logits->data, logits->elementType, r * classes, classes, x);
      float mx, sum;
      fastRowStats(x, classes, e, mx, sum);
      terms[r] = std::log(sum) - (x[y] - mx);
    }
  });
  float total = 0;
  for (int64_t r = 0; r < rows; ++r) {
    int64_t y = label(labels, r);
    if (y >= 0 && y < classes)
      total = total + terms[r];
  }
  float result = counted ? total / float(counted) : 0.0f;
  storeF32(&result, 1, loss->data, loss->elementType, 0);
  return true;
}

static bool fastSoftmaxCrossEntropyGrad(const mpTensor *dloss,
                                        const mpTensor *logits,
                                        const mpTensor *labels,
                                        mpTensor *dlogits, int64_t counted,
                                        mpElementType compute) {
  if (!f32FastPath(compute, {dloss, logits, dlogits}))
    return false;
  int64_t classes = logits->shape[logits->rank - 1];
  int64_t rows = mpNumElements(labels);
  float d;
  loadF32(dloss->data, dloss->elementType, 0, 1, &d);
  float scale = counted ? d / float(counted) : 0.0f;
  parallelFor(rows, rowGrain(classes), [&](int64_t begin, int64_t end) {
    float *x = scratchRow(0, classes), *e = scratchRow(1, classes);
    for (int64_t r = begin; r < end; ++r) {
      int64_t y = label(labels, r);
      if (y < 0 || y >= classes) {
        std::fill(x, x + classes, 0.0f);
      } else {
        loadF32(logits->data, logits->elementType, r * classes, classes, x);
        float mx, sum;
        fastRowStats(x, classes, e, mx, sum);
        for (int64_t c = 0; c < classes; ++c)
          x[c] = scale * (e[c] / sum);
        x[y] = scale * (e[y] / sum - 1.0f);
      }
      storeF32(x, classes, dlogits->data, dlogits->elementType, r * classes);
    }
  });
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
  int64_t counted = labelledRows(labels, classes);
  if (fastSoftmaxCrossEntropy(logits, labels, loss, counted, compute))
    return MP_OK;
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
    a.out(loss, 0, counted ? a.div(total, T(counted)) : T(0));
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
  int64_t counted = labelledRows(labels, classes);
  if (fastSoftmaxCrossEntropyGrad(dloss, logits, labels, dlogits, counted,
                                  compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    T scale = counted ? a.div(a.in(dloss, 0), T(counted)) : T(0);
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
