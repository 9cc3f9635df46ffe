//===- Numerics.cpp - range statistics and the first non-finite op --------===//
//
// tg.tensor_stats and tg.record_nonfinite on the CPU. The statistics are
// one pass over the tensor: f16, bf16 and f32 tensors are read in tiles
// converted to f32 (exact) and scanned with vector instructions (AVX-512 or
// AVX2 where the CPU has them), f64 tensors element by element. Threads reduce
// their own ranges and the partial results are combined in order; every
// statistic is a min, a max or a count, so the result does not depend on
// the split.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Elements.h"
#include "Tiles.h"

#include "../Checks.h"

#include <cmath>
#include <limits>
#include <mutex>

using namespace mp::rt;

namespace {

struct Stats {
  double min = std::numeric_limits<double>::infinity();
  double max = -std::numeric_limits<double>::infinity();
  double amax = 0;
  double aminNonZero = std::numeric_limits<double>::infinity();
  int64_t nans = 0, infs = 0;

  void add(double x) {
    if (std::isnan(x)) {
      ++nans;
      return;
    }
    if (std::isinf(x))
      ++infs;
    min = std::min(min, x);
    max = std::max(max, x);
    double a = std::fabs(x);
    amax = std::max(amax, a);
    if (a != 0)
      aminNonZero = std::min(aminNonZero, a);
  }
  void merge(const Stats &o) {
    min = std::min(min, o.min);
    max = std::max(max, o.max);
    amax = std::max(amax, o.amax);
    aminNonZero = std::min(aminNonZero, o.aminNonZero);
    nans += o.nans;
    infs += o.infs;
  }
};

/// Adds the f32 values x[0, n) to `s`. Sixteen independent lanes keep the
/// loop free of dependences between elements, so that the compiler turns it
/// into vector min, max and compare instructions; NaNs are masked out
/// rather than branched around.
[[gnu::always_inline]] inline void scanLanes(const float *x, int64_t n,
                                             Stats &s) {
  constexpr int W = 16;
  constexpr float inf = std::numeric_limits<float>::infinity();
  float lo[W], hi[W], amax[W], small[W];
  int32_t nans[W], infs[W];
  for (int l = 0; l < W; ++l) {
    lo[l] = small[l] = inf;
    hi[l] = -inf;
    amax[l] = 0;
    nans[l] = infs[l] = 0;
  }
  int64_t j = 0;
  for (; j + W <= n; j += W)
    for (int l = 0; l < W; ++l) {
      float v = x[j + l];
      bool nan = v != v;
      float a = std::fabs(v);
      nans[l] += nan;
      infs[l] += a == inf;
      float forMin = nan ? inf : v, forMax = nan ? -inf : v;
      float forAmax = nan ? 0.0f : a;
      float forSmall = nan || a == 0 ? inf : a;
      lo[l] = forMin < lo[l] ? forMin : lo[l];
      hi[l] = forMax > hi[l] ? forMax : hi[l];
      amax[l] = forAmax > amax[l] ? forAmax : amax[l];
      small[l] = forSmall < small[l] ? forSmall : small[l];
    }
  for (int l = 0; l < W; ++l) {
    s.min = std::min<double>(s.min, lo[l]);
    s.max = std::max<double>(s.max, hi[l]);
    s.amax = std::max<double>(s.amax, amax[l]);
    s.aminNonZero = std::min<double>(s.aminNonZero, small[l]);
    s.nans += nans[l];
    s.infs += infs[l];
  }
  for (; j < n; ++j)
    s.add(x[j]);
}

void scanGeneric(const float *x, int64_t n, Stats &s) { scanLanes(x, n, s); }

__attribute__((target("avx2"))) void scanAvx2(const float *x, int64_t n,
                                              Stats &s) {
  scanLanes(x, n, s);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void
scanAvx512(const float *x, int64_t n, Stats &s) {
  scanLanes(x, n, s);
}

using ScanFn = void (*)(const float *, int64_t, Stats &);

ScanFn pickScan() {
  const CpuFeatures &f = cpuFeatures();
  return f.avx512 ? scanAvx512 : f.avx2 ? scanAvx2 : scanGeneric;
}

} // namespace

extern "C" mpStatus mpTensorStats(const mpTensor *in, mpTensor *stats) {
  if (!in || !isFloatType(in->elementType) || !stats || !stats->data ||
      stats->elementType != MP_F32 || mpNumElements(stats) != 6)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(in);
  if (n < 0 || (n > 0 && !in->data))
    return MP_ERROR_INVALID_ARGUMENT;
  Stats total;
  std::mutex mutex;
  static const ScanFn scan = pickScan();
  // Ranges of whole tiles, combined under a lock: one lock per thread.
  int64_t tiles = (n + kTile - 1) / kTile;
  parallelFor(tiles, 16, [&](int64_t begin, int64_t end) {
    Stats part;
    float x[kTile];
    for (int64_t t = begin; t < end; ++t) {
      int64_t k = t * kTile, len = std::min<int64_t>(kTile, n - k);
      if (isTileType(in->elementType) && libraryKernelsEnabled()) {
        const float *tile = static_cast<const float *>(in->data) + k;
        if (in->elementType != MP_F32) {
          loadF32(in->data, in->elementType, k, len, x);
          tile = x;
        }
        scan(tile, len, part);
        continue;
      }
      for (int64_t j = 0; j < len; ++j)
        part.add(load(in->data, in->elementType, k + j));
    }
    std::lock_guard<std::mutex> lock(mutex);
    total.merge(part);
  });
  auto *out = static_cast<float *>(stats->data);
  out[0] = static_cast<float>(total.min);
  out[1] = static_cast<float>(total.max);
  out[2] = static_cast<float>(total.amax);
  out[3] = static_cast<float>(total.aminNonZero);
  out[4] = static_cast<float>(total.nans);
  out[5] = static_cast<float>(total.infs);
  return MP_OK;
}

extern "C" mpStatus mpRecordNonfinite(const mpTensor *status, int32_t count,
                                      const mpTensor *stats, mpTensor *out,
                                      int64_t opId) {
  if (!recordNonfiniteArguments(status, count, stats, out, opId))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t s = *static_cast<const int64_t *>(status->data);
  if (s < 0) {
    for (int32_t i = 0; i < count && s < 0; ++i) {
      const auto *rows = static_cast<const float *>(stats[i].data);
      for (int64_t r = 0; r < stats[i].shape[0]; ++r)
        if (rows[r * 6 + 4] > 0 || rows[r * 6 + 5] > 0)
          s = opId;
    }
  }
  *static_cast<int64_t *>(out->data) = s;
  return MP_OK;
}
