//===- Kernels.h - the CUDA backend's kernels ---------------------*- C++ -*-===//
//
// The kernels of MPRuntime.h for device memory: the same declarations in
// namespace mp::cuda, with the same meaning and argument checks. Every
// function enqueues its work on the context's stream and returns without
// waiting for it. Where the CUDA kernels differ from the CPU reference:
//   - reductions (softmax, layer norm, losses, reduce) accumulate in f32 (f64
//     for f64) in a parallel, fixed order; with an f16/bf16 compute type
//     they round each element-wise intermediate and the results, not every
//     partial sum;
//   - matmul accumulates in f32 at least (cuBLASLt, tensor cores for f16 and
//     bf16; strict f32 without TF32 for f32 operands), also when the op's
//     compute type is f16/bf16.
// Results are deterministic: no floating-point atomics.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_LIB_CUDA_KERNELS_H
#define MP_RUNTIME_LIB_CUDA_KERNELS_H

#include "mp/Runtime/MPRuntime.h"

#include "../Checks.h"

namespace mp::cuda {

mpStatus mpConvert(const void *src, mpElementType srcType, void *dst,
                   mpElementType dstType, int64_t count);
mpStatus mpUnary(mpUnaryKind kind, const mpTensor *in, mpTensor *out,
                 mpElementType compute);
mpStatus mpBinary(mpBinaryKind kind, const mpTensor *lhs, const mpTensor *rhs,
                  mpTensor *out, mpElementType compute);
mpStatus mpCompare(mpCompareKind kind, const mpTensor *lhs,
                   const mpTensor *rhs, mpTensor *out);
mpStatus mpSelect(const mpTensor *cond, const mpTensor *onTrue,
                  const mpTensor *onFalse, mpTensor *out);
mpStatus mpActivationGrad(mpActivationGradKind kind, const mpTensor *dy,
                          const mpTensor *saved, mpTensor *dx,
                          mpElementType compute);
mpStatus mpSoftmax(const mpTensor *in, mpTensor *out, int64_t axis,
                   int32_t logSoftmax, mpElementType compute);
mpStatus mpSoftmaxGrad(const mpTensor *dy, const mpTensor *y, mpTensor *dx,
                       int64_t axis, int32_t logSoftmax,
                       mpElementType compute);
mpStatus mpReduce(mpReduceKind kind, const mpTensor *in, mpTensor *out,
                  const int64_t *axes, int32_t numAxes, mpElementType compute);
mpStatus mpCumSum(const mpTensor *in, mpTensor *out, int64_t axis,
                  int32_t exclusive, int32_t reverse, mpElementType compute);
mpStatus mpSoftmaxCrossEntropy(const mpTensor *logits, const mpTensor *labels,
                               mpTensor *loss, mpElementType compute);
mpStatus mpSoftmaxCrossEntropyGrad(const mpTensor *dloss,
                                   const mpTensor *logits,
                                   const mpTensor *labels, mpTensor *dlogits,
                                   mpElementType compute);
mpStatus mpMseLoss(const mpTensor *prediction, const mpTensor *target,
                   mpTensor *loss, mpElementType compute);
mpStatus mpMseLossGrad(const mpTensor *dloss, const mpTensor *prediction,
                       const mpTensor *target, mpTensor *dprediction,
                       mpElementType compute);
mpStatus mpLayerNorm(const mpTensor *x, const mpTensor *scale,
                     const mpTensor *bias, mpTensor *y, mpTensor *mean,
                     mpTensor *rstd, int64_t axis, float epsilon,
                     mpElementType compute);
mpStatus mpLayerNormGrad(const mpTensor *dy, const mpTensor *x,
                         const mpTensor *scale, const mpTensor *mean,
                         const mpTensor *rstd, mpTensor *dx, mpTensor *dscale,
                         mpTensor *dbias, int64_t axis, mpElementType compute);
mpStatus mpGather(const mpTensor *table, const mpTensor *ids, mpTensor *out);
mpStatus mpGatherGrad(const mpTensor *grad, const mpTensor *ids,
                      mpTensor *table, mpElementType compute);
mpStatus mpTranspose(const mpTensor *in, mpTensor *out,
                     const int64_t *permutation);
mpStatus mpCopy(const mpTensor *in, mpTensor *out);
mpStatus mpBroadcastTo(const mpTensor *in, mpTensor *out);
mpStatus mpConcat(int32_t count, const mpTensor *inputs, mpTensor *out,
                  int64_t axis);
mpStatus mpSlice(const mpTensor *in, mpTensor *out, const int64_t *offsets,
                 const int64_t *strides);
mpStatus mpSliceGrad(const mpTensor *dy, mpTensor *dx, const int64_t *offsets,
                     const int64_t *strides);
mpStatus mpMatmul(const mpTensor *lhs, const mpTensor *rhs, mpTensor *out,
                  int32_t transposeLhs, int32_t transposeRhs,
                  mpElementType compute);
mpStatus mpFusedMatmul(const mpTensor *lhs, const mpTensor *rhs,
                       const mpTensor *bias, const mpTensor *residual,
                       mpTensor *out, int32_t transposeLhs,
                       int32_t transposeRhs, int32_t activation, double alpha,
                       mpElementType compute);
mpStatus mpFusedMatmulBiasGrad(const mpTensor *lhs, const mpTensor *rhs,
                               const mpTensor *bias, const mpTensor *residual,
                               mpTensor *out, mpTensor *biasGrad,
                               int32_t biasGradOf, int32_t transposeLhs,
                               int32_t transposeRhs, int32_t activation,
                               double alpha, mpElementType compute);
/// out = activation(alpha acc + bias + residual), rounded once to out's type:
/// the epilogue of a fused matmul that cuBLASLt does not take, on the
/// product `acc` (f32 or f64, out's shape) on the device.
mpStatus applyEpilogue(const void *acc, mpElementType accType, double alpha,
                       const mpTensor *bias, const mpTensor *residual,
                       mpTensor *out, mpActivation activation);
/// One rank only: the NCCL transport is not built yet, so a data-parallel
/// step on more than one rank returns MP_ERROR_UNSUPPORTED.
mpStatus mpAllReduce(mpCollectiveKind kind, int32_t count,
                     const mpTensor *inputs, mpTensor *outputs,
                     mpElementType compute);
mpStatus mpUnscaleGrads(int32_t count, const mpTensor *grads,
                        mpTensor *unscaled, const mpTensor *scale,
                        mpTensor *foundInf);
mpStatus mpUpdateLossScale(mpTensor *scale, mpTensor *goodSteps,
                           const mpTensor *foundInf, float growth,
                           float backoff, int64_t interval, float minScale,
                           float maxScale);
mpStatus mpTensorStats(const mpTensor *in, mpTensor *stats);
mpStatus mpRecordNonfinite(const mpTensor *status, int32_t count,
                           const mpTensor *stats, mpTensor *out, int64_t opId);
mpStatus mpSgdUpdate(mpTensor *param, const mpTensor *grad,
                     mpTensor *momentumBuffer, const mpTensor *skip, float lr,
                     float momentum, float weightDecay, int32_t nesterov);
mpStatus mpAdamUpdate(mpTensor *param, const mpTensor *grad,
                      mpTensor *firstMoment, mpTensor *secondMoment,
                      mpTensor *step, const mpTensor *skip, float lr,
                      float beta1, float beta2, float epsilon,
                      float weightDecay);
mpStatus mpSgdUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                             mpTensor *momentumBuffer, const mpTensor *skip,
                             mpTensor *copy, float lr, float momentum,
                             float weightDecay, int32_t nesterov);
mpStatus mpAdamUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                              mpTensor *firstMoment, mpTensor *secondMoment,
                              mpTensor *step, const mpTensor *skip,
                              mpTensor *copy, float lr, float beta1,
                              float beta2, float epsilon, float weightDecay);

mpStatus mpConv2d(const mpTensor *input, const mpTensor *filter,
                  mpTensor *out, const mpWindow *w, mpElementType compute);
mpStatus mpConv2dGradInput(const mpTensor *dy, const mpTensor *filter,
                           mpTensor *dx, const mpWindow *w,
                           mpElementType compute);
mpStatus mpConv2dGradFilter(const mpTensor *dy, const mpTensor *input,
                            mpTensor *dfilter, const mpWindow *w,
                            mpElementType compute);
mpStatus mpPool2d(mpPoolKind kind, const mpTensor *input, mpTensor *out,
                  const mpWindow *w, mpElementType compute);
mpStatus mpPool2dGrad(mpPoolKind kind, const mpTensor *dy,
                      const mpTensor *input, mpTensor *dx, const mpWindow *w,
                      mpElementType compute);
mpStatus mpBatchNorm(const mpTensor *x, const mpTensor *scale,
                     const mpTensor *bias, const mpTensor *runningMean,
                     const mpTensor *runningVar, mpTensor *y, mpTensor *mean,
                     mpTensor *rstd, mpTensor *newRunningMean,
                     mpTensor *newRunningVar, float epsilon, float momentum,
                     int32_t channelsLast, mpElementType compute);
mpStatus mpBatchNormInference(const mpTensor *x, const mpTensor *scale,
                              const mpTensor *bias, const mpTensor *mean,
                              const mpTensor *variance, mpTensor *y,
                              float epsilon, int32_t channelsLast,
                              mpElementType compute);
mpStatus mpBatchNormGrad(const mpTensor *dy, const mpTensor *x,
                         const mpTensor *scale, const mpTensor *mean,
                         const mpTensor *rstd, mpTensor *dx, mpTensor *dscale,
                         mpTensor *dbias, int32_t channelsLast,
                         mpElementType compute);
mpStatus mpRandomUniform(const mpTensor *seed, mpTensor *out, double low,
                         double high, int64_t stream);
mpStatus mpDropout(const mpTensor *in, const mpTensor *seed, mpTensor *out,
                   float rate, int64_t stream, mpElementType compute);
mpStatus mpNextSeed(const mpTensor *seed, mpTensor *out);

using rt::isFloatType;
using rt::isScalar;
using rt::sameShape;
using rt::sliceFits;
using rt::validDropout;

/// Valid float tensor with data (or with no elements).
bool validFloat(const mpTensor *t);

} // namespace mp::cuda

#endif // MP_RUNTIME_LIB_CUDA_KERNELS_H
