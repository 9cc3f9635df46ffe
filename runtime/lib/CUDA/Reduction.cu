//===- Reduction.cu - softmax, reductions, losses, layer normalisation ----===//
//
// Row-wise kernels give one block to a row and reduce in registers, warp
// shuffles and shared memory in a fixed order (so results do not vary from
// run to run). Column-wise reductions (a reduced axis that is not
// innermost, layer norm's scale and bias gradients) split the rows into
// groups, write one partial result per group and column, and sum the
// partials in a second kernel, in order. Accumulation is in f32 (f64 for an
// f64 compute type).
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "Kernels.h"

#include <initializer_list>
#include <type_traits>

using namespace mp;
using namespace mp::cuda;

namespace {

/// A tensor's data and element type, for kernels.
struct Ref {
  const void *data;
  int type;
};
struct MutRef {
  void *data;
  int type;
};

Ref ref(const mpTensor *t) { return {t->data, t->elementType}; }
MutRef mut(mpTensor *t) { return {t->data, t->elementType}; }

/// [outer, length, inner] around `axis`.
bool splitAt(const mpTensor *t, int64_t axis, int64_t &outer, int64_t &length,
             int64_t &inner) {
  if (axis < 0 || axis >= t->rank)
    return false;
  outer = inner = 1;
  for (int32_t d = 0; d < axis; ++d)
    outer *= t->shape[d];
  length = t->shape[axis];
  for (int32_t d = int32_t(axis) + 1; d < t->rank; ++d)
    inner *= t->shape[d];
  return true;
}

unsigned rowGrid(int64_t rows) {
  return unsigned(std::clamp<int64_t>(rows, 1, 1 << 20));
}

//===----------------------------------------------------------------------===//
// Softmax
//===----------------------------------------------------------------------===//

/// Row i of [outer, length, inner] starts at (i / inner) * length * inner +
/// i % inner and steps by inner.
__device__ __forceinline__ int64_t rowStart(int64_t row, int64_t length,
                                            int64_t inner) {
  return (row / inner) * length * inner + row % inner;
}

template <typename C>
__global__ void softmaxKernel(Ref in, MutRef out, int64_t rows, int64_t length,
                              int64_t inner, int logSoftmax, int compute) {
  __shared__ C shared[kThreads / 32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = rowStart(row, length, inner);
    C m = -INFINITY;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
      m = MaxOp()(m, loadAs<C>(in.data, in.type, base + j * inner));
    m = blockReduce(m, MaxOp(), shared);
    C sum = 0;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x)
      sum += roundCompute(
          compute, exp(loadAs<C>(in.data, in.type, base + j * inner) - m));
    sum = roundCompute(compute, blockReduce(sum, SumOp(), shared));
    C logSum = roundCompute(compute, C(log(sum)));
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      C x = loadAs<C>(in.data, in.type, base + j * inner) - m;
      C y = logSoftmax ? x - logSum : exp(x) / sum;
      storeAs<C>(out.data, out.type, base + j * inner, roundCompute(compute, y));
    }
  }
}

template <typename C>
__global__ void softmaxGradKernel(Ref dy, Ref y, MutRef dx, int64_t rows,
                                  int64_t length, int64_t inner,
                                  int logSoftmax, int compute) {
  __shared__ C shared[kThreads / 32];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    int64_t base = rowStart(row, length, inner);
    C dot = 0;
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      int64_t i = base + j * inner;
      C g = loadAs<C>(dy.data, dy.type, i);
      dot += logSoftmax ? g
                        : roundCompute(compute, g * loadAs<C>(y.data, y.type, i));
    }
    dot = roundCompute(compute, blockReduce(dot, SumOp(), shared));
    for (int64_t j = threadIdx.x; j < length; j += blockDim.x) {
      int64_t i = base + j * inner;
      C g = loadAs<C>(dy.data, dy.type, i);
      C s = loadAs<C>(y.data, y.type, i);
      C r = logSoftmax ? g - roundCompute(compute, C(exp(s))) * dot
                       : s * (g - dot);
      storeAs<C>(dx.data, dx.type, i, roundCompute(compute, r));
    }
  }
}

//===----------------------------------------------------------------------===//
// Softmax of short contiguous rows: a warp to a row
//===----------------------------------------------------------------------===//
//
// The attention scores' rows (one per query, as long as the sequence) are
// short and contiguous. A warp holds such a row in registers, PerLane
// elements a lane (lane l takes elements l, l + 32, ...), so the row is read
// once and written once and the reductions are shuffles. The arithmetic is
// the block kernel's, rounding at the same points; only the (fixed) order of
// the sums differs.

/// Blocks of four warps: the long rows' gradient kernel takes up to 128
/// registers a thread (sm_90), and small blocks still fit several to a
/// multiprocessor.
constexpr int kRowThreads = 128;
constexpr int kRowsPerBlock = kRowThreads / 32;

/// Loads row `row` (elements past `length` are `pad`) into `v`.
template <typename T, int PerLane>
__device__ __forceinline__ void loadRow(const T *p, int64_t row, int length,
                                        float pad, float (&v)[PerLane]) {
  const T *base = p + row * length;
  int lane = threadIdx.x % 32;
#pragma unroll
  for (int k = 0; k < PerLane; ++k) {
    int j = lane + 32 * k;
    v[k] = j < length ? toFloat(base[j]) : pad;
  }
}

template <typename T, int PerLane>
__global__ void __launch_bounds__(kRowThreads)
    softmaxRowsKernel(const T *in, T *out, int64_t rows, int length,
                      int logSoftmax, int compute) {
  int lane = threadIdx.x % 32;
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       row < rows; row += int64_t(gridDim.x) * kRowsPerBlock) {
    float v[PerLane];
    loadRow<T, PerLane>(in, row, length, -INFINITY, v);
    float m = -INFINITY;
#pragma unroll
    for (int k = 0; k < PerLane; ++k)
      m = MaxOp()(m, v[k]);
    m = warpReduce(m, MaxOp());
    float sum = 0;
#pragma unroll
    for (int k = 0; k < PerLane; ++k)
      if (lane + 32 * k < length)
        sum += roundCompute(compute, exp(v[k] - m));
    sum = roundCompute(compute, warpReduce(sum, SumOp()));
    float logSum = roundCompute(compute, float(log(sum)));
    T *base = out + row * length;
#pragma unroll
    for (int k = 0; k < PerLane; ++k) {
      int j = lane + 32 * k;
      if (j < length) {
        float x = v[k] - m;
        float y = logSoftmax ? x - logSum : exp(x) / sum;
        base[j] = fromFloat<T>(roundCompute(compute, y));
      }
    }
  }
}

template <typename T, int PerLane>
__global__ void __launch_bounds__(kRowThreads)
    softmaxGradRowsKernel(const T *dy, const T *y, T *dx, int64_t rows,
                          int length, int logSoftmax, int compute) {
  int lane = threadIdx.x % 32;
  for (int64_t row = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
       row < rows; row += int64_t(gridDim.x) * kRowsPerBlock) {
    float g[PerLane], s[PerLane];
    loadRow<T, PerLane>(dy, row, length, 0.0f, g);
    loadRow<T, PerLane>(y, row, length, 0.0f, s);
    float dot = 0;
#pragma unroll
    for (int k = 0; k < PerLane; ++k)
      if (lane + 32 * k < length)
        dot += logSoftmax ? g[k] : roundCompute(compute, g[k] * s[k]);
    dot = roundCompute(compute, warpReduce(dot, SumOp()));
    T *base = dx + row * length;
#pragma unroll
    for (int k = 0; k < PerLane; ++k) {
      int j = lane + 32 * k;
      if (j < length) {
        float r = logSoftmax
                      ? g[k] - roundCompute(compute, float(exp(s[k]))) * dot
                      : s[k] * (g[k] - dot);
        base[j] = fromFloat<T>(roundCompute(compute, r));
      }
    }
  }
}

constexpr int kMaxWarpRow = 1024;

/// Whether rows of `length` along `axis` (`inner` elements apart) over
/// tensors of one storage type and compute type `compute` take the
/// warp-per-row kernels.
bool warpRows(int64_t length, int64_t inner, int type, int compute,
              std::initializer_list<const mpTensor *> tensors) {
  if (inner != 1 || length > kMaxWarpRow || compute == MP_F64 ||
      (type != MP_F32 && type != MP_F16 && type != MP_BF16))
    return false;
  for (const mpTensor *t : tensors)
    if (t->elementType != type)
      return false;
  return true;
}

/// Calls `body(T{}, std::integral_constant<int, PerLane>{})` with T the
/// storage type of `type` (f32, f16 or bf16) and PerLane the elements a lane
/// holds for rows of `length` (at most kMaxWarpRow).
template <typename Body> void withRowType(int type, int64_t length, Body body) {
  auto perLane = [&](auto zero) {
    if (length <= 128)
      body(zero, std::integral_constant<int, 4>{});
    else if (length <= 256)
      body(zero, std::integral_constant<int, 8>{});
    else if (length <= 512)
      body(zero, std::integral_constant<int, 16>{});
    else
      body(zero, std::integral_constant<int, 32>{});
  };
  if (type == MP_F16)
    perLane(__half{});
  else if (type == MP_BF16)
    perLane(__nv_bfloat16{});
  else
    perLane(float{});
}

unsigned warpRowGrid(int64_t rows) {
  return unsigned(std::clamp<int64_t>(
      (rows + kRowsPerBlock - 1) / kRowsPerBlock, 1, 1 << 20));
}

//===----------------------------------------------------------------------===//
// Reduce
//===----------------------------------------------------------------------===//

/// Kept dimensions (indexing outputs) and reduced dimensions, each with the
/// input strides.
struct ReducePlan {
  Shape kept, reduced;
  int64_t keptStrides[MP_MAX_RANK];
  int64_t reducedStrides[MP_MAX_RANK];
};

__device__ __forceinline__ int64_t offsetOf(int64_t index, const Shape &shape,
                                            const int64_t *strides) {
  int64_t offset = 0;
  for (int d = shape.rank - 1; d >= 0; --d) {
    offset += (index % shape.dims[d]) * strides[d];
    index /= shape.dims[d];
  }
  return offset;
}

template <typename C>
__device__ C reduceStep(int kind, C acc, C x) {
  return kind == MP_REDUCE_MAX ? MaxOp()(acc, x) : acc + x;
}

template <typename C>
__device__ C reduceInit(int kind) {
  return kind == MP_REDUCE_MAX ? C(-INFINITY) : C(0);
}

template <typename C>
__device__ C reduceFinish(int kind, C acc, int64_t count, int compute) {
  if (kind == MP_REDUCE_MEAN)
    acc = roundCompute(compute, acc) / C(count);
  return roundCompute(compute, acc);
}

/// The innermost input dimension is reduced: a block per output.
template <typename C>
__global__ void reduceRowsKernel(int kind, Ref in, MutRef out, int64_t outputs,
                                 int64_t count, ReducePlan plan, int compute) {
  __shared__ C shared[kThreads / 32];
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    int64_t base = offsetOf(o, plan.kept, plan.keptStrides);
    C acc = reduceInit<C>(kind);
    for (int64_t r = threadIdx.x; r < count; r += blockDim.x)
      acc = reduceStep(kind, acc,
                       loadAs<C>(in.data, in.type,
                                 base + offsetOf(r, plan.reduced,
                                                 plan.reducedStrides)));
    acc = kind == MP_REDUCE_MAX ? blockReduce(acc, MaxOp(), shared)
                                : blockReduce(acc, SumOp(), shared);
    if (threadIdx.x == 0)
      storeAs<C>(out.data, out.type, o, reduceFinish(kind, acc, count, compute));
  }
}

/// The innermost input dimension is kept: a thread per output and group of
/// reduced indices; group g writes partials[g * outputs + o].
template <typename C>
__global__ void reduceColumnsKernel(int kind, Ref in, C *partials,
                                    int64_t outputs, int64_t count,
                                    int64_t perGroup, ReducePlan plan) {
  int64_t g = blockIdx.y;
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = offsetOf(o, plan.kept, plan.keptStrides);
    C acc = reduceInit<C>(kind);
    int64_t end = min(count, (g + 1) * perGroup);
    for (int64_t r = g * perGroup; r < end; ++r)
      acc = reduceStep(kind, acc,
                       loadAs<C>(in.data, in.type,
                                 base + offsetOf(r, plan.reduced,
                                                 plan.reducedStrides)));
    partials[g * outputs + o] = acc;
  }
}

template <typename C>
__global__ void reduceGroupsKernel(int kind, const C *partials, int64_t groups,
                                   MutRef out, int64_t outputs, int64_t count,
                                   int compute) {
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    C acc = reduceInit<C>(kind);
    for (int64_t g = 0; g < groups; ++g)
      acc = reduceStep(kind, acc, partials[g * outputs + o]);
    storeAs<C>(out.data, out.type, o, reduceFinish(kind, acc, count, compute));
  }
}

/// The reduced axes lead and the input is dense: the input is [count,
/// outputs] and group g of rows sums its column o into
/// partials[g * outputs + o], with no index arithmetic per element (a bias
/// gradient over [batch, tokens]).
template <typename C>
__global__ void reduceLeadingKernel(int kind, Ref in, C *partials,
                                    int64_t outputs, int64_t count,
                                    int64_t perGroup) {
  int64_t g = blockIdx.y;
  int64_t end = min(count, (g + 1) * perGroup);
  for (int64_t o = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < outputs;
       o += int64_t(gridDim.x) * blockDim.x) {
    C acc = reduceInit<C>(kind);
    for (int64_t r = g * perGroup; r < end; ++r)
      acc = reduceStep(kind, acc, loadAs<C>(in.data, in.type, r * outputs + o));
    partials[g * outputs + o] = acc;
  }
}

/// Groups of rows for a column reduction: enough for about `threads`
/// threads when there are few outputs, at least 16 rows a group, at most
/// `most` groups (the partials stay small).
int64_t groupsFor(int64_t outputs, int64_t count, int64_t threads = 1 << 16,
                  int64_t most = 64) {
  int64_t wanted =
      std::max<int64_t>(1, threads / std::max<int64_t>(outputs, 1));
  return std::clamp<int64_t>(std::min(wanted, count / 16), 1, most);
}

template <typename C>
mpStatus reduceColumns(int kind, const mpTensor *in, mpTensor *out,
                       int64_t outputs, int64_t count, const ReducePlan &plan,
                       bool leading, int compute) {
  // Leading axes read without index arithmetic, so more groups pay.
  int64_t groups = leading ? groupsFor(outputs, count, 1 << 18, 256)
                           : groupsFor(outputs, count);
  int64_t perGroup = (count + groups - 1) / groups;
  groups = (count + perGroup - 1) / perGroup;
  Scratch partials(size_t(groups * outputs) * sizeof(C));
  if (!partials)
    return MP_ERROR_OUT_OF_MEMORY;
  cudaStream_t stream = context()->stream;
  dim3 grid(std::min<unsigned>(gridFor(outputs), 65535), unsigned(groups));
  if (leading)
    reduceLeadingKernel<C><<<grid, kThreads, 0, stream>>>(
        kind, ref(in), static_cast<C *>(partials.get()), outputs, count,
        perGroup);
  else
    reduceColumnsKernel<C><<<grid, kThreads, 0, stream>>>(
        kind, ref(in), static_cast<C *>(partials.get()), outputs, count,
        perGroup, plan);
  reduceGroupsKernel<C><<<gridFor(outputs), kThreads, 0, stream>>>(
      kind, static_cast<const C *>(partials.get()), groups, mut(out), outputs,
      count, compute);
  return launched("column reduction kernels") ? MP_OK : MP_ERROR_BACKEND;
}

/// One thread per line along the axis, summing in order (the lines are
/// short: positions of a sequence).
template <typename C>
__global__ void cumSumKernel(Ref in, MutRef out, int64_t lines, int64_t length,
                             int64_t inner, int exclusive, int reverse,
                             int compute) {
  for (int64_t line = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       line < lines; line += int64_t(gridDim.x) * blockDim.x) {
    int64_t base = (line / inner) * length * inner + line % inner;
    C sum = 0;
    for (int64_t j = 0; j < length; ++j) {
      int64_t k = base + (reverse ? length - 1 - j : j) * inner;
      C x = loadAs<C>(in.data, in.type, k);
      if (!exclusive)
        sum = roundCompute(compute, sum + x);
      storeAs<C>(out.data, out.type, k, sum);
      if (exclusive)
        sum = roundCompute(compute, sum + x);
    }
  }
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

__device__ __forceinline__ int64_t labelAt(Ref labels, int64_t i) {
  return labels.type == MP_I32 ? static_cast<const int32_t *>(labels.data)[i]
                               : static_cast<const int64_t *>(labels.data)[i];
}

/// Per row: max and log-sum-exp of the logits.
template <typename C>
__device__ void rowLogSumExp(Ref logits, int64_t base, int64_t classes,
                             int compute, C *shared, C &m, C &lse) {
  m = -INFINITY;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
    m = MaxOp()(m, loadAs<C>(logits.data, logits.type, base + j));
  m = blockReduce(m, MaxOp(), shared);
  C sum = 0;
  for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
    sum += roundCompute(compute,
                        exp(loadAs<C>(logits.data, logits.type, base + j) - m));
  sum = roundCompute(compute, blockReduce(sum, SumOp(), shared));
  lse = roundCompute(compute, C(log(sum)));
}

/// rowLoss[r] = lse - (x[label] - max), 0 for labels out of range.
template <typename C>
__global__ void crossEntropyRowsKernel(Ref logits, Ref labels, C *rowLoss,
                                       int64_t rows, int64_t classes,
                                       int compute) {
  __shared__ C shared[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    C m, lse;
    rowLogSumExp(logits, r * classes, classes, compute, shared, m, lse);
    if (threadIdx.x == 0) {
      int64_t label = labelAt(labels, r);
      rowLoss[r] =
          label < 0 || label >= classes
              ? C(0)
              : roundCompute(compute,
                             lse - (loadAs<C>(logits.data, logits.type,
                                              r * classes + label) -
                                    m));
    }
  }
}

/// out[0] = scale * sum(values) in one block, in a fixed order.
template <typename C>
__global__ void sumToScalarKernel(const C *values, int64_t n, C scale,
                                  MutRef out, int compute) {
  __shared__ C shared[kThreads / 32];
  C acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    acc += values[i];
  acc = blockReduce(acc, SumOp(), shared);
  if (threadIdx.x == 0)
    storeAs<C>(out.data, out.type, 0,
               roundCompute(compute, roundCompute(compute, acc) * scale));
}

/// count[0] = how many labels lie in [0, classes), in one block: the
/// positions the cross-entropy's mean is over (the others are ignored).
template <typename C>
__global__ void labelledRowsKernel(Ref labels, int64_t rows, int64_t classes,
                                   C *count) {
  __shared__ C shared[kThreads / 32];
  C acc = 0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) {
    int64_t label = labelAt(labels, r);
    acc += C(label >= 0 && label < classes ? 1 : 0);
  }
  acc = blockReduce(acc, SumOp(), shared);
  if (threadIdx.x == 0)
    count[0] = acc;
}

/// out[0] = sum(values) / count[0] (0 when no label counts), in one block,
/// in a fixed order.
template <typename C>
__global__ void meanOverLabelledKernel(const C *values, int64_t n,
                                       const C *count, MutRef out,
                                       int compute) {
  __shared__ C shared[kThreads / 32];
  C acc = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x)
    acc += values[i];
  acc = blockReduce(acc, SumOp(), shared);
  if (threadIdx.x == 0)
    storeAs<C>(out.data, out.type, 0,
               count[0] > C(0)
                   ? roundCompute(compute, roundCompute(compute, acc) / count[0])
                   : C(0));
}

template <typename C>
__global__ void crossEntropyGradKernel(Ref dloss, Ref logits, Ref labels,
                                       MutRef dlogits, int64_t rows,
                                       int64_t classes, const C *count,
                                       int compute) {
  __shared__ C shared[kThreads / 32];
  C seed = loadAs<C>(dloss.data, dloss.type, 0);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t label = labelAt(labels, r);
    if (label < 0 || label >= classes) {
      // An ignored position: no gradient.
      for (int64_t j = threadIdx.x; j < classes; j += blockDim.x)
        storeAs<C>(dlogits.data, dlogits.type, r * classes + j, C(0));
      continue;
    }
    C m, lse;
    rowLogSumExp(logits, r * classes, classes, compute, shared, m, lse);
    for (int64_t j = threadIdx.x; j < classes; j += blockDim.x) {
      C p = roundCompute(
          compute,
          C(exp(loadAs<C>(logits.data, logits.type, r * classes + j) - m -
                lse)));
      C g = roundCompute(compute, (p - C(j == label ? 1 : 0)) / count[0]);
      storeAs<C>(dlogits.data, dlogits.type, r * classes + j,
                 roundCompute(compute, g * seed));
    }
  }
}

/// partial[b] = sum over block b's elements of (p - t)^2.
template <typename C>
__global__ void squaredErrorKernel(Ref p, Ref t, int64_t n, C *partials,
                                   int compute) {
  __shared__ C shared[kThreads / 32];
  C acc = 0;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    C d = roundCompute(compute,
                       loadAs<C>(p.data, p.type, i) - loadAs<C>(t.data, t.type, i));
    acc += roundCompute(compute, d * d);
  }
  acc = blockReduce(acc, SumOp(), shared);
  if (threadIdx.x == 0)
    partials[blockIdx.x] = acc;
}

template <typename C>
__global__ void mseGradKernel(Ref dloss, Ref p, Ref t, MutRef dp, int64_t n,
                              int compute) {
  C seed = loadAs<C>(dloss.data, dloss.type, 0);
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    C d = roundCompute(compute,
                       loadAs<C>(p.data, p.type, i) - loadAs<C>(t.data, t.type, i));
    C g = roundCompute(compute, C(2) * d / C(n));
    storeAs<C>(dp.data, dp.type, i, roundCompute(compute, g * seed));
  }
}

//===----------------------------------------------------------------------===//
// Layer normalisation
//===----------------------------------------------------------------------===//

template <typename C>
__global__ void layerNormKernel(Ref x, Ref scale, Ref bias, MutRef y,
                                MutRef mean, MutRef rstd, int64_t rows,
                                int64_t cols, C epsilon, int compute) {
  __shared__ C shared[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    C sum = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x)
      sum += loadAs<C>(x.data, x.type, base + c);
    C mu = roundCompute(compute,
                        roundCompute(compute, blockReduce(sum, SumOp(), shared)) /
                            C(cols));
    C var = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      C d = roundCompute(compute, loadAs<C>(x.data, x.type, base + c) - mu);
      var += roundCompute(compute, d * d);
    }
    var = roundCompute(compute,
                       roundCompute(compute, blockReduce(var, SumOp(), shared)) /
                           C(cols));
    C rs = roundCompute(compute,
                        C(1) / roundCompute(compute, sqrt(var + epsilon)));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      C xhat = roundCompute(
          compute, roundCompute(compute, loadAs<C>(x.data, x.type, base + c) - mu) * rs);
      C v = roundCompute(compute, xhat * loadAs<C>(scale.data, scale.type, c));
      storeAs<C>(y.data, y.type, base + c,
                 roundCompute(compute, v + loadAs<C>(bias.data, bias.type, c)));
    }
    if (threadIdx.x == 0) {
      storeAs<C>(mean.data, mean.type, r, mu);
      storeAs<C>(rstd.data, rstd.type, r, rs);
    }
  }
}

template <typename C>
__global__ void layerNormGradRowsKernel(Ref dy, Ref x, Ref scale, Ref mean,
                                        Ref rstd, MutRef dx, int64_t rows,
                                        int64_t cols, int compute) {
  __shared__ C shared[kThreads / 32];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t base = r * cols;
    C mu = loadAs<C>(mean.data, mean.type, r);
    C rs = loadAs<C>(rstd.data, rstd.type, r);
    C sumG = 0, sumGX = 0;
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      C xhat = roundCompute(compute, (loadAs<C>(x.data, x.type, base + c) - mu) * rs);
      C g = roundCompute(compute, loadAs<C>(dy.data, dy.type, base + c) *
                                      loadAs<C>(scale.data, scale.type, c));
      sumG += g;
      sumGX += roundCompute(compute, g * xhat);
    }
    C meanG = roundCompute(compute, blockReduce(sumG, SumOp(), shared) / C(cols));
    C meanGX =
        roundCompute(compute, blockReduce(sumGX, SumOp(), shared) / C(cols));
    for (int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
      C xhat = roundCompute(compute, (loadAs<C>(x.data, x.type, base + c) - mu) * rs);
      C g = roundCompute(compute, loadAs<C>(dy.data, dy.type, base + c) *
                                      loadAs<C>(scale.data, scale.type, c));
      C d = roundCompute(compute, g - meanG - roundCompute(compute, xhat * meanGX));
      storeAs<C>(dx.data, dx.type, base + c, roundCompute(compute, rs * d));
    }
  }
}

/// Partial sums of dy * xhat (dscale) and dy (dbias) per group of rows and
/// column: partials[(2 * g) * cols + c] and partials[(2 * g + 1) * cols + c].
template <typename C>
__global__ void layerNormGradColumnsKernel(Ref dy, Ref x, Ref mean, Ref rstd,
                                           C *partials, int64_t rows,
                                           int64_t cols, int64_t perGroup,
                                           int compute) {
  int64_t g = blockIdx.y;
  int64_t end = min(rows, (g + 1) * perGroup);
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    C ds = 0, db = 0;
    for (int64_t r = g * perGroup; r < end; ++r) {
      C mu = loadAs<C>(mean.data, mean.type, r);
      C rs = loadAs<C>(rstd.data, rstd.type, r);
      C d = loadAs<C>(dy.data, dy.type, r * cols + c);
      C xhat = roundCompute(compute, (loadAs<C>(x.data, x.type, r * cols + c) - mu) * rs);
      ds += roundCompute(compute, d * xhat);
      db += d;
    }
    partials[(2 * g) * cols + c] = ds;
    partials[(2 * g + 1) * cols + c] = db;
  }
}

template <typename C>
__global__ void layerNormGradFinishKernel(const C *partials, int64_t groups,
                                          int64_t cols, MutRef dscale,
                                          MutRef dbias, int compute) {
  for (int64_t c = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; c < cols;
       c += int64_t(gridDim.x) * blockDim.x) {
    C ds = 0, db = 0;
    for (int64_t g = 0; g < groups; ++g) {
      ds += partials[(2 * g) * cols + c];
      db += partials[(2 * g + 1) * cols + c];
    }
    storeAs<C>(dscale.data, dscale.type, c, roundCompute(compute, ds));
    storeAs<C>(dbias.data, dbias.type, c, roundCompute(compute, db));
  }
}

template <typename C>
mpStatus layerNormGradColumns(const mpTensor *dy, const mpTensor *x,
                              const mpTensor *mean, const mpTensor *rstd,
                              mpTensor *dscale, mpTensor *dbias, int64_t rows,
                              int64_t cols, int compute) {
  int64_t groups = groupsFor(cols, rows);
  int64_t perGroup = (rows + groups - 1) / groups;
  Scratch partials(size_t(2 * groups * cols) * sizeof(C));
  if (!partials)
    return MP_ERROR_OUT_OF_MEMORY;
  cudaStream_t stream = context()->stream;
  dim3 grid(std::min<unsigned>(gridFor(cols), 65535), unsigned(groups));
  layerNormGradColumnsKernel<C><<<grid, kThreads, 0, stream>>>(
      ref(dy), ref(x), ref(mean), ref(rstd), static_cast<C *>(partials.get()),
      rows, cols, perGroup, compute);
  layerNormGradFinishKernel<C><<<gridFor(cols), kThreads, 0, stream>>>(
      static_cast<const C *>(partials.get()), groups, cols, mut(dscale),
      mut(dbias), compute);
  return launched("layer norm gradient kernels") ? MP_OK : MP_ERROR_BACKEND;
}

bool isLabelTensor(const mpTensor *t) {
  return t && (t->elementType == MP_I32 || t->elementType == MP_I64) &&
         mpNumElements(t) >= 0 && (t->data || mpNumElements(t) == 0);
}

} // namespace

mpStatus mp::cuda::mpSoftmax(const mpTensor *in, mpTensor *out, int64_t axis,
                             int32_t logSoftmax, mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  int64_t outer, length, inner;
  if (!validFloat(in) || !validFloat(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !splitAt(in, axis, outer, length, inner))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t rows = outer * inner;
  if (!rows || !length)
    return MP_OK;
  if (warpRows(length, inner, in->elementType, compute, {out})) {
    withRowType(in->elementType, length, [&](auto zero, auto perLane) {
      using T = decltype(zero);
      softmaxRowsKernel<T, perLane.value>
          <<<warpRowGrid(rows), kRowThreads, 0, context()->stream>>>(
              static_cast<const T *>(in->data), static_cast<T *>(out->data),
              rows, int(length), logSoftmax, compute);
    });
    return launched("softmax row kernel") ? MP_OK : MP_ERROR_BACKEND;
  }
  MP_LAUNCH_COMPUTE(compute, softmaxKernel, rowGrid(rows), ref(in), mut(out),
                    rows, length, inner, logSoftmax, compute);
  return launched("softmax kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpCumSum(const mpTensor *in, mpTensor *out, int64_t axis,
                            int32_t exclusive, int32_t reverse,
                            mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  int64_t outer, length, inner;
  if (!validFloat(in) || !validFloat(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !splitAt(in, axis, outer, length, inner))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t lines = outer * inner;
  if (!lines || !length)
    return MP_OK;
  MP_LAUNCH_COMPUTE(compute, cumSumKernel, gridFor(lines), ref(in), mut(out),
                    lines, length, inner, exclusive, reverse, compute);
  return launched("cumsum kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpSoftmaxGrad(const mpTensor *dy, const mpTensor *y,
                                 mpTensor *dx, int64_t axis,
                                 int32_t logSoftmax, mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  int64_t outer, length, inner;
  if (!validFloat(dy) || !validFloat(y) || !validFloat(dx) ||
      !sameShape(dy, y) || !sameShape(dy, dx) || !isFloatType(compute) ||
      !splitAt(dy, axis, outer, length, inner))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t rows = outer * inner;
  if (!rows || !length)
    return MP_OK;
  if (warpRows(length, inner, dy->elementType, compute, {y, dx})) {
    withRowType(dy->elementType, length, [&](auto zero, auto perLane) {
      using T = decltype(zero);
      softmaxGradRowsKernel<T, perLane.value>
          <<<warpRowGrid(rows), kRowThreads, 0, context()->stream>>>(
              static_cast<const T *>(dy->data), static_cast<const T *>(y->data),
              static_cast<T *>(dx->data), rows, int(length), logSoftmax,
              compute);
    });
    return launched("softmax gradient row kernel") ? MP_OK : MP_ERROR_BACKEND;
  }
  MP_LAUNCH_COMPUTE(compute, softmaxGradKernel, rowGrid(rows), ref(dy), ref(y),
                    mut(dx), rows, length, inner, logSoftmax, compute);
  return launched("softmax gradient kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpReduce(mpReduceKind kind, const mpTensor *in,
                            mpTensor *out, const int64_t *axes,
                            int32_t numAxes, mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  if (!validFloat(in) || !validFloat(out) || !isFloatType(compute) ||
      kind < MP_REDUCE_SUM || kind > MP_REDUCE_MAX || numAxes < 0 ||
      (numAxes && !axes))
    return MP_ERROR_INVALID_ARGUMENT;
  ReducePlan plan;
  int64_t strides[MP_MAX_RANK];
  int64_t s = 1;
  for (int32_t d = in->rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= in->shape[d];
  }
  int32_t next = 0;
  bool innermostReduced = false;
  for (int32_t d = 0; d < in->rank; ++d) {
    bool reduced = next < numAxes && axes[next] == d;
    if (next < numAxes && (axes[next] < d || axes[next] >= in->rank))
      return MP_ERROR_INVALID_ARGUMENT;
    Shape &shape = reduced ? plan.reduced : plan.kept;
    int64_t *st = reduced ? plan.reducedStrides : plan.keptStrides;
    st[shape.rank] = strides[d];
    shape.dims[shape.rank++] = in->shape[d];
    if (reduced) {
      ++next;
      innermostReduced = d == in->rank - 1;
    }
  }
  if (next != numAxes)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t outputs = 1, count = 1;
  for (int32_t d = 0; d < plan.kept.rank; ++d)
    outputs *= plan.kept.dims[d];
  for (int32_t d = 0; d < plan.reduced.rank; ++d)
    count *= plan.reduced.dims[d];
  if (mpNumElements(out) != outputs)
    return MP_ERROR_INVALID_ARGUMENT;
  if (!outputs)
    return MP_OK;
  if (innermostReduced || !count) {
    MP_LAUNCH_COMPUTE(compute, reduceRowsKernel, rowGrid(outputs), kind,
                      ref(in), mut(out), outputs, count, plan, compute);
    return launched("row reduction kernel") ? MP_OK : MP_ERROR_BACKEND;
  }
  // The reduced axes lead when they are 0 ... k - 1.
  bool leading = true;
  for (int32_t i = 0; i < numAxes; ++i)
    leading = leading && axes[i] == i;
  return compute == MP_F64
             ? reduceColumns<double>(kind, in, out, outputs, count, plan,
                                     leading, compute)
             : reduceColumns<float>(kind, in, out, outputs, count, plan,
                                    leading, compute);
}

mpStatus mp::cuda::mpSoftmaxCrossEntropy(const mpTensor *logits,
                                         const mpTensor *labels,
                                         mpTensor *loss,
                                         mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  if (!validFloat(logits) || !isLabelTensor(labels) || !validFloat(loss) ||
      mpNumElements(loss) != 1 || !isFloatType(compute) || logits->rank < 1)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t classes = logits->shape[logits->rank - 1];
  int64_t rows = mpNumElements(labels);
  if (classes < 1 || rows * classes != mpNumElements(logits))
    return MP_ERROR_INVALID_ARGUMENT;
  auto run = [&](auto zero) -> mpStatus {
    using C = decltype(zero);
    // Row losses, then the labelled-row count after them.
    Scratch scratch(size_t(rows + 1) * sizeof(C));
    if (!scratch)
      return MP_ERROR_OUT_OF_MEMORY;
    cudaStream_t stream = context()->stream;
    auto *values = static_cast<C *>(scratch.get());
    C *count = values + rows;
    if (rows)
      crossEntropyRowsKernel<C><<<rowGrid(rows), kThreads, 0, stream>>>(
          ref(logits), ref(labels), values, rows, classes, compute);
    labelledRowsKernel<C>
        <<<1, kThreads, 0, stream>>>(ref(labels), rows, classes, count);
    meanOverLabelledKernel<C>
        <<<1, kThreads, 0, stream>>>(values, rows, count, mut(loss), compute);
    return launched("cross-entropy kernels") ? MP_OK : MP_ERROR_BACKEND;
  };
  return compute == MP_F64 ? run(double()) : run(float());
}

mpStatus mp::cuda::mpSoftmaxCrossEntropyGrad(const mpTensor *dloss,
                                             const mpTensor *logits,
                                             const mpTensor *labels,
                                             mpTensor *dlogits,
                                             mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  if (!validFloat(dloss) || mpNumElements(dloss) != 1 || !validFloat(logits) ||
      !isLabelTensor(labels) || !validFloat(dlogits) ||
      !sameShape(logits, dlogits) || !isFloatType(compute) || logits->rank < 1)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t classes = logits->shape[logits->rank - 1];
  int64_t rows = mpNumElements(labels);
  if (classes < 1 || rows * classes != mpNumElements(logits))
    return MP_ERROR_INVALID_ARGUMENT;
  if (!rows)
    return MP_OK;
  auto run = [&](auto zero) -> mpStatus {
    using C = decltype(zero);
    Scratch scratch(sizeof(C));
    if (!scratch)
      return MP_ERROR_OUT_OF_MEMORY;
    cudaStream_t stream = context()->stream;
    auto *count = static_cast<C *>(scratch.get());
    labelledRowsKernel<C>
        <<<1, kThreads, 0, stream>>>(ref(labels), rows, classes, count);
    crossEntropyGradKernel<C><<<rowGrid(rows), kThreads, 0, stream>>>(
        ref(dloss), ref(logits), ref(labels), mut(dlogits), rows, classes,
        count, compute);
    return launched("cross-entropy gradient kernels") ? MP_OK
                                                      : MP_ERROR_BACKEND;
  };
  return compute == MP_F64 ? run(double()) : run(float());
}

mpStatus mp::cuda::mpMseLoss(const mpTensor *prediction,
                             const mpTensor *target, mpTensor *loss,
                             mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  if (!validFloat(prediction) || !validFloat(target) || !validFloat(loss) ||
      !sameShape(prediction, target) || mpNumElements(loss) != 1 ||
      !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(prediction);
  auto run = [&](auto zero) -> mpStatus {
    using C = decltype(zero);
    unsigned blocks = std::min<unsigned>(gridFor(n), 1024);
    Scratch partials(blocks * sizeof(C));
    if (!partials)
      return MP_ERROR_OUT_OF_MEMORY;
    cudaStream_t stream = context()->stream;
    auto *values = static_cast<C *>(partials.get());
    squaredErrorKernel<C><<<blocks, kThreads, 0, stream>>>(
        ref(prediction), ref(target), n, values, compute);
    sumToScalarKernel<C><<<1, kThreads, 0, stream>>>(
        values, blocks, n ? C(1) / C(n) : C(0), mut(loss), compute);
    return launched("mean squared error kernels") ? MP_OK : MP_ERROR_BACKEND;
  };
  return compute == MP_F64 ? run(double()) : run(float());
}

mpStatus mp::cuda::mpMseLossGrad(const mpTensor *dloss,
                                 const mpTensor *prediction,
                                 const mpTensor *target,
                                 mpTensor *dprediction,
                                 mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  if (!validFloat(dloss) || mpNumElements(dloss) != 1 ||
      !validFloat(prediction) || !validFloat(target) ||
      !validFloat(dprediction) || !sameShape(prediction, target) ||
      !sameShape(prediction, dprediction) || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(prediction);
  if (!n)
    return MP_OK;
  MP_LAUNCH_COMPUTE(compute, mseGradKernel, gridFor(n), ref(dloss),
                    ref(prediction), ref(target), mut(dprediction), n,
                    compute);
  return launched("mean squared error gradient kernel") ? MP_OK
                                                        : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpLayerNorm(const mpTensor *x, const mpTensor *scale,
                               const mpTensor *bias, mpTensor *y,
                               mpTensor *mean, mpTensor *rstd, int64_t axis,
                               float epsilon, mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  int64_t rows, cols;
  if (!validFloat(x) || !validFloat(scale) || !validFloat(bias) ||
      !validFloat(y) || !validFloat(mean) || !validFloat(rstd) ||
      !sameShape(x, y) || !sameShape(scale, bias) || !isFloatType(compute) ||
      !(epsilon > 0) || !rt::layerNormShape(x, scale, mean, axis, rows, cols) ||
      mpNumElements(rstd) != rows)
    return MP_ERROR_INVALID_ARGUMENT;
  if (!rows || !cols)
    return MP_OK;
  if (compute == MP_F64)
    layerNormKernel<double><<<rowGrid(rows), kThreads, 0, context()->stream>>>(
        ref(x), ref(scale), ref(bias), mut(y), mut(mean), mut(rstd), rows,
        cols, double(epsilon), compute);
  else
    layerNormKernel<float><<<rowGrid(rows), kThreads, 0, context()->stream>>>(
        ref(x), ref(scale), ref(bias), mut(y), mut(mean), mut(rstd), rows,
        cols, epsilon, compute);
  return launched("layer norm kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpLayerNormGrad(const mpTensor *dy, const mpTensor *x,
                                   const mpTensor *scale,
                                   const mpTensor *mean, const mpTensor *rstd,
                                   mpTensor *dx, mpTensor *dscale,
                                   mpTensor *dbias, int64_t axis,
                                   mpElementType compute) {
  if (!context())
    return MP_ERROR_BACKEND;
  int64_t rows, cols;
  if (!validFloat(dy) || !validFloat(x) || !validFloat(scale) ||
      !validFloat(mean) || !validFloat(rstd) || !validFloat(dx) ||
      !validFloat(dscale) || !validFloat(dbias) || !sameShape(dy, x) ||
      !sameShape(dx, x) || !sameShape(dscale, scale) ||
      !sameShape(dbias, scale) || !isFloatType(compute) ||
      !rt::layerNormShape(x, scale, mean, axis, rows, cols) ||
      mpNumElements(rstd) != rows)
    return MP_ERROR_INVALID_ARGUMENT;
  if (!cols)
    return MP_OK;
  if (rows) {
    MP_LAUNCH_COMPUTE(compute, layerNormGradRowsKernel, rowGrid(rows), ref(dy),
                      ref(x), ref(scale), ref(mean), ref(rstd), mut(dx), rows,
                      cols, compute);
    if (!launched("layer norm gradient kernel"))
      return MP_ERROR_BACKEND;
  }
  return compute == MP_F64
             ? layerNormGradColumns<double>(dy, x, mean, rstd, dscale, dbias,
                                            rows, cols, compute)
             : layerNormGradColumns<float>(dy, x, mean, rstd, dscale, dbias,
                                           rows, cols, compute);
}
