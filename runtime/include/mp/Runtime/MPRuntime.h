/*===- MPRuntime.h - the C ABI of the mp runtime -------------------*- C -*-===*
 *
 * The contract between code compiled from a tg training step and the
 * runtime library that executes it. The header has no MLIR or LLVM
 * dependency: the lowering (convert-tg-to-runtime) includes it for the enum
 * values it encodes in calls, and the CPU and CUDA backends implement it.
 * Both backends export the same symbols; which one runs is chosen when a
 * context is created.
 *
 * This revision has the shared vocabulary (ABI version, element types,
 * backends, status codes, tensor descriptors), exact conversions between
 * f32 and f16/bf16, and the CPU kernels of loss scaling and the optimizer
 * updates. The remaining op kernels come with the lowering and are
 * versioned by MP_RUNTIME_ABI_VERSION.
 *
 * Kernels take tensor descriptors. Outputs may alias the inputs they
 * replace (a parameter updated in place); other buffers must not overlap.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_RUNTIME_MPRUNTIME_H
#define MP_RUNTIME_MPRUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a declaration below, or an entry point's fields
 * (MPCompiled.h), changes meaning or layout. 2: the optimizer updates'
 * has_copy field. 3: fused_matmul's alpha. 4: fused_matmul's bias gradient
 * (mpFusedMatmulBiasGrad). */
#define MP_RUNTIME_ABI_VERSION 4

/* Element (storage or compute) types. Values are part of the ABI. */
typedef enum mpElementType {
  MP_F32 = 0,
  MP_F16 = 1,
  MP_BF16 = 2,
  MP_F64 = 3,
  MP_I32 = 4,
  MP_I64 = 5,
  MP_I1 = 6
} mpElementType;

/* Which implementation executes a step. */
typedef enum mpBackend {
  MP_BACKEND_CPU = 0,
  MP_BACKEND_CUDA = 1,
  MP_BACKEND_AUTO = 2 /* CUDA when a device is present, else the CPU */
} mpBackend;

typedef enum mpStatus {
  MP_OK = 0,
  MP_ERROR_INVALID_ARGUMENT = 1,
  MP_ERROR_OUT_OF_MEMORY = 2,
  MP_ERROR_NO_DEVICE = 3,
  MP_ERROR_BACKEND = 4, /* a CUDA or cuBLAS call failed; see the message */
  MP_ERROR_UNSUPPORTED = 5,
  MP_ERROR_COMMUNICATION = 6 /* a collective failed or timed out */
} mpStatus;

/* The largest rank a runtime tensor may have. */
#define MP_MAX_RANK 8

/* A dense row-major tensor in memory owned by the runtime's allocator. */
typedef struct mpTensor {
  void *data;
  mpElementType elementType;
  int32_t rank;
  int64_t shape[MP_MAX_RANK];
} mpTensor;

/* Size in bytes of one element of `type`; 0 for an unknown type. The i1
 * type is stored as one byte per element. */
static inline size_t mpElementSize(mpElementType type) {
  switch (type) {
  case MP_F32: case MP_I32: return 4;
  case MP_F16: case MP_BF16: return 2;
  case MP_F64: case MP_I64: return 8;
  case MP_I1: return 1;
  }
  return 0;
}

/* The type's name as MLIR spells it ("f32", "bf16", "i1"); "?" for an
 * unknown type. */
static inline const char *mpElementTypeName(mpElementType type) {
  switch (type) {
  case MP_F32: return "f32";
  case MP_F16: return "f16";
  case MP_BF16: return "bf16";
  case MP_F64: return "f64";
  case MP_I32: return "i32";
  case MP_I64: return "i64";
  case MP_I1: return "i1";
  }
  return "?";
}

/* The ABI version the library was built with; a caller compares it with
 * MP_RUNTIME_ABI_VERSION before anything else. */
int32_t mpRuntimeAbiVersion(void);

/* A static, human-readable description of a status code. */
const char *mpStatusString(mpStatus status);

/* Number of elements of `t` (1 for rank 0), or -1 for an invalid rank or a
 * negative dimension. */
int64_t mpNumElements(const mpTensor *t);

/*===----------------------------------------------------------------------===*
 * Conversions: round to nearest, ties to even; subnormals kept (never
 * flushed); overflow to infinity; NaN stays NaN (quiet, sign kept).
 *===----------------------------------------------------------------------===*/

uint16_t mpF32ToF16(float value);
float mpF16ToF32(uint16_t bits);
uint16_t mpF32ToBF16(float value);
float mpBF16ToF32(uint16_t bits);

/* Converts `count` elements between any two element types. Floating-point
 * conversions round to nearest even (f64 to f16/bf16 once, not twice
 * through f32). To an integer type a value truncates towards zero and
 * saturates at the type's range, NaN giving 0; to i1 any nonzero value
 * (NaN included) gives 1. */
mpStatus mpConvert(const void *src, mpElementType srcType, void *dst,
                   mpElementType dstType, int64_t count);

/*===----------------------------------------------------------------------===*
 * Elementwise ops. `compute` is the precision of the arithmetic: f32 or
 * f64 evaluate the op in that type; f16/bf16 round the inputs and the
 * result to that type (intermediate steps of gelu, tanh and sigmoid are
 * evaluated in f32, as PyTorch's kernels do). Results are then rounded to
 * the output's storage type.
 *===----------------------------------------------------------------------===*/

typedef enum mpUnaryKind {
  MP_NEG = 0,
  MP_RELU = 1,
  MP_GELU = 2,      /* exact: x * Phi(x) */
  MP_GELU_TANH = 3, /* tanh approximation */
  MP_TANH = 4,
  MP_SIGMOID = 5,
  MP_EXP = 6,
  MP_LOG = 7,
  MP_SQRT = 8,
  MP_RSQRT = 9,
  MP_SQUARE = 10,
  MP_ERF = 11,
  MP_SIN = 12,
  MP_COS = 13
} mpUnaryKind;

typedef enum mpBinaryKind {
  MP_ADD = 0,
  MP_SUB = 1,
  MP_MUL = 2,
  MP_DIV = 3,
  MP_MAXIMUM = 4,
  MP_MINIMUM = 5
} mpBinaryKind;

/* Comparisons (tg.compare): the result is i1, one byte per element holding
 * 0 or 1. */
typedef enum mpCompareKind {
  MP_EQ = 0,
  MP_NE = 1,
  MP_LT = 2,
  MP_LE = 3,
  MP_GT = 4,
  MP_GE = 5
} mpCompareKind;

/* The gradient of an activation given dy and the saved tensor (the input
 * for relu and gelu, the output for tanh and sigmoid). */
typedef enum mpActivationGradKind {
  MP_RELU_GRAD = 0,
  MP_GELU_GRAD = 1,
  MP_GELU_TANH_GRAD = 2,
  MP_TANH_GRAD = 3,
  MP_SIGMOID_GRAD = 4
} mpActivationGradKind;

/* out = f(in); in and out have one shape. */
mpStatus mpUnary(mpUnaryKind kind, const mpTensor *in, mpTensor *out,
                 mpElementType compute);

/* out = lhs (op) rhs with numpy broadcasting; out has the broadcast shape. */
mpStatus mpBinary(mpBinaryKind kind, const mpTensor *lhs, const mpTensor *rhs,
                  mpTensor *out, mpElementType compute);

/* out = lhs (op) rhs as i1, with numpy broadcasting; lhs and rhs share any
 * one element type (floating-point, integer or i1) and are compared exactly
 * in it. A NaN is unequal to everything, itself included, and neither less
 * nor greater (IEEE). */
mpStatus mpCompare(mpCompareKind kind, const mpTensor *lhs,
                   const mpTensor *rhs, mpTensor *out);

/* out = cond ? onTrue : onFalse, element by element, with numpy
 * broadcasting of the three operands; cond is i1, onTrue, onFalse and out
 * share one element type (any), whose elements are copied bit for bit. */
mpStatus mpSelect(const mpTensor *cond, const mpTensor *onTrue,
                  const mpTensor *onFalse, mpTensor *out);

/* dx = dy * f'(saved); all three have one shape. */
mpStatus mpActivationGrad(mpActivationGradKind kind, const mpTensor *dy,
                          const mpTensor *saved, mpTensor *dx,
                          mpElementType compute);

/*===----------------------------------------------------------------------===*
 * Softmax, reductions and losses. `compute` is the accumulation type: f32
 * and f64 compute in that type; f16/bf16 round every intermediate result
 * (each exponential, partial sum and quotient) to that type.
 *===----------------------------------------------------------------------===*/

/* Softmax (or, with `logSoftmax`, log-softmax) along `axis`. */
mpStatus mpSoftmax(const mpTensor *in, mpTensor *out, int64_t axis,
                   int32_t logSoftmax, mpElementType compute);

/* Given dy and the forward output y: dx = y * (dy - sum(dy * y)) for
 * softmax, dx = dy - exp(y) * sum(dy) for log-softmax, along `axis`. */
mpStatus mpSoftmaxGrad(const mpTensor *dy, const mpTensor *y, mpTensor *dx,
                       int64_t axis, int32_t logSoftmax,
                       mpElementType compute);

/* Running sum along `axis`: out[k] = in[0] + ... + in[k]; with `exclusive`
 * up to in[k - 1] (out[0] = 0); with `reverse` from the end of the axis. */
mpStatus mpCumSum(const mpTensor *in, mpTensor *out, int64_t axis,
                  int32_t exclusive, int32_t reverse, mpElementType compute);

typedef enum mpReduceKind {
  MP_REDUCE_SUM = 0,
  MP_REDUCE_MEAN = 1,
  MP_REDUCE_MAX = 2
} mpReduceKind;

/* Reduces `in` over the `numAxes` strictly increasing `axes`; `out` holds
 * the remaining dimensions in order (with or without size-1 kept dims). */
mpStatus mpReduce(mpReduceKind kind, const mpTensor *in, mpTensor *out,
                  const int64_t *axes, int32_t numAxes,
                  mpElementType compute);

/* Mean over label positions of -log_softmax(logits)[label]; logits
 * [..., C], labels (i32 or i64) [...]; labels outside [0, C) contribute 0
 * and still count in the mean. `loss` is rank 0. */
mpStatus mpSoftmaxCrossEntropy(const mpTensor *logits, const mpTensor *labels,
                               mpTensor *loss, mpElementType compute);

/* dlogits = dloss * (softmax(logits) - onehot(labels)) / N. */
mpStatus mpSoftmaxCrossEntropyGrad(const mpTensor *dloss,
                                   const mpTensor *logits,
                                   const mpTensor *labels, mpTensor *dlogits,
                                   mpElementType compute);

/* mean((prediction - target)^2) and its gradient 2 dloss (p - t) / numel. */
mpStatus mpMseLoss(const mpTensor *prediction, const mpTensor *target,
                   mpTensor *loss, mpElementType compute);
mpStatus mpMseLossGrad(const mpTensor *dloss, const mpTensor *prediction,
                       const mpTensor *target, mpTensor *dprediction,
                       mpElementType compute);

/*===----------------------------------------------------------------------===*
 * Layer normalisation over dimensions [axis, rank): y = (x - mean) * rstd *
 * scale + bias with rstd = 1 / sqrt(var + epsilon) (biased variance); mean
 * and rstd (shape [:axis]) are saved for the backward pass.
 *===----------------------------------------------------------------------===*/

mpStatus mpLayerNorm(const mpTensor *x, const mpTensor *scale,
                     const mpTensor *bias, mpTensor *y, mpTensor *mean,
                     mpTensor *rstd, int64_t axis, float epsilon,
                     mpElementType compute);

mpStatus mpLayerNormGrad(const mpTensor *dy, const mpTensor *x,
                         const mpTensor *scale, const mpTensor *mean,
                         const mpTensor *rstd, mpTensor *dx,
                         mpTensor *dscale, mpTensor *dbias, int64_t axis,
                         mpElementType compute);

/*===----------------------------------------------------------------------===*
 * Data movement. Element types of input and output match (any type).
 *===----------------------------------------------------------------------===*/

/* Row ids[i] of `table` ([V, D...]) into out[i] ([I..., D...]); ids are i32
 * or i64 and clamped to [0, V). */
mpStatus mpGather(const mpTensor *table, const mpTensor *ids, mpTensor *out);

/* The table gradient: zero, then row ids[i] += grad[i] (accumulated in the
 * compute type); ids outside [0, V) are dropped. */
mpStatus mpGatherGrad(const mpTensor *grad, const mpTensor *ids,
                      mpTensor *table, mpElementType compute);

/* out[i0, i1, ...] = in[i_perm...]: result dimension d is input dimension
 * permutation[d]. */
mpStatus mpTranspose(const mpTensor *in, mpTensor *out,
                     const int64_t *permutation);

/* Copies the elements in row-major order (reshape); counts must match. */
mpStatus mpCopy(const mpTensor *in, mpTensor *out);

/* numpy broadcast of `in` to out's shape. */
mpStatus mpBroadcastTo(const mpTensor *in, mpTensor *out);

/* Joins `count` inputs along `axis`. */
mpStatus mpConcat(int32_t count, const mpTensor *inputs, mpTensor *out,
                  int64_t axis);

/* out[i] = in[offsets + i * strides] per dimension (strides may be null:
 * all 1). */
mpStatus mpSlice(const mpTensor *in, mpTensor *out, const int64_t *offsets,
                 const int64_t *strides);

/* The adjoint of mpSlice: dx is zero except dx[offsets + i * strides] =
 * dy[i] per dimension (strides may be null: all 1). */
mpStatus mpSliceGrad(const mpTensor *dy, mpTensor *dx, const int64_t *offsets,
                     const int64_t *strides);

/*===----------------------------------------------------------------------===*
 * Contraction (tg.matmul).
 *===----------------------------------------------------------------------===*/

/* out = op(lhs) @ op(rhs) over the two innermost dimensions, op being a
 * transpose of those two when requested; batch dimensions broadcast
 * numpy-style. lhs and rhs share a storage type; out may have another.
 * `compute` is the accumulation type: f32 (f16/bf16 operands are exact in
 * f32, as on tensor cores; through BLAS), f64, or f16/bf16 (every product
 * and every partial sum rounded to that type). */
mpStatus mpMatmul(const mpTensor *lhs, const mpTensor *rhs, mpTensor *out,
                  int32_t transposeLhs, int32_t transposeRhs,
                  mpElementType compute);

/* The activation of a fused matmul's epilogue (tg.fused_matmul). Values
 * are part of the ABI. */
typedef enum mpActivation {
  MP_ACTIVATION_NONE = 0,
  MP_ACTIVATION_RELU = 1,
  MP_ACTIVATION_GELU = 2,      /* x * Phi(x), with erf */
  MP_ACTIVATION_GELU_TANH = 3  /* the tanh approximation */
} mpActivation;

/* out = activation(alpha * (op(lhs) op(rhs)) + bias + residual), as
 * mpMatmul with an epilogue computed in `compute` (f32 or f64) on the
 * accumulators and rounded once to out's storage type. `alpha` is finite
 * (rounded to f32 for f32 compute); `bias` (may be null) is a vector of
 * out's last dimension, of any floating-point type; `residual` (may be null)
 * has out's shape and type and may alias `out`. `activation` is an
 * mpActivation value; any other is refused. */
mpStatus mpFusedMatmul(const mpTensor *lhs, const mpTensor *rhs,
                       const mpTensor *bias, const mpTensor *residual,
                       mpTensor *out, int32_t transposeLhs,
                       int32_t transposeRhs, int32_t activation, double alpha,
                       mpElementType compute);

/* A matmul operand. Values are part of the ABI. */
typedef enum mpMatmulOperand {
  MP_MATMUL_LHS = 0,
  MP_MATMUL_RHS = 1
} mpMatmulOperand;

/* mpFusedMatmul of two 2-D operands that also sums one of them along k, as
 * a weight gradient gives its layer's bias gradient (cuBLASLt's BGRADA and
 * BGRADB epilogues): for `biasGradOf` MP_MATMUL_LHS, biasGrad[i] is the sum
 * over x of op(lhs)[i, x] (a vector of out's rows); for MP_MATMUL_RHS,
 * biasGrad[j] is the sum over x of op(rhs)[x, j] (of out's columns). Each
 * is summed in order along k in `compute`, as mpReduce sums, and rounded
 * once to biasGrad's type (any floating-point one); alpha and the epilogue
 * do not touch it. biasGrad must not overlap the other tensors. */
mpStatus mpFusedMatmulBiasGrad(const mpTensor *lhs, const mpTensor *rhs,
                               const mpTensor *bias, const mpTensor *residual,
                               mpTensor *out, mpTensor *biasGrad,
                               int32_t biasGradOf, int32_t transposeLhs,
                               int32_t transposeRhs, int32_t activation,
                               double alpha, mpElementType compute);

/*===----------------------------------------------------------------------===*
 * Loss scaling (tg.unscale_grads, tg.update_loss_scale). The scale is a
 * rank-0 f32 tensor, the counter rank-0 i64, the predicate rank-0 i1.
 *===----------------------------------------------------------------------===*/

/* unscaled[i] = grads[i] * (1/scale), the reciprocal computed in double and
 * rounded to f32, each result rounded to its storage type; *foundInf = 1
 * when any unscaled element of any gradient is an infinity or a NaN, else
 * 0. `unscaled[i]` may alias `grads[i]`. */
mpStatus mpUnscaleGrads(int32_t count, const mpTensor *grads,
                        mpTensor *unscaled, const mpTensor *scale,
                        mpTensor *foundInf);

/* torch.amp.GradScaler's update: on overflow scale *= backoff (not below
 * minScale) and the counter resets; otherwise the counter grows and at
 * `interval` scale *= growth when the result is finite and not above
 * maxScale, and the counter resets. minScale / maxScale of 0 mean none.
 * Updates `scale` and `goodSteps` in place. */
mpStatus mpUpdateLossScale(mpTensor *scale, mpTensor *goodSteps,
                           const mpTensor *foundInf, float growth,
                           float backoff, int64_t interval, float minScale,
                           float maxScale);

/*===----------------------------------------------------------------------===*
 * Collectives (tg.all_reduce). The runtime holds one communicator per
 * process, which the host program sets: mp-runner under mpirun, or an MPI
 * program linking compiled steps (mp/Runtime/MPCollectives.h sets one from
 * an MPI communicator). Without one the process is a run of one rank.
 *===----------------------------------------------------------------------===*/

typedef enum mpCollectiveKind {
  MP_COLLECTIVE_SUM = 0, /* the values of tg's CollectiveReduction */
  MP_COLLECTIVE_MEAN = 1
} mpCollectiveKind;

typedef struct mpCommunicator {
  int32_t size; /* ranks */
  int32_t rank; /* this process, in [0, size) */
  /* Replaces the `count` elements at `data` (of `type`: f32, f64, f16 or
   * bf16) by their sum over all ranks, identical on every rank, adding in
   * `compute` (f32 for f16/bf16 data; partial sums travel in `type`). */
  mpStatus (*allReduceSum)(void *context, void *data, int64_t count,
                           mpElementType type, mpElementType compute);
  void *context;
} mpCommunicator;

/* Makes `comm` (copied) the process's communicator; null returns to one
 * rank. */
void mpSetCommunicator(const mpCommunicator *comm);
/* The communicator's size (1 without one). */
int32_t mpCommunicatorSize(void);

/* outputs[i] = the sum (or mean) over all ranks of inputs[i], for `count`
 * tensors of one floating-point element type, sent as one message. A mean
 * divides each contribution by the rank count in `compute` before sending.
 * outputs[i] may alias inputs[i]. */
mpStatus mpAllReduce(mpCollectiveKind kind, int32_t count,
                     const mpTensor *inputs, mpTensor *outputs,
                     mpElementType compute);

/*===----------------------------------------------------------------------===*
 * Numerics checks (tg.tensor_stats, tg.record_nonfinite)
 *===----------------------------------------------------------------------===*/

/* Writes six f32 numbers about the elements of `in` (any floating-point
 * type, as stored) to `stats` (6 f32 elements): the smallest and the
 * largest element that is not NaN (+inf and -inf when there is none), the
 * largest magnitude that is not NaN (0 when there is none), the smallest
 * non-zero magnitude (+inf when there is none), the number of NaNs and the
 * number of infinities. */
mpStatus mpTensorStats(const mpTensor *in, mpTensor *stats);

/* out (an i64 scalar) = *status when it is >= 0; else opId when any of the
 * `count` stats tensors (rows of mpTensorStats, [K, 6] f32) counts a NaN or
 * an infinity; else *status. `out` may be `status`. */
mpStatus mpRecordNonfinite(const mpTensor *status, int32_t count,
                           const mpTensor *stats, mpTensor *out,
                           int64_t opId);

/*===----------------------------------------------------------------------===*
 * Optimizer updates (tg.sgd_update, tg.adam_update), in f32 on f32
 * parameters and state; the gradient may be f32, f16 or bf16. When `skip`
 * is given and true, nothing is written: parameters and state stay
 * bit-identical. Results are written in place.
 *===----------------------------------------------------------------------===*/

mpStatus mpSgdUpdate(mpTensor *param, const mpTensor *grad,
                     mpTensor *momentumBuffer, const mpTensor *skip,
                     float lr, float momentum, float weightDecay,
                     int32_t nesterov);

mpStatus mpAdamUpdate(mpTensor *param, const mpTensor *grad,
                      mpTensor *firstMoment, mpTensor *secondMoment,
                      mpTensor *step, const mpTensor *skip, float lr,
                      float beta1, float beta2, float epsilon,
                      float weightDecay);

/* The updates above that also write the updated parameter rounded to
 * `copy`'s element type (f16 or bf16; the parameter's shape) into `copy`,
 * in the same pass: what a cast of the new parameter gives, without reading
 * the parameter again. A low-precision shadow of a master weight
 * (tg-shadow-weights) is kept this way. With a true `skip` the parameter and
 * state stay as they are and `copy` is written from the parameter. */
mpStatus mpSgdUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                             mpTensor *momentumBuffer, const mpTensor *skip,
                             mpTensor *copy, float lr, float momentum,
                             float weightDecay, int32_t nesterov);

mpStatus mpAdamUpdateWithCopy(mpTensor *param, const mpTensor *grad,
                              mpTensor *firstMoment, mpTensor *secondMoment,
                              mpTensor *step, const mpTensor *skip,
                              mpTensor *copy, float lr, float beta1,
                              float beta2, float epsilon, float weightDecay);

/*===----------------------------------------------------------------------===*
 * Convolution, pooling and batch norm (tg.conv2d, tg.max_pool2d,
 * tg.avg_pool2d, tg.batch_norm and their gradients). Activations are rank
 * 4, NCHW or, with channelsLast, NHWC; filters are [O, C / groups, KH, KW];
 * padding is {top, left, bottom, right}; a dilation of 1 is a dense window.
 * The output size along an axis is
 * (size + padding - (window - 1) * dilation - 1) / stride + 1.
 *===----------------------------------------------------------------------===*/

/* Whether the CPU backend may use its fast kernels (oneDNN for
 * convolutions and bf16 matmuls, vectorised and multi-threaded loops for the
 * rest) instead of its own reference loops; on by default, off from the
 * start with MP_REFERENCE_KERNELS=1 in the environment. Tests turn it off to
 * hold the fast kernels to the reference. */
void mpUseLibraryKernels(int32_t enable);

/* What the CPU offers the CPU backend, read at run time with cpuid. */
typedef struct mpCpuInfo {
  int32_t avx2;       /* AVX2 and FMA */
  int32_t f16c;       /* f16 <-> f32 conversion instructions */
  int32_t avx512;     /* AVX-512 F, BW, VL and DQ */
  int32_t avx512bf16; /* bf16 dot products (vdpbf16ps) */
  int32_t amx;        /* AMX tiles with bf16 */
  int32_t bf16Gemm;   /* bf16 matmuls run on bf16 instructions (oneDNN) */
  int32_t threads;    /* threads the kernels use */
  int32_t fastKernels; /* 0 with MP_REFERENCE_KERNELS or after
                          mpUseLibraryKernels(0) */
} mpCpuInfo;
mpCpuInfo mpGetCpuInfo(void);

typedef struct mpWindow {
  int64_t window[2]; /* pooling only; convolutions take the filter's */
  int64_t strides[2];
  int64_t padding[4];
  int64_t dilations[2];
  int64_t groups; /* convolution only */
  int32_t channelsLast;
} mpWindow;

mpStatus mpConv2d(const mpTensor *input, const mpTensor *filter,
                  mpTensor *out, const mpWindow *w, mpElementType compute);
mpStatus mpConv2dGradInput(const mpTensor *dy, const mpTensor *filter,
                           mpTensor *dx, const mpWindow *w,
                           mpElementType compute);
mpStatus mpConv2dGradFilter(const mpTensor *dy, const mpTensor *input,
                            mpTensor *dfilter, const mpWindow *w,
                            mpElementType compute);

typedef enum mpPoolKind {
  MP_POOL_MAX = 0,
  MP_POOL_AVG = 1,             /* divides by the window's in-bounds count */
  MP_POOL_AVG_INCLUDE_PAD = 2  /* divides by the whole window's size */
} mpPoolKind;

mpStatus mpPool2d(mpPoolKind kind, const mpTensor *input, mpTensor *out,
                  const mpWindow *w, mpElementType compute);
/* `input` is read by max pooling only (it may be null for averages). */
mpStatus mpPool2dGrad(mpPoolKind kind, const mpTensor *dy,
                      const mpTensor *input, mpTensor *dx, const mpWindow *w,
                      mpElementType compute);

/* Training: batch statistics over N, H and W per channel; writes y, the
 * batch mean and 1 / sqrt(biased variance + epsilon), and the running
 * statistics blended with weight `momentum` for the batch (the running
 * variance with the unbiased batch variance). All [C] tensors share one
 * storage type. */
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

/* Dropout with the counter-based mask of Philox.h: out = in / (1 - rate)
 * where the mask of (`seed`, `stream`) keeps an element, else 0. `seed` is
 * an i64 scalar tensor, read where it lives (device memory on the GPU), so
 * that a captured step draws a new mask when its seed state advances. The
 * gradient is the same call on the output gradient. rate in [0, 1). */
/* Uniform numbers in [low, high) from the dropout generator: element i is
 * low + (high - low) * u, u the 24-bit uniform (word >> 8) / 2^24 of the
 * mask word of (`seed`, `stream`, i). */
mpStatus mpRandomUniform(const mpTensor *seed, mpTensor *out, double low,
                         double high, int64_t stream);

mpStatus mpDropout(const mpTensor *in, const mpTensor *seed, mpTensor *out,
                   float rate, int64_t stream, mpElementType compute);
/* out = seed + 1 (wrapping) for i64 scalars: the next step's seed. */
mpStatus mpNextSeed(const mpTensor *seed, mpTensor *out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MP_RUNTIME_MPRUNTIME_H */
