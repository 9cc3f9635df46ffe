//===- Elementwise.cu - unary, binary, activation gradients, conversions --===//
//
// Element-wise kernels. When the operands share an f32/f16/bf16 storage type
// (and, for binary ops, a shape) the kernels move four elements per access
// (8 or 16 bytes) in a grid-stride loop; anything else (broadcasting, mixed
// or f64 storage, f64 compute) takes a general kernel that indexes each
// element through its strides.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "Kernels.h"

#include "mp/Runtime/Philox.h"

#include <type_traits>

using namespace mp;
using namespace mp::cuda;

namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kSqrt2OverPi = 0.79788456080286535588;

//===----------------------------------------------------------------------===//
// The element functions (the CPU backend's formulas, runtime/lib/CPU/Math.h,
// with CUDA's own erfc and exp, in C = float or double)
//===----------------------------------------------------------------------===//

/// 0.5 (1 + erf(x / sqrt 2)) as 0.5 erfc(-x / sqrt 2): no cancellation for
/// negative x.
template <typename C> __device__ C normalCdf(C x) {
  return C(0.5) * erfc(-x * C(kInvSqrt2));
}

/// The logistic function of 2u, 0.5 (1 + tanh u), and its complement, from
/// e^(-2 |u|), which never overflows (the CPU's logisticOf2u).
template <typename C> struct Logistic {
  C s, complement;
};
template <typename C> __device__ Logistic<C> logisticOf2u(C u) {
  C e = exp(C(-2) * fabs(u));
  C r = C(1) / (C(1) + e);
  return u >= C(0) ? Logistic<C>{r, e * r} : Logistic<C>{e * r, r};
}
template <typename C> __device__ C geluTanhInner(C x) {
  return C(kSqrt2OverPi) * (x + C(0.044715) * x * x * x);
}

template <typename C> __device__ C unaryOp(int kind, C x) {
  switch (kind) {
  case MP_NEG: return -x;
  case MP_RELU: return x > C(0) || x != x ? x : C(0); // NaN stays NaN
  case MP_GELU: return x * normalCdf(x);
  case MP_GELU_TANH: return x * logisticOf2u(geluTanhInner(x)).s;
  case MP_TANH: return tanh(x);
  case MP_SIGMOID: return C(1) / (C(1) + exp(-x));
  case MP_EXP: return exp(x);
  case MP_LOG: return log(x);
  case MP_SQRT: return sqrt(x);
  case MP_RSQRT: return C(1) / sqrt(x);
  case MP_SQUARE: return x * x;
  case MP_ERF: return erf(x);
  case MP_SIN: return sin(x);
  case MP_COS: return cos(x);
  }
  return x;
}

template <typename C> __device__ C binaryOp(int kind, C a, C b) {
  switch (kind) {
  case MP_ADD: return a + b;
  case MP_SUB: return a - b;
  case MP_MUL: return a * b;
  case MP_DIV: return a / b;
  case MP_MAXIMUM: return isnan(a) || isnan(b) ? a + b : (a > b ? a : b);
  case MP_MINIMUM: return isnan(a) || isnan(b) ? a + b : (a < b ? a : b);
  }
  return a;
}

template <typename C> __device__ C activationGradOp(int kind, C dy, C s) {
  switch (kind) {
  case MP_RELU_GRAD: return s > C(0) ? dy : C(0);
  case MP_GELU_GRAD: {
    C pdf = exp(C(-0.5) * s * s) * C(kSqrt2OverPi / 2);
    return dy * (normalCdf(s) + s * pdf);
  }
  case MP_GELU_TANH_GRAD: {
    Logistic<C> l = logisticOf2u(geluTanhInner(s));
    C du = C(kSqrt2OverPi) * (C(1) + C(3 * 0.044715) * s * s);
    return dy * (l.s + C(2) * s * l.s * l.complement * du);
  }
  case MP_TANH_GRAD: return dy * (C(1) - s * s);
  case MP_SIGMOID_GRAD: return dy * s * (C(1) - s);
  }
  return dy;
}

/// Functors over f32 with the compute type's rounding.
struct UnaryF {
  int kind, compute;
  __device__ float operator()(float x) const {
    return roundCompute(compute,
                        unaryOp<float>(kind, roundCompute(compute, x)));
  }
};
struct ConvertF {
  __device__ float operator()(float x) const { return x; }
};
struct BinaryF {
  int kind, compute;
  __device__ float operator()(float a, float b) const {
    return roundCompute(compute,
                        binaryOp<float>(kind, roundCompute(compute, a),
                                        roundCompute(compute, b)));
  }
};
struct ActivationGradF {
  int kind, compute;
  __device__ float operator()(float dy, float s) const {
    return roundCompute(compute,
                        activationGradOp<float>(kind, roundCompute(compute, dy),
                                                roundCompute(compute, s)));
  }
};

//===----------------------------------------------------------------------===//
// Packed kernels
//===----------------------------------------------------------------------===//

template <typename In, typename Out, typename F>
__global__ void map1Kernel(const In *in, Out *out, int64_t n, F f) {
  int64_t packs = n / 4;
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < packs; i += stride) {
    Pack4<In> a = reinterpret_cast<const Pack4<In> *>(in)[i];
    Pack4<Out> r;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      r.v[k] = fromFloat<Out>(f(toFloat(a.v[k])));
    reinterpret_cast<Pack4<Out> *>(out)[i] = r;
  }
  for (int64_t i = packs * 4 + first; i < n; i += stride)
    out[i] = fromFloat<Out>(f(toFloat(in[i])));
}

template <typename T, typename F>
__global__ void map2Kernel(const T *a, const T *b, T *out, int64_t n, F f) {
  int64_t packs = n / 4;
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  int64_t first = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  for (int64_t i = first; i < packs; i += stride) {
    Pack4<T> x = reinterpret_cast<const Pack4<T> *>(a)[i];
    Pack4<T> y = reinterpret_cast<const Pack4<T> *>(b)[i];
    Pack4<T> r;
#pragma unroll
    for (int k = 0; k < 4; ++k)
      r.v[k] = fromFloat<T>(f(toFloat(x.v[k]), toFloat(y.v[k])));
    reinterpret_cast<Pack4<T> *>(out)[i] = r;
  }
  for (int64_t i = packs * 4 + first; i < n; i += stride)
    out[i] = fromFloat<T>(f(toFloat(a[i]), toFloat(b[i])));
}

/// Calls `body(T{})` with T the C++ type of an f32/f16/bf16 `type`; returns
/// false for other types.
template <typename Body> bool withStorage(mpElementType type, Body body) {
  switch (type) {
  case MP_F32: body(float{}); return true;
  case MP_F16: body(__half{}); return true;
  case MP_BF16: body(__nv_bfloat16{}); return true;
  default: return false;
  }
}

bool packable(const void *p, mpElementType type) {
  return isPackable(p, mpElementSize(type));
}

/// Runs `f` over `n` elements with the packed kernel when the types allow;
/// returns false when they do not.
template <typename F>
bool tryMap1(const void *in, mpElementType inType, void *out,
             mpElementType outType, int64_t n, F f) {
  if (!packable(in, inType) || !packable(out, outType))
    return false;
  bool done = false;
  withStorage(inType, [&](auto a) {
    withStorage(outType, [&](auto b) {
      using In = decltype(a);
      using Out = decltype(b);
      map1Kernel<In, Out, F><<<gridFor(n, 4), kThreads, 0,
                               context()->stream>>>(
          static_cast<const In *>(in), static_cast<Out *>(out), n, f);
      done = true;
    });
  });
  return done;
}

template <typename F>
bool tryMap2(const mpTensor &a, const mpTensor &b, mpTensor &out, F f) {
  if (a.elementType != b.elementType || a.elementType != out.elementType ||
      !sameShape(&a, &b) || !sameShape(&a, &out) ||
      !packable(a.data, a.elementType) || !packable(b.data, b.elementType) ||
      !packable(out.data, out.elementType))
    return false;
  int64_t n = mpNumElements(&out);
  return withStorage(out.elementType, [&](auto t) {
    using T = decltype(t);
    map2Kernel<T, F><<<gridFor(n, 4), kThreads, 0, context()->stream>>>(
        static_cast<const T *>(a.data), static_cast<const T *>(b.data),
        static_cast<T *>(out.data), n, f);
  });
}

/// BinaryF with one operand a single element of type T in device memory,
/// read by every thread (an attention scale, an epsilon): the other operand
/// goes through map1Kernel's packed loads instead of binaryGeneral's
/// per-element index arithmetic, which ran at a fifth of the H200's
/// bandwidth on [8, 16, 1024, 1024] scores.
template <typename T> struct ScalarBinaryF {
  BinaryF op;
  const T *scalar;
  bool scalarLhs;
  __device__ float operator()(float x) const {
    float s = toFloat(*scalar);
    return scalarLhs ? op(s, x) : op(x, s);
  }
};

/// mpBinary through map1Kernel when one operand has one element and the
/// other the output's shape; false otherwise.
bool tryScalarBinary(const mpTensor &lhs, const mpTensor &rhs, mpTensor &out,
                     BinaryF f) {
  bool scalarLhs = mpNumElements(&lhs) == 1 && !sameShape(&lhs, &out);
  const mpTensor &one = scalarLhs ? lhs : rhs, &big = scalarLhs ? rhs : lhs;
  if (mpNumElements(&one) != 1 || !sameShape(&big, &out))
    return false;
  bool done = false;
  withStorage(one.elementType, [&](auto t) {
    using T = decltype(t);
    done = tryMap1(big.data, big.elementType, out.data, out.elementType,
                   mpNumElements(&out),
                   ScalarBinaryF<T>{f, static_cast<const T *>(one.data),
                                    scalarLhs});
  });
  return done;
}

//===----------------------------------------------------------------------===//
// General kernels
//===----------------------------------------------------------------------===//

template <typename C>
__global__ void unaryGeneral(int kind, int compute, const void *in, int inType,
                             void *out, int outType, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    C x = roundCompute(compute, loadAs<C>(in, inType, i));
    storeAs<C>(out, outType, i, roundCompute(compute, unaryOp<C>(kind, x)));
  }
}

template <typename C>
__global__ void activationGradGeneral(int kind, int compute, const void *dy,
                                      int dyType, const void *saved,
                                      int savedType, void *dx, int dxType,
                                      int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    C g = roundCompute(compute, loadAs<C>(dy, dyType, i));
    C s = roundCompute(compute, loadAs<C>(saved, savedType, i));
    storeAs<C>(dx, dxType, i,
               roundCompute(compute, activationGradOp<C>(kind, g, s)));
  }
}

/// Per output dimension, the element stride of each operand (0 where it
/// broadcasts).
struct BroadcastPlan {
  Shape out;
  int64_t lhsStrides[MP_MAX_RANK];
  int64_t rhsStrides[MP_MAX_RANK];
};

template <typename C>
__global__ void binaryGeneral(int kind, int compute, const void *lhs,
                              int lhsType, const void *rhs, int rhsType,
                              void *out, int outType, int64_t n,
                              BroadcastPlan plan) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t li = 0, ri = 0, rest = i;
    for (int d = plan.out.rank - 1; d >= 0; --d) {
      int64_t c = rest % plan.out.dims[d];
      rest /= plan.out.dims[d];
      li += c * plan.lhsStrides[d];
      ri += c * plan.rhsStrides[d];
    }
    C a = roundCompute(compute, loadAs<C>(lhs, lhsType, li));
    C b = roundCompute(compute, loadAs<C>(rhs, rhsType, ri));
    storeAs<C>(out, outType, i, roundCompute(compute, binaryOp<C>(kind, a, b)));
  }
}

template <typename C>
__global__ void convertGeneral(const void *in, int inType, void *out,
                               int outType, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    storeAs<C>(out, outType, i, loadAs<C>(in, inType, i));
}

bool validKind(int kind, int last) { return kind >= 0 && kind <= last; }

} // namespace

mpStatus mp::cuda::mpConvert(const void *src, mpElementType srcType, void *dst,
                             mpElementType dstType, int64_t count) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (count < 0 || (count && (!src || !dst)) || !mpElementSize(srcType) ||
      !mpElementSize(dstType))
    return MP_ERROR_INVALID_ARGUMENT;
  if (!count)
    return MP_OK;
  if (srcType == dstType) {
    MP_CUDA_TRY(cudaMemcpyAsync(dst, src, count * mpElementSize(srcType),
                                cudaMemcpyDeviceToDevice, c->stream));
    return MP_OK;
  }
  if (!tryMap1(src, srcType, dst, dstType, count, ConvertF{})) {
    if (srcType == MP_F64 || dstType == MP_F64 || srcType == MP_I64 ||
        dstType == MP_I64)
      convertGeneral<double><<<gridFor(count), kThreads, 0, c->stream>>>(
          src, srcType, dst, dstType, count);
    else
      convertGeneral<float><<<gridFor(count), kThreads, 0, c->stream>>>(
          src, srcType, dst, dstType, count);
  }
  return launched("convert kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpUnary(mpUnaryKind kind, const mpTensor *in, mpTensor *out,
                           mpElementType compute) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!validFloat(in) || !validFloat(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !validKind(kind, MP_COS))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(in);
  if (!n)
    return MP_OK;
  if (compute == MP_F64)
    unaryGeneral<double><<<gridFor(n), kThreads, 0, c->stream>>>(
        kind, compute, in->data, in->elementType, out->data, out->elementType,
        n);
  else if (!tryMap1(in->data, in->elementType, out->data, out->elementType, n,
                    UnaryF{kind, compute}))
    unaryGeneral<float><<<gridFor(n), kThreads, 0, c->stream>>>(
        kind, compute, in->data, in->elementType, out->data, out->elementType,
        n);
  return launched("unary kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpActivationGrad(mpActivationGradKind kind,
                                    const mpTensor *dy, const mpTensor *saved,
                                    mpTensor *dx, mpElementType compute) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!validFloat(dy) || !validFloat(saved) || !validFloat(dx) ||
      !sameShape(dy, saved) || !sameShape(dy, dx) || !isFloatType(compute) ||
      !validKind(kind, MP_SIGMOID_GRAD))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(dy);
  if (!n)
    return MP_OK;
  if (compute == MP_F64)
    activationGradGeneral<double><<<gridFor(n), kThreads, 0, c->stream>>>(
        kind, compute, dy->data, dy->elementType, saved->data,
        saved->elementType, dx->data, dx->elementType, n);
  else if (!tryMap2(*dy, *saved, *dx, ActivationGradF{kind, compute}))
    activationGradGeneral<float><<<gridFor(n), kThreads, 0, c->stream>>>(
        kind, compute, dy->data, dy->elementType, saved->data,
        saved->elementType, dx->data, dx->elementType, n);
  return launched("activation gradient kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpBinary(mpBinaryKind kind, const mpTensor *lhs,
                            const mpTensor *rhs, mpTensor *out,
                            mpElementType compute) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!validFloat(lhs) || !validFloat(rhs) || !validFloat(out) ||
      !isFloatType(compute) || !validKind(kind, MP_MINIMUM))
    return MP_ERROR_INVALID_ARGUMENT;
  BroadcastPlan plan;
  plan.out = shapeOf(*out);
  if (!rt::broadcastStrides(*lhs, *rhs, *out, plan.lhsStrides,
                            plan.rhsStrides))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(out);
  if (!n)
    return MP_OK;
  BinaryF op{kind, compute};
  if (compute == MP_F64)
    binaryGeneral<double><<<gridFor(n), kThreads, 0, c->stream>>>(
        kind, compute, lhs->data, lhs->elementType, rhs->data,
        rhs->elementType, out->data, out->elementType, n, plan);
  else if (!tryMap2(*lhs, *rhs, *out, op) &&
           !tryScalarBinary(*lhs, *rhs, *out, op))
    binaryGeneral<float><<<gridFor(n), kThreads, 0, c->stream>>>(
        kind, compute, lhs->data, lhs->elementType, rhs->data,
        rhs->elementType, out->data, out->elementType, n, plan);
  return launched("binary kernel") ? MP_OK : MP_ERROR_BACKEND;
}

//===----------------------------------------------------------------------===//
// Comparison and selection (masks)
//===----------------------------------------------------------------------===//

namespace {

/// Up to three operands broadcast to one output shape.
struct SelectPlan {
  Shape out;
  int64_t strides[3][MP_MAX_RANK];
};

__device__ __forceinline__ void broadcastIndices(const SelectPlan &plan,
                                                 int count, int64_t i,
                                                 int64_t *index) {
  for (int k = 0; k < count; ++k)
    index[k] = 0;
  for (int d = plan.out.rank - 1; d >= 0; --d) {
    int64_t c = i % plan.out.dims[d];
    i /= plan.out.dims[d];
    for (int k = 0; k < count; ++k)
      index[k] += c * plan.strides[k][d];
  }
}

template <typename T> __device__ bool compareOp(int kind, T a, T b) {
  switch (kind) {
  case MP_EQ: return a == b;
  case MP_NE: return a != b;
  case MP_LT: return a < b;
  case MP_LE: return a <= b;
  case MP_GT: return a > b;
  case MP_GE: return a >= b;
  }
  return false;
}

__device__ __forceinline__ int64_t loadInteger(const void *p, int type,
                                               int64_t i) {
  switch (type) {
  case MP_I1: return static_cast<const uint8_t *>(p)[i] != 0;
  case MP_I32: return static_cast<const int32_t *>(p)[i];
  default: return static_cast<const int64_t *>(p)[i];
  }
}

/// Floating-point operands compare as double, which holds every f16, bf16,
/// f32 and f64 value exactly; integers and i1 as int64.
__global__ void compareKernel(int kind, const void *lhs, const void *rhs,
                              int type, bool integer, uint8_t *out, int64_t n,
                              SelectPlan plan) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t at[3];
    broadcastIndices(plan, 2, i, at);
    out[i] = integer ? compareOp(kind, loadInteger(lhs, type, at[0]),
                                 loadInteger(rhs, type, at[1]))
                     : compareOp(kind, loadAs<double>(lhs, type, at[0]),
                                 loadAs<double>(rhs, type, at[1]));
  }
}

/// Elements are copied as raw words of their size.
template <typename Word>
__global__ void selectKernel(const uint8_t *cond, const Word *onTrue,
                             const Word *onFalse, Word *out, int64_t n,
                             SelectPlan plan) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t at[3];
    broadcastIndices(plan, 3, i, at);
    out[i] = cond[at[0]] ? onTrue[at[1]] : onFalse[at[2]];
  }
}

} // namespace

mpStatus mp::cuda::mpCompare(mpCompareKind kind, const mpTensor *lhs,
                             const mpTensor *rhs, mpTensor *out) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  SelectPlan plan;
  if (!rt::validCompare(lhs, rhs, out, kind) ||
      !rt::broadcastStrides(*lhs, *rhs, *out, plan.strides[0],
                            plan.strides[1]))
    return MP_ERROR_INVALID_ARGUMENT;
  plan.out = shapeOf(*out);
  int64_t n = mpNumElements(out);
  if (!n)
    return MP_OK;
  compareKernel<<<gridFor(n), kThreads, 0, c->stream>>>(
      kind, lhs->data, rhs->data, lhs->elementType,
      !rt::isFloatType(lhs->elementType), static_cast<uint8_t *>(out->data),
      n, plan);
  return launched("compare kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpSelect(const mpTensor *cond, const mpTensor *onTrue,
                            const mpTensor *onFalse, mpTensor *out) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  SelectPlan plan;
  if (!rt::validSelect(cond, onTrue, onFalse, out) ||
      !rt::broadcastStridesTo(*cond, *out, plan.strides[0]) ||
      !rt::broadcastStridesTo(*onTrue, *out, plan.strides[1]) ||
      !rt::broadcastStridesTo(*onFalse, *out, plan.strides[2]))
    return MP_ERROR_INVALID_ARGUMENT;
  plan.out = shapeOf(*out);
  int64_t n = mpNumElements(out);
  if (!n)
    return MP_OK;
  auto launch = [&](auto word) {
    using Word = decltype(word);
    selectKernel<Word><<<gridFor(n), kThreads, 0, c->stream>>>(
        static_cast<const uint8_t *>(cond->data),
        static_cast<const Word *>(onTrue->data),
        static_cast<const Word *>(onFalse->data),
        static_cast<Word *>(out->data), n, plan);
  };
  switch (mpElementSize(out->elementType)) {
  case 1: launch(uint8_t()); break;
  case 2: launch(uint16_t()); break;
  case 4: launch(uint32_t()); break;
  default: launch(uint64_t()); break;
  }
  return launched("select kernel") ? MP_OK : MP_ERROR_BACKEND;
}

//===----------------------------------------------------------------------===//
// Dropout
//===----------------------------------------------------------------------===//

namespace {

/// One thread per block of four elements (one Philox block). The seed is
/// read from device memory, so a captured graph sees the advanced seed.
template <typename C>
__global__ void dropoutKernel(const void *in, int inType, const int64_t *seed,
                              void *out, int outType, int64_t n,
                              uint32_t threshold, float rate, float scale,
                              int64_t stream, int compute) {
  auto s = static_cast<uint64_t>(*seed);
  for (int64_t block = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       block * 4 < n; block += int64_t(gridDim.x) * blockDim.x) {
    mpPhilox4x32 words =
        mpDropoutBlock(s, uint64_t(stream), uint64_t(block));
    for (int64_t i = block * 4, e = i + 4 < n ? i + 4 : n; i < e; ++i) {
      bool keep = mpDropoutKeeps(words.v[i % 4], threshold);
      C x = roundCompute(compute, loadAs<C>(in, inType, i));
      C y;
      if constexpr (std::is_same_v<C, double>)
        y = keep ? x / (1.0 - double(rate)) : 0.0;
      else
        y = keep ? x * scale : 0.0f;
      storeAs<C>(out, outType, i, roundCompute(compute, y));
    }
  }
}

__global__ void randomUniformKernel(const int64_t *seed, void *out,
                                    int outType, int64_t n, double low,
                                    double high, int64_t stream) {
  auto s = static_cast<uint64_t>(*seed);
  for (int64_t block = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       block * 4 < n; block += int64_t(gridDim.x) * blockDim.x) {
    mpPhilox4x32 words =
        mpDropoutBlock(s, uint64_t(stream), uint64_t(block));
    for (int64_t i = block * 4, e = i + 4 < n ? i + 4 : n; i < e; ++i)
      storeAs<double>(out, outType, i,
                      low + (high - low) * mpUniformOfWord(words.v[i % 4]));
  }
}

__global__ void nextSeedKernel(const int64_t *seed, int64_t *out) {
  *out = static_cast<int64_t>(static_cast<uint64_t>(*seed) + 1);
}

} // namespace

mpStatus mp::cuda::mpDropout(const mpTensor *in, const mpTensor *seed,
                             mpTensor *out, float rate, int64_t stream,
                             mpElementType compute) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!validFloat(in) || !validFloat(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !validDropout(seed, rate, stream))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(in);
  if (!n)
    return MP_OK;
  MP_LAUNCH_COMPUTE(compute, dropoutKernel, gridFor((n + 3) / 4), in->data,
                    in->elementType, static_cast<const int64_t *>(seed->data),
                    out->data, out->elementType, n, mpDropoutThreshold(rate),
                    rate, 1.0f / (1.0f - rate), stream, compute);
  return launched("dropout kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpRandomUniform(const mpTensor *seed, mpTensor *out,
                                   double low, double high, int64_t stream) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!validFloat(out) || !validDropout(seed, 0, stream) ||
      !std::isfinite(low) || !std::isfinite(high) || !(low <= high))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t n = mpNumElements(out);
  if (!n)
    return MP_OK;
  randomUniformKernel<<<gridFor((n + 3) / 4), kThreads, 0, c->stream>>>(
      static_cast<const int64_t *>(seed->data), out->data, out->elementType,
      n, low, high, stream);
  return launched("random uniform kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpNextSeed(const mpTensor *seed, mpTensor *out) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!isScalar(seed, MP_I64) || !isScalar(out, MP_I64))
    return MP_ERROR_INVALID_ARGUMENT;
  nextSeedKernel<<<1, 1, 0, c->stream>>>(
      static_cast<const int64_t *>(seed->data),
      static_cast<int64_t *>(out->data));
  return launched("next_seed kernel") ? MP_OK : MP_ERROR_BACKEND;
}

//===----------------------------------------------------------------------===//
// Matmul epilogue (the fallback of mpFusedMatmul)
//===----------------------------------------------------------------------===//

template <typename C>
__global__ void epilogueKernel(const C *acc, C alpha, const void *bias,
                               int biasType, const void *residual, void *out,
                               int outType, int64_t count, int64_t n,
                               int activation) {
  int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    C v = alpha == C(1) ? acc[i] : alpha * acc[i];
    if (bias)
      v += loadAs<C>(bias, biasType, i % n);
    if (residual)
      v += loadAs<C>(residual, outType, i);
    switch (activation) {
    case MP_ACTIVATION_RELU: v = v > C(0) || v != v ? v : C(0); break;
    case MP_ACTIVATION_GELU: v = v * normalCdf(v); break;
    case MP_ACTIVATION_GELU_TANH:
      v = v * logisticOf2u(geluTanhInner(v)).s;
      break;
    }
    storeAs<C>(out, outType, i, v);
  }
}

mpStatus mp::cuda::applyEpilogue(const void *acc, mpElementType accType,
                                 double alpha, const mpTensor *bias,
                                 const mpTensor *residual, mpTensor *out,
                                 mpActivation activation) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  int64_t count = mpNumElements(out), n = out->shape[out->rank - 1];
  if (!count)
    return MP_OK;
  const void *b = bias ? bias->data : nullptr;
  int bt = bias ? bias->elementType : MP_F32;
  const void *r = residual ? residual->data : nullptr;
  if (accType == MP_F64)
    epilogueKernel<double><<<gridFor(count), kThreads, 0, c->stream>>>(
        static_cast<const double *>(acc), alpha, b, bt, r, out->data,
        out->elementType, count, n, activation);
  else
    epilogueKernel<float><<<gridFor(count), kThreads, 0, c->stream>>>(
        static_cast<const float *>(acc), float(alpha), b, bt, r, out->data,
        out->elementType, count, n, activation);
  return launched("matmul epilogue kernel") ? MP_OK : MP_ERROR_BACKEND;
}
