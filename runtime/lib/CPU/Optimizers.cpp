//===- Optimizers.cpp - optimizer update kernels --------------------------===//
//
// tg.sgd_update and tg.adam_update on the CPU, following torch.optim.SGD and
// Adam/AdamW, in f32 on f32 parameters and state. A true skip predicate
// returns before anything is written, so a skipped step leaves parameters
// and state bit-identical. Elements are independent: with the fast kernels
// on, gradients are read in converted tiles (an f32 one where it lies) and
// the elements are split across threads, with the same arithmetic per
// element: each tile runs a loop compiled for AVX-512, AVX2 or the
// baseline, with the branches on the options outside it, so it vectorises
// (the square root too: this file is built with -fno-math-errno). The
// WithCopy forms round each tile of the new parameter into the
// low-precision copy while it is still in cache; copies of 2^19 elements
// or more are written with streaming stores, which skip reading the lines
// they overwrite (benchmarks/optimizer_cpu.cpp: the copy's extra time over
// ResNet-50's parameters fell from about 1.8 to 1.2 ms).
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Elements.h"
#include "Tiles.h"
#include "Vector.h"

#include <cmath>

using namespace mp::rt;

static bool skipped(const mpTensor *skip) {
  return skip && *static_cast<const uint8_t *>(skip->data);
}

/// Copies of at least this many elements bypass the cache (streamF32): the
/// next step's forward pass reads them, after the rest of this step's
/// updates have passed through the cache.
constexpr int64_t kStreamedCopy = int64_t(1) << 19;

/// Writes param[i, i + n) rounded into `copy`, when there is one.
static void writeCopy(const mpTensor *param, mpTensor *copy, int64_t i,
                      int64_t n) {
  if (!copy)
    return;
  const float *p = static_cast<const float *>(param->data);
  if (!libraryKernelsEnabled()) {
    for (int64_t k = i; k < i + n; ++k)
      store(copy->data, copy->elementType, k, p[k]);
    return;
  }
  if (mpNumElements(copy) >= kStreamedCopy)
    streamF32(p + i, n, copy->data, copy->elementType, i);
  else
    storeF32(p + i, n, copy->data, copy->elementType, i);
}

/// Calls `update(i, g)` for every element i with its gradient g as f32
/// (the reference loop), or, with the fast kernels on, `tile(i, g, len)` for
/// every tile of `len` elements from i with their gradients in g; then
/// writes the updated elements of `param` into `copy` (if any), a tile at a
/// time. An f32 gradient that overlaps none of the tensors the update
/// writes (`written`: the parameter and its state) is read where it lies.
template <typename Update, typename Tile>
static void forEachGradient(const mpTensor *grad, const mpTensor *param,
                            mpTensor *copy,
                            std::initializer_list<const mpTensor *> written,
                            Update update, Tile tile) {
  int64_t n = mpNumElements(grad);
  if (!libraryKernelsEnabled() || !isTileType(grad->elementType)) {
    for (int64_t i = 0; i < n; ++i)
      update(i, static_cast<float>(load(grad->data, grad->elementType, i)));
    writeCopy(param, copy, 0, n);
    return;
  }
  bool direct = grad->elementType == MP_F32 && !overlapsAny(grad, written) &&
                !(copy && overlapsAny(grad, {copy}));
  forEachTile(n, 8, [&](int64_t i, int64_t len) {
    float g[kTile];
    if (direct)
      tile(i, static_cast<const float *>(grad->data) + i, len);
    else {
      loadF32(grad->data, grad->elementType, i, len, g);
      tile(i, g, len);
    }
    writeCopy(param, copy, i, len);
  });
}

namespace {
struct SgdOptions {
  float lr, momentum, weightDecay;
};
/// Adam's per-step constants, computed once as the reference loop computes
/// them per element (the same float operations on the same values).
struct AdamOptions {
  float decay; // 1 - lr * weightDecay
  float beta1, oneMinusBeta1, beta2, oneMinusBeta2;
  float c2Sqrt, epsilon, stepSize;
};
} // namespace

// The tile loops, with the reference loops' arithmetic per element, each
// compiled for AVX-512, AVX2 and the baseline (no FMA contraction in any:
// -ffp-contract=off), so their bits are the reference loops'. The pointers
// do not alias (a parameter, its state and a tile of gradients).
#define MP_OPTIMIZER_LOOPS(SUFFIX, TARGET)                                     \
  template <bool Momentum, bool Nesterov>                                      \
  TARGET static void sgdTile##SUFFIX(float *__restrict p, float *__restrict b, \
                                     const float *__restrict grad, int64_t n,  \
                                     SgdOptions o) {                           \
    for (int64_t k = 0; k < n; ++k) {                                          \
      float g = grad[k] + o.weightDecay * p[k];                                \
      if (Momentum) {                                                          \
        b[k] = o.momentum * b[k] + g;                                          \
        g = Nesterov ? g + o.momentum * b[k] : b[k];                           \
      }                                                                        \
      p[k] = p[k] - o.lr * g;                                                  \
    }                                                                          \
  }                                                                            \
  template <bool WeightDecay>                                                  \
  TARGET static void adamTile##SUFFIX(                                         \
      float *__restrict p, float *__restrict m, float *__restrict v,           \
      const float *__restrict g, int64_t n, AdamOptions o) {                   \
    for (int64_t k = 0; k < n; ++k) {                                          \
      if (WeightDecay)                                                         \
        p[k] = p[k] * o.decay;                                                 \
      m[k] = o.beta1 * m[k] + o.oneMinusBeta1 * g[k];                          \
      v[k] = o.beta2 * v[k] + o.oneMinusBeta2 * g[k] * g[k];                   \
      float denom = std::sqrt(v[k]) / o.c2Sqrt + o.epsilon;                    \
      p[k] = p[k] - o.stepSize * (m[k] / denom);                               \
    }                                                                          \
  }
MP_OPTIMIZER_LOOPS(Avx512, MP_TARGET_AVX512)
MP_OPTIMIZER_LOOPS(Avx2, MP_TARGET_AVX2)
MP_OPTIMIZER_LOOPS(Base, )
#undef MP_OPTIMIZER_LOOPS

/// A skipped step: nothing changes, and the copy is the parameter's.
static mpStatus skipStep(const mpTensor *param, mpTensor *copy) {
  if (copy && libraryKernelsEnabled())
    forEachTile(mpNumElements(param), 8, [&](int64_t i, int64_t len) {
      writeCopy(param, copy, i, len);
    });
  else
    writeCopy(param, copy, 0, mpNumElements(param));
  return MP_OK;
}

extern "C" mpStatus mpSgdUpdate(mpTensor *param, const mpTensor *grad,
                                mpTensor *momentumBuffer, const mpTensor *skip,
                                float lr, float momentum, float weightDecay,
                                int32_t nesterov) {
  return mpSgdUpdateWithCopy(param, grad, momentumBuffer, skip, nullptr, lr,
                             momentum, weightDecay, nesterov);
}

extern "C" mpStatus mpSgdUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                                        mpTensor *momentumBuffer,
                                        const mpTensor *skip, mpTensor *copy,
                                        float lr, float momentum,
                                        float weightDecay, int32_t nesterov) {
  if (!sgdArguments(param, grad, momentumBuffer, skip, momentum) ||
      !isCopyFor(copy, param))
    return MP_ERROR_INVALID_ARGUMENT;
  if (skipped(skip))
    return skipStep(param, copy);
  float *p = static_cast<float *>(param->data);
  float *b =
      momentumBuffer ? static_cast<float *>(momentumBuffer->data) : nullptr;
  using SgdTile =
      void (*)(float *, float *, const float *, int64_t, SgdOptions);
  SgdTile tile =
      !b ? forIsa<SgdTile>(sgdTileAvx512<false, false>,
                           sgdTileAvx2<false, false>, sgdTileBase<false, false>)
      : nesterov
          ? forIsa<SgdTile>(sgdTileAvx512<true, true>, sgdTileAvx2<true, true>,
                            sgdTileBase<true, true>)
          : forIsa<SgdTile>(sgdTileAvx512<true, false>,
                            sgdTileAvx2<true, false>, sgdTileBase<true, false>);
  SgdOptions options{lr, momentum, weightDecay};
  forEachGradient(
      grad, param, copy, {param, momentumBuffer ? momentumBuffer : param},
      [&](int64_t i, float g) {
        g = g + weightDecay * p[i];
        if (b) {
          b[i] = momentum * b[i] + g;
          g = nesterov ? g + momentum * b[i] : b[i];
        }
        p[i] = p[i] - lr * g;
      },
      [&](int64_t i, const float *g, int64_t len) {
        tile(p + i, b ? b + i : nullptr, g, len, options);
      });
  return MP_OK;
}

extern "C" mpStatus mpAdamUpdate(mpTensor *param, const mpTensor *grad,
                                 mpTensor *firstMoment, mpTensor *secondMoment,
                                 mpTensor *step, const mpTensor *skip, float lr,
                                 float beta1, float beta2, float epsilon,
                                 float weightDecay) {
  return mpAdamUpdateWithCopy(param, grad, firstMoment, secondMoment, step,
                              skip, nullptr, lr, beta1, beta2, epsilon,
                              weightDecay);
}

extern "C" mpStatus mpAdamUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                                         mpTensor *firstMoment,
                                         mpTensor *secondMoment, mpTensor *step,
                                         const mpTensor *skip, mpTensor *copy,
                                         float lr, float beta1, float beta2,
                                         float epsilon, float weightDecay) {
  if (!adamArguments(param, grad, firstMoment, secondMoment, step, skip) ||
      !isCopyFor(copy, param))
    return MP_ERROR_INVALID_ARGUMENT;
  if (skipped(skip))
    return skipStep(param, copy);
  int64_t &t = *static_cast<int64_t *>(step->data);
  ++t;
  // Bias corrections in double, as PyTorch's step() computes them in Python.
  double c1 =
      1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t));
  double c2 =
      1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t));
  float stepSize = static_cast<float>(lr / c1);
  float c2Sqrt = static_cast<float>(std::sqrt(c2));
  float *p = static_cast<float *>(param->data);
  float *m = static_cast<float *>(firstMoment->data);
  float *v = static_cast<float *>(secondMoment->data);
  using AdamTile =
      void (*)(float *, float *, float *, const float *, int64_t, AdamOptions);
  AdamTile tile =
      weightDecay != 0
          ? forIsa<AdamTile>(adamTileAvx512<true>, adamTileAvx2<true>,
                             adamTileBase<true>)
          : forIsa<AdamTile>(adamTileAvx512<false>, adamTileAvx2<false>,
                             adamTileBase<false>);
  AdamOptions options{1 - lr * weightDecay,
                      beta1,
                      1 - beta1,
                      beta2,
                      1 - beta2,
                      c2Sqrt,
                      epsilon,
                      stepSize};
  forEachGradient(
      grad, param, copy, {param, firstMoment, secondMoment},
      [&](int64_t i, float g) {
        if (weightDecay != 0)
          p[i] = p[i] * (1 - lr * weightDecay);
        m[i] = beta1 * m[i] + (1 - beta1) * g;
        v[i] = beta2 * v[i] + (1 - beta2) * g * g;
        float denom = std::sqrt(v[i]) / c2Sqrt + epsilon;
        p[i] = p[i] - stepSize * (m[i] / denom);
      },
      [&](int64_t i, const float *g, int64_t len) {
        tile(p + i, m + i, v + i, g, len, options);
      });
  return MP_OK;
}
