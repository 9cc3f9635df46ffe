//===- Optimizers.cpp - optimizer update kernels --------------------------===//
//
// tg.sgd_update and tg.adam_update on the CPU, following torch.optim.SGD and
// Adam/AdamW, in f32 on f32 parameters and state. A true skip predicate
// returns before anything is written, so a skipped step leaves parameters
// and state bit-identical. Elements are independent: with the fast kernels
// on, gradients are read in converted tiles and the elements are split
// across threads, with the same arithmetic per element. The WithCopy forms
// round each tile of the new parameter into the low-precision copy while it
// is still in cache.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Elements.h"
#include "Tiles.h"

#include <cmath>

using namespace mp::rt;

static bool skipped(const mpTensor *skip) {
  return skip && *static_cast<const uint8_t *>(skip->data);
}

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
  storeF32(p + i, n, copy->data, copy->elementType, i);
}

/// Calls `update(i, g)` for every element i with its gradient g as f32,
/// then writes the updated elements of `param` into `copy` (if any), a tile
/// at a time.
template <typename Update>
static void forEachGradient(const mpTensor *grad, const mpTensor *param,
                            mpTensor *copy, Update update) {
  int64_t n = mpNumElements(grad);
  if (!libraryKernelsEnabled() || !isTileType(grad->elementType)) {
    for (int64_t i = 0; i < n; ++i)
      update(i, static_cast<float>(load(grad->data, grad->elementType, i)));
    writeCopy(param, copy, 0, n);
    return;
  }
  forEachTile(n, 8, [&](int64_t i, int64_t len) {
    float g[kTile];
    loadF32(grad->data, grad->elementType, i, len, g);
    for (int64_t k = 0; k < len; ++k)
      update(i + k, g[k]);
    writeCopy(param, copy, i, len);
  });
}

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
                                mpTensor *momentumBuffer,
                                const mpTensor *skip, float lr,
                                float momentum, float weightDecay,
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
  float *b = momentumBuffer ? static_cast<float *>(momentumBuffer->data)
                            : nullptr;
  forEachGradient(grad, param, copy, [&](int64_t i, float g) {
    g = g + weightDecay * p[i];
    if (b) {
      b[i] = momentum * b[i] + g;
      g = nesterov ? g + momentum * b[i] : b[i];
    }
    p[i] = p[i] - lr * g;
  });
  return MP_OK;
}

extern "C" mpStatus mpAdamUpdate(mpTensor *param, const mpTensor *grad,
                                 mpTensor *firstMoment,
                                 mpTensor *secondMoment, mpTensor *step,
                                 const mpTensor *skip, float lr, float beta1,
                                 float beta2, float epsilon,
                                 float weightDecay) {
  return mpAdamUpdateWithCopy(param, grad, firstMoment, secondMoment, step,
                              skip, nullptr, lr, beta1, beta2, epsilon,
                              weightDecay);
}

extern "C" mpStatus mpAdamUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                                         mpTensor *firstMoment,
                                         mpTensor *secondMoment,
                                         mpTensor *step, const mpTensor *skip,
                                         mpTensor *copy, float lr, float beta1,
                                         float beta2, float epsilon,
                                         float weightDecay) {
  if (!adamArguments(param, grad, firstMoment, secondMoment, step, skip) ||
      !isCopyFor(copy, param))
    return MP_ERROR_INVALID_ARGUMENT;
  if (skipped(skip))
    return skipStep(param, copy);
  int64_t &t = *static_cast<int64_t *>(step->data);
  ++t;
  // Bias corrections in double, as PyTorch's step() computes them in Python.
  double c1 = 1.0 - std::pow(static_cast<double>(beta1), static_cast<double>(t));
  double c2 = 1.0 - std::pow(static_cast<double>(beta2), static_cast<double>(t));
  float stepSize = static_cast<float>(lr / c1);
  float c2Sqrt = static_cast<float>(std::sqrt(c2));
  float *p = static_cast<float *>(param->data);
  float *m = static_cast<float *>(firstMoment->data);
  float *v = static_cast<float *>(secondMoment->data);
  forEachGradient(grad, param, copy, [&](int64_t i, float g) {
    if (weightDecay != 0)
      p[i] = p[i] * (1 - lr * weightDecay);
    m[i] = beta1 * m[i] + (1 - beta1) * g;
    v[i] = beta2 * v[i] + (1 - beta2) * g * g;
    float denom = std::sqrt(v[i]) / c2Sqrt + epsilon;
    p[i] = p[i] - stepSize * (m[i] / denom);
  });
  return MP_OK;
}
