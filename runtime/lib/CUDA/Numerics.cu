//===- Numerics.cu - range statistics and the first non-finite op ---------===//
//
// tg.tensor_stats and tg.record_nonfinite on the device, without reading
// anything back to the host, so a checked step still replays as one CUDA
// graph. Statistics take two launches: every block reduces its grid-stride
// range to a partial result in scratch memory, then one block combines the
// partials (min, max and counts: the order does not matter) and writes the
// f32 row. The record kernel is one thread reading the rows it is given.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "Kernels.h"

#include "../Checks.h"

using namespace mp;
using namespace mp::cuda;

namespace {

struct Partial {
  float min, max, amax, aminNonZero;
  unsigned long long nans, infs;
};

struct MinOp {
  template <typename C> __device__ C operator()(C a, C b) const {
    return b < a ? b : a;
  }
};
struct LargerOp {
  template <typename C> __device__ C operator()(C a, C b) const {
    return b > a ? b : a;
  }
};

/// Reduces the block's values into `partial`; thread 0 writes it.
__device__ void reduceInto(Partial v, Partial *partial) {
  __shared__ float floats[kThreads / 32];
  __shared__ unsigned long long counts[kThreads / 32];
  v.min = blockReduce(v.min, MinOp{}, floats);
  v.max = blockReduce(v.max, LargerOp{}, floats);
  v.amax = blockReduce(v.amax, LargerOp{}, floats);
  v.aminNonZero = blockReduce(v.aminNonZero, MinOp{}, floats);
  v.nans = blockReduce(v.nans, SumOp{}, counts);
  v.infs = blockReduce(v.infs, SumOp{}, counts);
  if (threadIdx.x == 0)
    *partial = v;
}

__device__ Partial emptyPartial() {
  return {INFINITY, -INFINITY, 0.0f, INFINITY, 0, 0};
}

__global__ void statsPartialKernel(const void *in, int type, int64_t n,
                                   Partial *partials) {
  Partial p = emptyPartial();
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    float x = loadAs<float>(in, type, i);
    if (isnan(x)) {
      ++p.nans;
      continue;
    }
    if (isinf(x))
      ++p.infs;
    p.min = fminf(p.min, x);
    p.max = fmaxf(p.max, x);
    float a = fabsf(x);
    p.amax = fmaxf(p.amax, a);
    if (a != 0)
      p.aminNonZero = fminf(p.aminNonZero, a);
  }
  reduceInto(p, &partials[blockIdx.x]);
}

__global__ void statsFinalKernel(const Partial *partials, int count,
                                 float *out) {
  Partial p = emptyPartial();
  for (int i = threadIdx.x; i < count; i += blockDim.x) {
    Partial q = partials[i];
    p.min = fminf(p.min, q.min);
    p.max = fmaxf(p.max, q.max);
    p.amax = fmaxf(p.amax, q.amax);
    p.aminNonZero = fminf(p.aminNonZero, q.aminNonZero);
    p.nans += q.nans;
    p.infs += q.infs;
  }
  __shared__ Partial total;
  reduceInto(p, &total);
  __syncthreads();
  if (threadIdx.x == 0) {
    out[0] = total.min;
    out[1] = total.max;
    out[2] = total.amax;
    out[3] = total.aminNonZero;
    out[4] = float(total.nans);
    out[5] = float(total.infs);
  }
}

/// Stats tensors per record launch (kernel parameters stay small).
constexpr int kRowsPerLaunch = 32;

struct RowTable {
  const float *rows[kRowsPerLaunch];
  int64_t count[kRowsPerLaunch];
};

__global__ void recordKernel(const int64_t *status, RowTable table, int used,
                             int64_t *out, int64_t opId) {
  int64_t s = *status;
  for (int t = 0; t < used && s < 0; ++t)
    for (int64_t r = 0; r < table.count[t]; ++r)
      if (table.rows[t][r * 6 + 4] > 0 || table.rows[t][r * 6 + 5] > 0)
        s = opId;
  *out = s;
}

} // namespace

mpStatus mp::cuda::mpTensorStats(const mpTensor *in, mpTensor *stats) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!in || !rt::isFloatType(in->elementType) || !stats || !stats->data ||
      stats->elementType != MP_F32 || mpNumElements(stats) != 6)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(in);
  if (n < 0 || (n > 0 && !in->data))
    return MP_ERROR_INVALID_ARGUMENT;
  unsigned blocks = std::min<unsigned>(gridFor(n, 4), 1024);
  Scratch partials(blocks * sizeof(Partial));
  if (!partials)
    return MP_ERROR_OUT_OF_MEMORY;
  auto *p = static_cast<Partial *>(partials.get());
  statsPartialKernel<<<blocks, kThreads, 0, c->stream>>>(in->data,
                                                         in->elementType, n, p);
  statsFinalKernel<<<1, kThreads, 0, c->stream>>>(
      p, int(blocks), static_cast<float *>(stats->data));
  return launched("tensor statistics kernels") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpRecordNonfinite(const mpTensor *status, int32_t count,
                                     const mpTensor *stats, mpTensor *out,
                                     int64_t opId) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!rt::recordNonfiniteArguments(status, count, stats, out, opId))
    return MP_ERROR_INVALID_ARGUMENT;
  const auto *in = static_cast<const int64_t *>(status->data);
  auto *result = static_cast<int64_t *>(out->data);
  for (int32_t first = 0; first < count; first += kRowsPerLaunch) {
    RowTable table{};
    int used = 0;
    for (int32_t i = first; i < count && used < kRowsPerLaunch; ++i, ++used) {
      table.rows[used] = static_cast<const float *>(stats[i].data);
      table.count[used] = stats[i].shape[0];
    }
    // Later launches continue from what the first one wrote.
    recordKernel<<<1, 1, 0, c->stream>>>(first == 0 ? in : result, table, used,
                                         result, opId);
    if (!launched("record-nonfinite kernel"))
      return MP_ERROR_BACKEND;
  }
  return MP_OK;
}
