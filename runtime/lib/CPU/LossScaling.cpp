//===- LossScaling.cpp - loss-scaling kernels -----------------------------===//
//
// tg.unscale_grads and tg.update_loss_scale on the CPU, with the semantics
// of torch.amp.GradScaler: the reciprocal of the scale is computed in double
// and rounded to f32; the scale update is done in f32 arithmetic.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Elements.h"
#include "Tiles.h"

#include <atomic>
#include <cmath>

using namespace mp::rt;

namespace {

/// Whether any of x[0, n) is infinite or NaN. A finite value times zero is
/// zero and an infinite or NaN one is NaN, so the sum of the products is
/// NaN exactly when one is; sixteen independent lanes let the compiler turn
/// the loop into vector multiplies and adds (a per-element std::isfinite
/// with an `or` of its results stays scalar and was most of the kernel).
bool anyNonFinite(const float *x, int64_t n) {
  constexpr int W = 16;
  float lanes[W] = {};
  int64_t j = 0;
  for (; j + W <= n; j += W)
    for (int l = 0; l < W; ++l)
      lanes[l] += x[j + l] * 0.0f;
  float sum = 0;
  for (; j < n; ++j)
    sum += x[j] * 0.0f;
  for (int l = 0; l < W; ++l)
    sum += lanes[l];
  return sum != sum;
}

} // namespace

extern "C" int64_t mpNumElements(const mpTensor *t) {
  if (!t || t->rank < 0 || t->rank > MP_MAX_RANK)
    return -1;
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; ++d) {
    if (t->shape[d] < 0)
      return -1;
    n *= t->shape[d];
  }
  return n;
}

extern "C" mpStatus mpUnscaleGrads(int32_t count, const mpTensor *grads,
                                   mpTensor *unscaled, const mpTensor *scale,
                                   mpTensor *foundInf) {
  if (!unscaleArguments(count, grads, unscaled, scale, foundInf))
    return MP_ERROR_INVALID_ARGUMENT;
  float s = *static_cast<const float *>(scale->data);
  float inv = static_cast<float>(1.0 / static_cast<double>(s));
  bool nonFinite = false;
  for (int32_t i = 0; i < count; ++i) {
    const mpTensor &g = grads[i];
    mpTensor &u = unscaled[i];
    int64_t n = mpNumElements(&g);
    if (libraryKernelsEnabled() && isTileType(g.elementType) &&
        isTileType(u.elementType)) {
      std::atomic<bool> found{false};
      forEachTile(n, 16, [&](int64_t k, int64_t len) {
        float x[kTile];
        loadF32(g.data, g.elementType, k, len, x);
        for (int64_t j = 0; j < len; ++j)
          x[j] = x[j] * inv;
        storeF32(x, len, u.data, u.elementType, k);
        // Check what was stored: an f16 gradient may overflow on the way.
        if (u.elementType != MP_F32)
          loadF32(u.data, u.elementType, k, len, x);
        if (anyNonFinite(x, len))
          found.store(true, std::memory_order_relaxed);
      });
      nonFinite |= found.load();
      continue;
    }
    for (int64_t k = 0; k < n; ++k) {
      float v = static_cast<float>(load(g.data, g.elementType, k)) * inv;
      store(u.data, u.elementType, k, v);
      // Check what was stored: an f16 gradient may overflow on the way.
      nonFinite |= !std::isfinite(load(u.data, u.elementType, k));
    }
  }
  *static_cast<uint8_t *>(foundInf->data) = nonFinite ? 1 : 0;
  return MP_OK;
}

extern "C" mpStatus mpUpdateLossScale(mpTensor *scale, mpTensor *goodSteps,
                                      const mpTensor *foundInf, float growth,
                                      float backoff, int64_t interval,
                                      float minScale, float maxScale) {
  if (!isScalar(scale, MP_F32) || !isScalar(goodSteps, MP_I64) ||
      !isScalar(foundInf, MP_I1) || !(growth > 1) ||
      !(backoff > 0 && backoff < 1) || interval < 1 || minScale < 0 ||
      maxScale < 0)
    return MP_ERROR_INVALID_ARGUMENT;
  float &s = *static_cast<float *>(scale->data);
  int64_t &n = *static_cast<int64_t *>(goodSteps->data);
  if (*static_cast<const uint8_t *>(foundInf->data)) {
    s = s * backoff;
    if (minScale > 0 && s < minScale)
      s = minScale;
    n = 0;
    return MP_OK;
  }
  if (n + 1 < interval) {
    ++n;
    return MP_OK;
  }
  float grown = s * growth;
  if (std::isfinite(grown) && !(maxScale > 0 && grown > maxScale))
    s = grown;
  n = 0;
  return MP_OK;
}
