//===- Common.cuh - device helpers of the CUDA kernels ------------*- CUDA -*-===//
//
// Loads and stores of any runtime element type, rounding to a compute type,
// packed (vectorised) access, block reductions and launch shapes.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_LIB_CUDA_COMMON_CUH
#define MP_RUNTIME_LIB_CUDA_COMMON_CUH

#include "Context.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace mp::cuda {

constexpr int kThreads = 256;

/// Launches `kernel` on the backend's stream with `C` = double for an f64
/// compute type, else float.
#define MP_LAUNCH_COMPUTE(compute, kernel, grid, ...)                          \
  do {                                                                         \
    if ((compute) == MP_F64)                                                   \
      kernel<double><<<(grid), kThreads, 0, context()->stream>>>(__VA_ARGS__); \
    else                                                                       \
      kernel<float><<<(grid), kThreads, 0, context()->stream>>>(__VA_ARGS__);  \
  } while (false)

/// Blocks for a grid-stride loop over `n` items, `perThread` each.
inline unsigned gridFor(int64_t n, int perThread = 1) {
  int64_t blocks = (n + int64_t(kThreads) * perThread - 1) /
                   (int64_t(kThreads) * perThread);
  return unsigned(std::clamp<int64_t>(blocks, 1, 1 << 20));
}

/// Dimensions and strides of an index space (rank <= MP_MAX_RANK), passed to
/// kernels by value.
struct Shape {
  int32_t rank = 0;
  int64_t dims[MP_MAX_RANK] = {};
};

inline Shape shapeOf(const mpTensor &t) {
  Shape s;
  s.rank = t.rank;
  for (int32_t d = 0; d < t.rank; ++d)
    s.dims[d] = t.shape[d];
  return s;
}

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

__device__ __forceinline__ float toFloat(float x) { return x; }
__device__ __forceinline__ float toFloat(__half x) { return __half2float(x); }
__device__ __forceinline__ float toFloat(__nv_bfloat16 x) {
  return __bfloat162float(x);
}

template <typename T> __device__ __forceinline__ T fromFloat(float x);
template <> __device__ __forceinline__ float fromFloat<float>(float x) {
  return x;
}
template <> __device__ __forceinline__ __half fromFloat<__half>(float x) {
  return __float2half_rn(x);
}
template <>
__device__ __forceinline__ __nv_bfloat16 fromFloat<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

/// Element `i` of a buffer of runtime type `type`, as C (float or double).
template <typename C>
__device__ __forceinline__ C loadAs(const void *p, int type, int64_t i) {
  switch (type) {
  case MP_F32: return C(static_cast<const float *>(p)[i]);
  case MP_F16: return C(__half2float(static_cast<const __half *>(p)[i]));
  case MP_BF16:
    return C(__bfloat162float(static_cast<const __nv_bfloat16 *>(p)[i]));
  case MP_F64: return C(static_cast<const double *>(p)[i]);
  case MP_I32: return C(static_cast<const int32_t *>(p)[i]);
  case MP_I64: return C(static_cast<const int64_t *>(p)[i]);
  case MP_I1: return C(static_cast<const uint8_t *>(p)[i] != 0);
  }
  return C(0);
}

/// Stores `v` rounded once (to nearest even) to the runtime type `type`.
template <typename C>
__device__ __forceinline__ void storeAs(void *p, int type, int64_t i, C v) {
  switch (type) {
  case MP_F32: static_cast<float *>(p)[i] = float(v); return;
  case MP_F16:
    if constexpr (sizeof(C) == 8)
      static_cast<__half *>(p)[i] = __double2half(v);
    else
      static_cast<__half *>(p)[i] = __float2half_rn(v);
    return;
  case MP_BF16:
    if constexpr (sizeof(C) == 8)
      static_cast<__nv_bfloat16 *>(p)[i] = __double2bfloat16(v);
    else
      static_cast<__nv_bfloat16 *>(p)[i] = __float2bfloat16_rn(v);
    return;
  case MP_F64: static_cast<double *>(p)[i] = double(v); return;
  case MP_I32: static_cast<int32_t *>(p)[i] = int32_t(v); return;
  case MP_I64: static_cast<int64_t *>(p)[i] = int64_t(v); return;
  case MP_I1: static_cast<uint8_t *>(p)[i] = v != C(0); return;
  }
}

/// `x` rounded to the compute type when that is f16 or bf16 (the CPU
/// backend's Arith::r); unchanged for f32 and f64.
template <typename C>
__device__ __forceinline__ C roundCompute(int compute, C x) {
  if (compute == MP_F16)
    return C(__half2float(__float2half_rn(float(x))));
  if (compute == MP_BF16)
    return C(__bfloat162float(__float2bfloat16_rn(float(x))));
  return x;
}

/// Four elements loaded or stored with one 8- or 16-byte access.
template <typename T> struct alignas(4 * sizeof(T)) Pack4 {
  T v[4];
};

inline bool isPackable(const void *p, size_t elementSize) {
  return reinterpret_cast<uintptr_t>(p) % (4 * elementSize) == 0;
}

//===----------------------------------------------------------------------===//
// Block reductions (blockDim.x == kThreads)
//===----------------------------------------------------------------------===//

struct SumOp {
  template <typename C> __device__ C operator()(C a, C b) const { return a + b; }
};
struct MaxOp {
  template <typename C> __device__ C operator()(C a, C b) const {
    return (a > b || isnan(a)) ? a : b;
  }
};

/// Reduces `v` over the warp with an xor butterfly; every lane gets the
/// same result (each step combines the same two values on both lanes).
template <typename C, typename Op> __device__ C warpReduce(C v, Op op) {
  for (int offset = 16; offset > 0; offset /= 2)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

/// Reduces `v` over the block; every thread gets the result. `shared`
/// holds kThreads / 32 values.
template <typename C, typename Op>
__device__ C blockReduce(C v, Op op, C *shared) {
  v = warpReduce(v, op);
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads(); // `shared` may still be read by a previous reduction
  if (lane == 0)
    shared[warp] = v;
  __syncthreads();
  v = shared[0];
  for (int w = 1; w < kThreads / 32; ++w)
    v = op(v, shared[w]);
  return v;
}

} // namespace mp::cuda

#endif // MP_RUNTIME_LIB_CUDA_COMMON_CUH
