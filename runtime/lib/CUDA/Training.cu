//===- Training.cu - loss scaling and optimizer updates on the device -----===//
//
// Nothing here reads a value back to the host. The unscale kernel handles
// many gradients per launch (a table of tensors in the kernel's parameters)
// and raises the found-inf flag in device memory; the loss-scale update and
// the optimizers read that flag (the skip predicate) on the device. Adam's
// bias corrections come from the device's step counter through a one-thread
// kernel, so the step stays free of host round trips and can be replayed
// as a CUDA graph.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "Kernels.h"

#include "../Entry.h"

#include <vector>

using namespace mp;
using namespace mp::cuda;

namespace {

/// Gradients per unscale launch: the table below stays well inside the 4 KiB
/// of kernel parameters.
constexpr int kTensorsPerLaunch = 48;

struct TensorTable {
  const void *in[kTensorsPerLaunch];
  void *out[kTensorsPerLaunch];
  int64_t count[kTensorsPerLaunch];
  int type[kTensorsPerLaunch];
};

/// blockIdx.y picks the tensor; a grid-stride loop over its elements.
__global__ void unscaleKernel(TensorTable table, const float *scale,
                              uint8_t *foundInf) {
  int t = blockIdx.y;
  float inv = float(1.0 / double(*scale));
  const void *in = table.in[t];
  void *out = table.out[t];
  int type = table.type[t];
  bool nonFinite = false;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       i < table.count[t]; i += int64_t(gridDim.x) * blockDim.x) {
    float v = float(loadAs<double>(in, type, i)) * inv;
    storeAs<float>(out, type, i, v);
    // Check what was stored: an f16 gradient may overflow on the way.
    nonFinite |= !isfinite(loadAs<double>(out, type, i));
  }
  if (__syncthreads_or(nonFinite) && threadIdx.x == 0)
    *foundInf = 1;
}

/// GradScaler's update (the CPU backend's mpUpdateLossScale), one thread.
__global__ void updateLossScaleKernel(float *scale, int64_t *goodSteps,
                                      const uint8_t *foundInf, float growth,
                                      float backoff, int64_t interval,
                                      float minScale, float maxScale) {
  float s = *scale;
  int64_t n = *goodSteps;
  if (*foundInf) {
    s = s * backoff;
    if (minScale > 0 && s < minScale)
      s = minScale;
    *scale = s;
    *goodSteps = 0;
    return;
  }
  if (n + 1 < interval) {
    *goodSteps = n + 1;
    return;
  }
  float grown = s * growth;
  if (isfinite(grown) && !(maxScale > 0 && grown > maxScale))
    *scale = grown;
  *goodSteps = 0;
}

__device__ __forceinline__ bool skipped(const uint8_t *skip) {
  return skip && *skip;
}

/// `copy` (of type `copyType`), when given, receives the new parameter
/// rounded, or on a skipped step the parameter as it is.
__global__ void sgdKernel(float *p, const void *grad, int gradType,
                          float *buffer, const uint8_t *skip, void *copy,
                          int copyType, int64_t n, float lr, float momentum,
                          float weightDecay, int nesterov) {
  bool skipping = skipped(skip);
  if (skipping && !copy)
    return;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (!skipping) {
      float g = loadAs<float>(grad, gradType, i);
      g = g + weightDecay * p[i];
      if (buffer) {
        float b = momentum * buffer[i] + g;
        buffer[i] = b;
        g = nesterov ? g + momentum * b : b;
      }
      p[i] = p[i] - lr * g;
    }
    if (copy)
      storeAs(copy, copyType, i, p[i]);
  }
}

/// Advances the step counter and writes Adam's step size and sqrt of the
/// second bias correction (in double, as PyTorch computes them).
__global__ void adamCoefficientsKernel(int64_t *step, const uint8_t *skip,
                                       float lr, float beta1, float beta2,
                                       float *coefficients) {
  if (skipped(skip))
    return;
  int64_t t = *step + 1;
  *step = t;
  double c1 = 1.0 - pow(double(beta1), double(t));
  double c2 = 1.0 - pow(double(beta2), double(t));
  coefficients[0] = float(lr / c1);
  coefficients[1] = float(sqrt(c2));
}

__global__ void adamKernel(float *p, const void *grad, int gradType, float *m,
                           float *v, const uint8_t *skip, void *copy,
                           int copyType, const float *coefficients, int64_t n,
                           float lr, float beta1, float beta2, float epsilon,
                           float weightDecay) {
  bool skipping = skipped(skip);
  if (skipping && !copy)
    return;
  // (Not written on a skipped step.)
  float stepSize = skipping ? 0.0f : coefficients[0],
        c2Sqrt = skipping ? 1.0f : coefficients[1];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (skipping) {
      storeAs(copy, copyType, i, p[i]);
      continue;
    }
    float g = loadAs<float>(grad, gradType, i);
    float param = p[i];
    if (weightDecay != 0)
      param = param * (1 - lr * weightDecay);
    float mi = beta1 * m[i] + (1 - beta1) * g;
    float vi = beta2 * v[i] + (1 - beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) / c2Sqrt + epsilon;
    p[i] = param - stepSize * (mi / denom);
    if (copy)
      storeAs(copy, copyType, i, p[i]);
  }
}

const uint8_t *skipPointer(const mpTensor *skip) {
  return skip ? static_cast<const uint8_t *>(skip->data) : nullptr;
}

} // namespace

mpStatus mp::cuda::mpUnscaleGrads(int32_t count, const mpTensor *grads,
                                  mpTensor *unscaled, const mpTensor *scale,
                                  mpTensor *foundInf) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!rt::unscaleArguments(count, grads, unscaled, scale, foundInf))
    return MP_ERROR_INVALID_ARGUMENT;
  MP_CUDA_TRY(cudaMemsetAsync(foundInf->data, 0, 1, c->stream));
  for (int32_t first = 0; first < count; first += kTensorsPerLaunch) {
    TensorTable table{};
    int used = 0;
    int64_t largest = 0;
    for (int32_t i = first; i < count && used < kTensorsPerLaunch; ++i) {
      int64_t n = mpNumElements(&grads[i]);
      if (!n)
        continue;
      table.in[used] = grads[i].data;
      table.out[used] = unscaled[i].data;
      table.count[used] = n;
      table.type[used] = grads[i].elementType;
      largest = std::max(largest, n);
      ++used;
    }
    if (!used)
      continue;
    dim3 grid(std::min<unsigned>(gridFor(largest, 4), 1024), unsigned(used));
    unscaleKernel<<<grid, kThreads, 0, c->stream>>>(
        table, static_cast<const float *>(scale->data),
        static_cast<uint8_t *>(foundInf->data));
    if (!launched("unscale kernel"))
      return MP_ERROR_BACKEND;
  }
  return MP_OK;
}

mpStatus mp::cuda::mpUpdateLossScale(mpTensor *scale, mpTensor *goodSteps,
                                     const mpTensor *foundInf, float growth,
                                     float backoff, int64_t interval,
                                     float minScale, float maxScale) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!isScalar(scale, MP_F32) || !isScalar(goodSteps, MP_I64) ||
      !isScalar(foundInf, MP_I1) || !(growth > 1) ||
      !(backoff > 0 && backoff < 1) || interval < 1 || minScale < 0 ||
      maxScale < 0)
    return MP_ERROR_INVALID_ARGUMENT;
  updateLossScaleKernel<<<1, 1, 0, c->stream>>>(
      static_cast<float *>(scale->data),
      static_cast<int64_t *>(goodSteps->data),
      static_cast<const uint8_t *>(foundInf->data), growth, backoff, interval,
      minScale, maxScale);
  return launched("loss-scale update kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpSgdUpdate(mpTensor *param, const mpTensor *grad,
                               mpTensor *momentumBuffer, const mpTensor *skip,
                               float lr, float momentum, float weightDecay,
                               int32_t nesterov) {
  return mp::cuda::mpSgdUpdateWithCopy(param, grad, momentumBuffer, skip,
                                       nullptr, lr, momentum, weightDecay,
                                       nesterov);
}

mpStatus mp::cuda::mpSgdUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                                       mpTensor *momentumBuffer,
                                       const mpTensor *skip, mpTensor *copy,
                                       float lr, float momentum,
                                       float weightDecay, int32_t nesterov) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!rt::sgdArguments(param, grad, momentumBuffer, skip, momentum) ||
      !rt::isCopyFor(copy, param))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(param);
  if (!n)
    return MP_OK;
  sgdKernel<<<gridFor(n, 4), kThreads, 0, c->stream>>>(
      static_cast<float *>(param->data), grad->data, grad->elementType,
      momentumBuffer ? static_cast<float *>(momentumBuffer->data) : nullptr,
      skipPointer(skip), copy ? copy->data : nullptr,
      copy ? copy->elementType : MP_F32, n, lr, momentum, weightDecay,
      nesterov);
  return launched("SGD kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpAdamUpdate(mpTensor *param, const mpTensor *grad,
                                mpTensor *firstMoment, mpTensor *secondMoment,
                                mpTensor *step, const mpTensor *skip, float lr,
                                float beta1, float beta2, float epsilon,
                                float weightDecay) {
  return mp::cuda::mpAdamUpdateWithCopy(param, grad, firstMoment,
                                        secondMoment, step, skip, nullptr, lr,
                                        beta1, beta2, epsilon, weightDecay);
}

mpStatus mp::cuda::mpAdamUpdateWithCopy(
    mpTensor *param, const mpTensor *grad, mpTensor *firstMoment,
    mpTensor *secondMoment, mpTensor *step, const mpTensor *skip,
    mpTensor *copy, float lr, float beta1, float beta2, float epsilon,
    float weightDecay) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!rt::adamArguments(param, grad, firstMoment, secondMoment, step, skip) ||
      !rt::isCopyFor(copy, param))
    return MP_ERROR_INVALID_ARGUMENT;
  Scratch coefficients(2 * sizeof(float));
  if (!coefficients)
    return MP_ERROR_OUT_OF_MEMORY;
  auto *coef = static_cast<float *>(coefficients.get());
  adamCoefficientsKernel<<<1, 1, 0, c->stream>>>(
      static_cast<int64_t *>(step->data), skipPointer(skip), lr, beta1, beta2,
      coef);
  int64_t n = mpNumElements(param);
  if (n)
    adamKernel<<<gridFor(n, 4), kThreads, 0, c->stream>>>(
        static_cast<float *>(param->data), grad->data, grad->elementType,
        static_cast<float *>(firstMoment->data),
        static_cast<float *>(secondMoment->data), skipPointer(skip),
        copy ? copy->data : nullptr, copy ? copy->elementType : MP_F32, coef,
        n, lr, beta1, beta2, epsilon, weightDecay);
  return launched("Adam kernels") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpAllReduce(mpCollectiveKind kind, int32_t count,
                               const mpTensor *inputs, mpTensor *outputs,
                               mpElementType compute) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (count < 1 || !inputs || !outputs ||
      (kind != MP_COLLECTIVE_SUM && kind != MP_COLLECTIVE_MEAN))
    return MP_ERROR_INVALID_ARGUMENT;
  if (::mpCommunicatorSize() > 1) {
    rt::setDetail("tg.all_reduce across ranks needs the NCCL transport, "
                  "which the CUDA backend does not have yet");
    return MP_ERROR_UNSUPPORTED;
  }
  for (int32_t i = 0; i < count; ++i) {
    int64_t n = mpNumElements(&inputs[i]);
    if (n < 0 || n != mpNumElements(&outputs[i]) ||
        inputs[i].elementType != outputs[i].elementType)
      return MP_ERROR_INVALID_ARGUMENT;
    if (n && inputs[i].data != outputs[i].data)
      MP_CUDA_TRY(cudaMemcpyAsync(outputs[i].data, inputs[i].data,
                                  size_t(n) * mpElementSize(
                                                  inputs[i].elementType),
                                  cudaMemcpyDeviceToDevice, c->stream));
  }
  return MP_OK;
}
