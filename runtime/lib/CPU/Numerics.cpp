//===- Numerics.cpp - range statistics and the first non-finite op --------===//
//
// tg.tensor_stats and tg.record_nonfinite on the CPU. The statistics are
// one pass over the tensor: f16, bf16 and f32 tensors are read in tiles
// converted to f32 (exact), f64 tensors element by element. Threads reduce
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
  // Ranges of whole tiles, combined under a lock: one lock per thread.
  int64_t tiles = (n + kTile - 1) / kTile;
  parallelFor(tiles, 16, [&](int64_t begin, int64_t end) {
    Stats part;
    float x[kTile];
    for (int64_t t = begin; t < end; ++t) {
      int64_t k = t * kTile, len = std::min<int64_t>(kTile, n - k);
      if (isTileType(in->elementType) && libraryKernelsEnabled()) {
        loadF32(in->data, in->elementType, k, len, x);
        for (int64_t j = 0; j < len; ++j)
          part.add(x[j]);
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
