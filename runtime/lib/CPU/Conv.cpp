//===- Conv.cpp - convolution, pooling and batch norm on the CPU ----------===//
//
// Direct loops, written from the definitions: the reference the tests hold
// oneDNN and the CUDA backend to.
//
// * mpConv2d and its gradients run 1x1 NHWC convolutions as oneDNN
//   matmuls, NHWC convolutions with few output positions as im2col GEMMs
//   (ConvGemm.cpp), and offer the others to oneDNN (Dnnl.cpp), which takes
//   f32 and bf16 storage with f32 accumulation where the CPU supports it.
//   f16 (and unsupported bf16) storage computing in f32 goes to the f32
//   paths on exactly widened copies, the result rounded once.
//   Everything else (f64, f16 or bf16 compute) runs here.
// * Pooling with any compute type but f64, and batch norm with f32 compute,
//   have fast paths (float buffers, vector conversions, threads over planes
//   or channels) with the loops' bits.
//
// Arithmetic goes through Arith<T>, so a compute type of f16 or bf16 rounds
// every step as the GPU kernels of that compute type would.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "../Checks.h"
#include "Compute.h"
#include "Dnnl.h"
#include "Lanes.h"
#include "Parallel.h"
#include "Tiles.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

using namespace mp::rt;

namespace {

/// Calls `body(input index, filter index)` for every tap of output channel
/// `o`'s window at (y0, x0) in image `n` that lies inside the input, in
/// (input channel, row, column) order.
template <typename Body>
void forEachTap(const ConvShape &s, const mpWindow *w, int64_t n, int64_t o,
                int64_t y0, int64_t x0, Body body) {
  int64_t cg = s.in.c / s.groups, first = (o / (s.out.c / s.groups)) * cg;
  for (int64_t ci = 0; ci < cg; ++ci)
    for (int64_t ky = 0; ky < s.kh; ++ky) {
      int64_t y = y0 + ky * w->dilations[0];
      if (y < 0 || y >= s.in.h)
        continue;
      for (int64_t kx = 0; kx < s.kw; ++kx) {
        int64_t x = x0 + kx * w->dilations[1];
        if (x >= 0 && x < s.in.w)
          body(s.in.at(n, first + ci, y, x), s.filterAt(o, ci, ky, kx));
      }
    }
}

/// Calls `body(output index, input index, filter index)` for every tap of
/// every output element, output elements in order.
template <typename Body>
void forEachOutputTap(const ConvShape &s, const mpWindow *w, Body body) {
  for (int64_t n = 0; n < s.out.n; ++n)
    for (int64_t o = 0; o < s.out.c; ++o)
      forEachPosition(s.out, w, [&](int64_t oy, int64_t ox, int64_t y0,
                                    int64_t x0) {
        int64_t at = s.out.at(n, o, oy, ox);
        forEachTap(s, w, n, o, y0, x0,
                   [&](int64_t in, int64_t f) { body(at, in, f); });
      });
}

bool isNarrow(const mpTensor *t) {
  return t->elementType == MP_F16 || t->elementType == MP_BF16;
}

/// An f32 buffer for `t`: `t`'s own data when it is f32, else a scratch
/// buffer (filled with `t` widened exactly when `read`); null when `t` is
/// neither or the conversion failed.
float *asF32(const mpTensor *t, std::vector<float> &scratch, bool read) {
  if (t->elementType == MP_F32)
    return static_cast<float *>(t->data);
  if (!isNarrow(t))
    return nullptr;
  scratch.resize(size_t(mpNumElements(t)));
  if (read && mpConvert(t->data, t->elementType, scratch.data(), MP_F32,
                        int64_t(scratch.size())) != MP_OK)
    return nullptr;
  return scratch.data();
}

/// Writes `scratch` (f32) to `t` when `t` is narrow, rounding once as the
/// loops' a.out would.
bool narrowInto(const std::vector<float> &scratch, const mpTensor *t) {
  return !isNarrow(t) ||
         mpConvert(scratch.data(), MP_F32, t->data, t->elementType,
                   int64_t(scratch.size())) == MP_OK;
}

/// Runs a pass of a 1x1, stride-1, unpadded, ungrouped NHWC convolution as
/// the matrix product it is, on the caller's buffers: with M = N*H*W, the
/// activations are [M, C] and [M, O] matrices and the filter an [O, C] one.
/// Forward: Y = X W^T; data: dX = dY W; weights: dW = dY^T X. oneDNN's
/// matmul takes the plain filter, where its convolutions want it reordered
/// into their blocked layout on every call (the bottleneck convolutions of
/// ResNet-50 are 1x1).
bool pointwiseMatmul(DnnlConv kind, const mpTensor *src,
                     const mpTensor *weights, const mpTensor *dst,
                     const mpWindow *w, mpElementType compute) {
  if (compute != MP_F32 || !w->channelsLast || w->groups != 1 ||
      weights->shape[2] != 1 || weights->shape[3] != 1 ||
      w->strides[0] != 1 || w->strides[1] != 1)
    return false;
  for (int64_t p : w->padding)
    if (p != 0)
      return false;
  int64_t m = src->shape[0] * src->shape[1] * src->shape[2];
  int64_t c = weights->shape[1], o = weights->shape[0];
  switch (kind) {
  case DnnlConv::Forward:
    return dnnlMatmul(src, weights, const_cast<mpTensor *>(dst), false, true,
                      m, o, c, 1, true, true);
  case DnnlConv::BackwardData:
    return dnnlMatmul(dst, weights, const_cast<mpTensor *>(src), false, false,
                      m, c, o, 1, true, true);
  case DnnlConv::BackwardWeights:
    return dnnlMatmul(dst, src, const_cast<mpTensor *>(weights), true, false,
                      o, c, m, 1, true, true);
  }
  return false;
}

/// Runs a convolution pass in a library: as im2col GEMMs where the image is
/// small (ConvGemm.cpp), else oneDNN's convolution.
bool libraryConv(DnnlConv kind, const mpTensor *src, const mpTensor *weights,
                 const mpTensor *dst, const mpWindow *w, mpElementType compute) {
  return gemmConv2d(kind, src, weights, dst, w, compute) ||
         dnnlConv2d(kind, src, weights, dst, w, compute);
}

/// Runs a convolution pass on f16 or bf16 storage (computing in f32) as the
/// f32 pass would run (a pointwise matmul, an im2col GEMM or oneDNN's
/// convolution) on the exactly widened operands, the result rounded once to
/// its storage type: the same arithmetic as the loops below, at library
/// speed. The pass writes src (BackwardData), weights (BackwardWeights) or
/// dst (Forward).
bool widenedDnnl(DnnlConv kind, const mpTensor *src, const mpTensor *weights,
                 const mpTensor *dst, const mpWindow *w, mpElementType compute) {
  if (compute != MP_F32 || !libraryKernelsEnabled())
    return false;
  if (!isNarrow(src) && !isNarrow(weights) && !isNarrow(dst))
    return false;
  for (const mpTensor *t : {src, weights, dst})
    if (t->elementType == MP_F64)
      return false;
  // The operand the pass writes is not read: it needs no widening. The
  // scratch buffers are kept between calls, as each step converts the same
  // shapes: fresh buffers of megabytes cost page faults and zeroing.
  int writes = kind == DnnlConv::Forward        ? 2
               : kind == DnnlConv::BackwardData ? 0
                                                : 1;
  thread_local std::vector<float> scratch[3];
  const mpTensor *operands[3] = {src, weights, dst};
  mpTensor views[3];
  for (int i = 0; i < 3; ++i) {
    views[i] = *operands[i];
    views[i].elementType = MP_F32;
    views[i].data = asF32(operands[i], scratch[i], i != writes);
    if (!views[i].data)
      return false;
  }
  return (pointwiseMatmul(kind, &views[0], &views[1], &views[2], w,
                          compute) ||
          libraryConv(kind, &views[0], &views[1], &views[2], w, compute)) &&
         narrowInto(scratch[writes], operands[writes]);
}

bool depthwiseFilterGrad(const mpTensor *dy, const mpTensor *input,
                         mpTensor *dfilter, const mpWindow *w,
                         mpElementType compute);

} // namespace

extern "C" mpStatus mpConv2d(const mpTensor *input, const mpTensor *filter,
                             mpTensor *out, const mpWindow *w,
                             mpElementType compute) {
  ConvShape s;
  if (!s.init(input, filter, out, w) || !isFloatType(compute) ||
      input->elementType != filter->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  if (pointwiseMatmul(DnnlConv::Forward, input, filter, out, w, compute) ||
      libraryConv(DnnlConv::Forward, input, filter, out, w, compute) ||
      widenedDnnl(DnnlConv::Forward, input, filter, out, w, compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    std::vector<T> acc(size_t(mpNumElements(out)), T(0));
    forEachOutputTap(s, w, [&](int64_t at, int64_t in, int64_t f) {
      acc[size_t(at)] =
          a.add(acc[size_t(at)], a.mul(a.in(input, in), a.in(filter, f)));
    });
    for (size_t i = 0; i < acc.size(); ++i)
      a.out(out, int64_t(i), acc[i]);
  });
  return MP_OK;
}

extern "C" mpStatus mpConv2dGradInput(const mpTensor *dy,
                                      const mpTensor *filter, mpTensor *dx,
                                      const mpWindow *w,
                                      mpElementType compute) {
  ConvShape s;
  if (!s.init(dx, filter, dy, w) || !isFloatType(compute) ||
      dy->elementType != filter->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  if (pointwiseMatmul(DnnlConv::BackwardData, dx, filter, dy, w, compute) ||
      libraryConv(DnnlConv::BackwardData, dx, filter, dy, w, compute) ||
      widenedDnnl(DnnlConv::BackwardData, dx, filter, dy, w, compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    std::vector<T> acc(size_t(mpNumElements(dx)), T(0));
    forEachOutputTap(s, w, [&](int64_t at, int64_t in, int64_t f) {
      acc[size_t(in)] =
          a.add(acc[size_t(in)], a.mul(a.in(dy, at), a.in(filter, f)));
    });
    for (size_t i = 0; i < acc.size(); ++i)
      a.out(dx, int64_t(i), acc[i]);
  });
  return MP_OK;
}

extern "C" mpStatus mpConv2dGradFilter(const mpTensor *dy,
                                       const mpTensor *input,
                                       mpTensor *dfilter, const mpWindow *w,
                                       mpElementType compute) {
  ConvShape s;
  if (!s.init(input, dfilter, dy, w) || !isFloatType(compute) ||
      dy->elementType != input->elementType)
    return MP_ERROR_INVALID_ARGUMENT;
  if (depthwiseFilterGrad(dy, input, dfilter, w, compute) ||
      pointwiseMatmul(DnnlConv::BackwardWeights, input, dfilter, dy, w,
                      compute) ||
      libraryConv(DnnlConv::BackwardWeights, input, dfilter, dy, w,
                  compute) ||
      widenedDnnl(DnnlConv::BackwardWeights, input, dfilter, dy, w, compute))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    // Each filter element sums over images and positions in order.
    std::vector<T> acc(size_t(mpNumElements(dfilter)), T(0));
    forEachOutputTap(s, w, [&](int64_t at, int64_t in, int64_t f) {
      acc[size_t(f)] =
          a.add(acc[size_t(f)], a.mul(a.in(dy, at), a.in(input, in)));
    });
    for (size_t i = 0; i < acc.size(); ++i)
      a.out(dfilter, int64_t(i), acc[i]);
  });
  return MP_OK;
}

//===----------------------------------------------------------------------===//
// Pooling
//===----------------------------------------------------------------------===//

namespace {

bool poolShape(const mpTensor *input, const mpTensor *out, const mpWindow *w,
               Act &in, Act &o) {
  if (!w || !in.init(input, w->channelsLast) ||
      !o.init(out, w->channelsLast) || in.c != o.c ||
      w->dilations[0] != 1 || w->dilations[1] != 1 ||
      w->padding[0] >= w->window[0] || w->padding[2] >= w->window[0] ||
      w->padding[1] >= w->window[1] || w->padding[3] >= w->window[1])
    return false;
  return windowShape(in, o, w->window[0], w->window[1], w);
}

/// The in-bounds part of the window at (y0, x0): rows [ya, yb), columns
/// [xa, xb); and the divisor of an average.
struct Span {
  int64_t ya, yb, xa, xb, divisor;
};

Span span(const Act &in, const mpWindow *w, mpPoolKind kind, int64_t y0,
          int64_t x0) {
  Span s;
  s.ya = std::max<int64_t>(y0, 0);
  s.yb = std::min(y0 + w->window[0], in.h);
  s.xa = std::max<int64_t>(x0, 0);
  s.xb = std::min(x0 + w->window[1], in.w);
  if (kind == MP_POOL_AVG_INCLUDE_PAD) {
    // The window clipped to the padded extent, as PyTorch counts it.
    int64_t yEnd = std::min(y0 + w->window[0], in.h + w->padding[2]);
    int64_t xEnd = std::min(x0 + w->window[1], in.w + w->padding[3]);
    s.divisor = (yEnd - y0) * (xEnd - x0);
  } else {
    s.divisor = (s.yb - s.ya) * (s.xb - s.xa);
  }
  return s;
}

} // namespace

//===----------------------------------------------------------------------===//
// Loops across channels (NHWC pooling, batch norm, depthwise filter
// gradients) on Lanes.h's vectors
//===----------------------------------------------------------------------===//

namespace {

/// The channels a thread's share of a channel loop is a multiple of.
constexpr int64_t kVectorLanes = 16;

// Vectors are arguments and results of functions that are always inlined,
// so GCC's note that their ABI differs between instruction sets does not
// apply (through the depthwise loops, where the note is turned back on).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

} // namespace

namespace {

/// Arith<float> with f32 compute, known at compile time: the NHWC pooling
/// loops below vectorise across channels with it.
struct F32Arith {
  float r(float v) const { return v; }
  float add(float x, float y) const { return x + y; }
  float div(float x, float y) const { return x / y; }
};

/// Calls `body(arith)` with F32Arith when `a` computes in f32 or when
/// `roundsNothing` (the maximum of values already in the compute type: a
/// comparison does not round, and AMP gives bf16 max pooling a bf16
/// compute type), else `a`.
template <typename Body>
void withPoolArith(Arith<float> a, bool roundsNothing, Body body) {
  if (a.compute == MP_F32 || roundsNothing)
    body(F32Arith{});
  else
    body(a);
}

/// An element of f32 storage, or of bf16 storage widened exactly (inline,
/// where a conversion call per window tap would cost more than the tap).
inline float widenElement(float v) { return v; }
inline float widenElement(uint16_t bf16) {
  uint32_t bits = uint32_t(bf16) << 16;
  float v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}

/// One output position of NHWC pooling on f16 storage, in f32 lanes across
/// the channels from k: over the window's `count` positions (`taps`, in the
/// loops' order), acc = x where x > acc or x is NaN (max, from -inf), or
/// acc += x (average, from 0). poolNhwc's operations with F32Arith, so the
/// same bits, with the accumulators in registers.
template <int N, int64_t W>
MP_INLINE void poolWindowChunk(const F16 *x, const int64_t *taps,
                               int64_t count, int64_t k, int64_t width,
                               bool max, float *acc) {
  typedef typename VecOf<N>::U U;
  Vec<N> a = Vec<N>{} + (max ? -std::numeric_limits<float>::infinity() : 0.0f);
  for (int64_t t = 0; t < count; ++t) {
    Vec<N> v = loadVec<N, W>(x + taps[t] + k, width);
    a = max ? select<N>((U)(v > a) | (U)(v != v), v, a) : a + v;
  }
  storeVec<N, W>(a, acc + k, width);
}

/// poolWindowChunk across `c` channels, compiled for AVX-512, AVX2 with
/// F16C and the baseline with vectors of their register width.
#define MP_POOL_WINDOW_LOOPS(SUFFIX, TARGET, N)                                \
  TARGET void poolWindowF16##SUFFIX(const uint16_t *x, const int64_t *taps,    \
                                    int64_t count, int64_t c, bool max,        \
                                    float *acc) {                              \
    const F16 *h = reinterpret_cast<const F16 *>(x);                           \
    int64_t k = 0;                                                             \
    for (; k + N <= c; k += N)                                                 \
      poolWindowChunk<N, N>(h, taps, count, k, c - k, max, acc);               \
    if (k < c)                                                                 \
      poolWindowChunk<N, 0>(h, taps, count, k, c - k, max, acc);               \
  }
#if MP_X86
MP_POOL_WINDOW_LOOPS(Avx512, MP_TARGET_AVX512, 16)
MP_POOL_WINDOW_LOOPS(Avx2, MP_TARGET_AVX2_F16C, 8)
#endif
MP_POOL_WINDOW_LOOPS(Base, , 4)
#undef MP_POOL_WINDOW_LOOPS

/// The variant of poolWindowF16 this CPU runs.
using PoolWindow = void (*)(const uint16_t *, const int64_t *, int64_t,
                            int64_t, bool, float *);
PoolWindow poolWindowF16ForCpu() {
#if MP_X86
  return forIsa<PoolWindow>(poolWindowF16Avx512,
                            f16LanesSupported() ? poolWindowF16Avx2
                                                : poolWindowF16Base,
                            poolWindowF16Base);
#else
  return poolWindowF16Base;
#endif
}

/// fastPool on NHWC tensors: the channels of a position are contiguous, so
/// each window tap is a run of C values; every channel takes the planar
/// loop's operations in its order. Threads over (image, output row). The
/// input is read where it is: f32 as it is (Elem float), bf16 widened as
/// it is read (Elem uint16_t), f16 (WidenRows) widened in vector lanes a
/// tap at a time by poolTapF16 where the arithmetic is f32, else into a
/// row buffer; each output position is rounded once to its storage type as
/// it is written. A widened copy of the whole input and output, written and
/// read back, made bf16 pooling 1.4-1.6x as slow as f32; f16 through the
/// row buffer took 1.6-2.6x as long as f32.
template <typename Elem, bool WidenRows, typename A>
void poolNhwc(A a, mpPoolKind kind, const Act &in, const Act &o,
              const mpWindow *w, bool exact, const mpTensor *input,
              const mpTensor *out) {
  int64_t c = o.c;
  const Elem *x = static_cast<const Elem *>(input->data);
  float *y = out->elementType == MP_F32 ? static_cast<float *>(out->data)
                                        : nullptr;
  constexpr bool f16Lanes = WidenRows && std::is_same_v<A, F32Arith>;
  PoolWindow windowF16 = f16Lanes ? poolWindowF16ForCpu() : nullptr;
  parallelFor(o.n * o.h, std::max<int64_t>(1, 4096 / (o.w * c + 1)),
              [&](int64_t begin, int64_t end) {
    std::vector<float> acc(static_cast<size_t>(c));
    std::vector<float> tap(WidenRows && !f16Lanes ? acc.size() : 0);
    std::vector<int64_t> taps;
    for (int64_t item = begin; item < end; ++item) {
      int64_t n = item / o.h, oy = item % o.h;
      int64_t y0 = oy * w->strides[0] - w->padding[0];
      for (int64_t ox = 0; ox < o.w; ++ox) {
        Span s = span(in, w, kind, y0, ox * w->strides[1] - w->padding[1]);
        if constexpr (f16Lanes) {
          taps.clear();
          for (int64_t yy = s.ya; yy < s.yb; ++yy)
            for (int64_t xx = s.xa; xx < s.xb; ++xx)
              taps.push_back(in.at(n, 0, yy, xx));
          windowF16(static_cast<const uint16_t *>(input->data), taps.data(),
                    int64_t(taps.size()), c, kind == MP_POOL_MAX, acc.data());
        } else {
          float init = kind == MP_POOL_MAX
                           ? -std::numeric_limits<float>::infinity()
                           : 0.0f;
          std::fill(acc.begin(), acc.end(), init);
          for (int64_t yy = s.ya; yy < s.yb; ++yy)
            for (int64_t xx = s.xa; xx < s.xb; ++xx) {
              int64_t from = in.at(n, 0, yy, xx);
              const Elem *row = x + from;
              if constexpr (WidenRows) {
                loadF32(input->data, input->elementType, from, c, tap.data());
                row = tap.data();
              }
              if (kind == MP_POOL_MAX) {
                for (int64_t k = 0; k < c; ++k) {
                  float v = widenElement(row[k]);
                  v = exact ? v : a.r(v);
                  float &m = acc[size_t(k)];
                  m = v > m || v != v ? v : m;
                }
              } else {
                for (int64_t k = 0; k < c; ++k) {
                  float v = widenElement(row[k]);
                  acc[size_t(k)] = a.add(acc[size_t(k)], exact ? v : a.r(v));
                }
              }
            }
        }
        int64_t at = o.at(n, 0, oy, ox);
        float *dst = y ? y + at : acc.data();
        for (int64_t k = 0; k < c; ++k)
          dst[k] = kind == MP_POOL_MAX ? acc[size_t(k)]
                   : s.divisor > 0     ? a.div(acc[size_t(k)], float(s.divisor))
                                       : 0.0f;
        if (!y)
          storeF32(dst, c, out->data, out->elementType, at);
      }
    }
  });
}

/// The first maximum of each channel's window: `best[k]` is the index into
/// `slots` (the window's NHWC positions, in the loops' order) of the first
/// element of channel k that no later element exceeds; a NaN first stays.
/// N channels at a time in vector lanes (`W`: N, or 0 for the last
/// `width` < N).
template <int N, int64_t W>
MP_INLINE void maxSlotsChunk(const float *x, const std::vector<int64_t> &slots,
                             int64_t k, int64_t width, int32_t *best) {
  typedef typename VecOf<N>::U U;
  Vec<N> top = loadVec<N, W>(x + slots[0] + k, width);
  U at = {};
  for (size_t p = 1; p < slots.size(); ++p) {
    Vec<N> v = loadVec<N, W>(x + slots[p] + k, width);
    U greater = (U)(v > top);
    top = select<N>(greater, v, top);
    at = (at & ~greater) | (U(uint32_t(p) + U{}) & greater);
  }
  uint32_t lanes[N];
  std::memcpy(lanes, &at, sizeof lanes);
  for (int64_t l = 0; l < (W ? W : width); ++l)
    best[k + l] = int32_t(lanes[l]);
}

/// maxSlotsChunk across `c` channels, compiled for AVX-512, AVX2 and the
/// baseline with vectors of their register width.
#define MP_MAX_SLOTS_LOOPS(SUFFIX, TARGET, N)                                  \
  TARGET void maxSlots##SUFFIX(const float *x,                                 \
                               const std::vector<int64_t> &slots, int64_t c,   \
                               int32_t *best) {                                \
    int64_t k = 0;                                                             \
    for (; k + N <= c; k += N)                                                 \
      maxSlotsChunk<N, N>(x, slots, k, c - k, best);                           \
    if (k < c)                                                                 \
      maxSlotsChunk<N, 0>(x, slots, k, c - k, best);                           \
  }
#if MP_X86
MP_MAX_SLOTS_LOOPS(Avx512, MP_TARGET_AVX512, 16)
MP_MAX_SLOTS_LOOPS(Avx2, MP_TARGET_AVX2, 8)
#endif
MP_MAX_SLOTS_LOOPS(Base, , 4)
#undef MP_MAX_SLOTS_LOOPS

/// The variant of maxSlots this CPU runs.
using MaxSlots = void (*)(const float *, const std::vector<int64_t> &,
                          int64_t, int32_t *);
MaxSlots maxSlotsForCpu() {
#if MP_X86
  return forIsa<MaxSlots>(maxSlotsAvx512, maxSlotsAvx2, maxSlotsBase);
#else
  return maxSlotsBase;
#endif
}

/// An image of `t` (NHWC, `size` elements from image `n`) as f32: `t`'s own
/// data when it is f32, else `scratch` filled with it widened exactly.
const float *imageF32(const mpTensor *t, int64_t n, int64_t size,
                      std::vector<float> &scratch) {
  if (t->elementType == MP_F32)
    return static_cast<const float *>(t->data) + n * size;
  scratch.resize(size_t(size));
  loadF32(t->data, t->elementType, n * size, size, scratch.data());
  return scratch.data();
}

/// fastPoolGrad on NHWC tensors, likewise. Windows of neighbouring output
/// rows overlap, so threads split images: each channel's adds into dx
/// happen in the planar loop's order of output positions. f16 and bf16
/// storage is widened an image at a time into per-thread buffers that stay
/// in cache, and dx rounded once per image as it is written; widening the
/// whole of dy, x and dx first made the bf16 gradient 1.5x as slow as f32.
template <typename A>
void poolGradNhwc(A a, mpPoolKind kind, const Act &in, const Act &o,
                  const mpWindow *w, bool exactD, bool exactX,
                  const mpTensor *dy, const mpTensor *input,
                  const mpTensor *dx) {
  int64_t c = o.c, inSize = in.h * in.w * c, outSize = o.h * o.w * c;
  MaxSlots maxSlots = maxSlotsForCpu();
  parallelFor(o.n, 1, [&](int64_t begin, int64_t end) {
    // Declared here, so each thread has its own, kept between calls.
    thread_local std::vector<float> ds, xs, gs;
    std::vector<float> top(static_cast<size_t>(c)), dv(top.size());
    std::vector<int32_t> best(top.size());
    std::vector<int64_t> slots;
    for (int64_t n = begin; n < end; ++n) {
      const float *d = imageF32(dy, n, outSize, ds);
      const float *x =
          kind == MP_POOL_MAX ? imageF32(input, n, inSize, xs) : nullptr;
      float *g = static_cast<float *>(dx->data) + n * inSize;
      if (dx->elementType != MP_F32) {
        gs.resize(size_t(inSize));
        g = gs.data();
      }
      std::fill(g, g + inSize, 0.0f);
      forEachPosition(o, w, [&](int64_t oy, int64_t ox, int64_t y0,
                                int64_t x0) {
        Span s = span(in, w, kind, y0, x0);
        const float *dyRow = d + o.at(0, 0, oy, ox);
        for (int64_t k = 0; k < c; ++k)
          dv[size_t(k)] = exactD ? dyRow[k] : a.r(dyRow[k]);
        if (kind == MP_POOL_MAX) {
          // The window's first element, then each later one that is
          // greater: the loops' first maximum (a NaN first stays), in
          // branch-free lanes across the channels.
          slots.clear();
          for (int64_t yy = s.ya; yy < s.yb; ++yy)
            for (int64_t xx = s.xa; xx < s.xb; ++xx)
              slots.push_back(in.at(0, 0, yy, xx));
          if (slots.empty())
            return;
          float *tp = top.data();
          int32_t *bp = best.data();
          if (exactX) {
            maxSlots(x, slots, c, bp);
          } else {
            // Values rounded to the compute type first, as the loops do.
            for (int64_t k = 0; k < c; ++k) {
              tp[k] = a.r(x[slots[0] + k]);
              bp[k] = 0;
            }
            for (size_t p = 1; p < slots.size(); ++p)
              for (int64_t k = 0; k < c; ++k) {
                float v = a.r(x[slots[p] + k]);
                bool greater = v > tp[k];
                tp[k] = greater ? v : tp[k];
                bp[k] = greater ? int32_t(p) : bp[k];
              }
          }
          for (int64_t k = 0; k < c; ++k) {
            float &slot = g[slots[size_t(bp[k])] + k];
            slot = a.add(slot, dv[size_t(k)]);
          }
          return;
        }
        if (s.divisor <= 0)
          return;
        for (int64_t k = 0; k < c; ++k)
          dv[size_t(k)] = a.div(dv[size_t(k)], float(s.divisor));
        for (int64_t yy = s.ya; yy < s.yb; ++yy)
          for (int64_t xx = s.xa; xx < s.xb; ++xx) {
            float *slot = g + in.at(0, 0, yy, xx);
            for (int64_t k = 0; k < c; ++k)
              slot[k] = a.add(slot[k], dv[size_t(k)]);
          }
      });
      if (dx->elementType != MP_F32)
        storeF32(g, inSize, dx->data, dx->elementType, n * inSize);
    }
  });
}

/// Pooling on f32, f16 or bf16 storage computing in f32, f16 or bf16: the
/// loops below on float buffers (narrow NCHW storage widened once with
/// vector conversions, the result rounded once on the way out; NHWC reads
/// and writes the storage as it goes, poolNhwc), threads over (image,
/// channel) planes. Each element takes the same operations, rounded
/// by `a` as the loops round them, in the same order, so the bits are the
/// loops'; before it, f16 and bf16 pooling converted every element it read
/// on one thread and ran 3-8x slower than f32 (docs/Layout.md). NHWC runs
/// across channels (poolNhwc), 10x faster than its strided planes.
bool fastPool(Arith<float> a, mpPoolKind kind, const Act &in, const Act &o,
              const mpWindow *w, const mpTensor *input, const mpTensor *out) {
  // Values stored in the compute type need no rounding on the way in.
  bool exact = input->elementType == a.compute || a.compute == MP_F32;
  if (in.channelsLast) {
    if ((!isNarrow(input) && input->elementType != MP_F32) ||
        (!isNarrow(out) && out->elementType != MP_F32))
      return false;
    withPoolArith(a, kind == MP_POOL_MAX && exact, [&](auto arith) {
      if (input->elementType == MP_BF16)
        poolNhwc<uint16_t, false>(arith, kind, in, o, w, exact, input, out);
      else if (input->elementType == MP_F16)
        poolNhwc<float, true>(arith, kind, in, o, w, exact, input, out);
      else
        poolNhwc<float, false>(arith, kind, in, o, w, exact, input, out);
    });
    return true;
  }
  // Kept between calls, as each step pools the same shapes: fresh buffers
  // cost page faults and zeroing that took longer than the pooling.
  thread_local std::vector<float> is, os;
  const float *x = asF32(input, is, true);
  float *y = asF32(out, os, false);
  if (!x || !y)
    return false;
  parallelFor(o.n * o.c, std::max<int64_t>(1, 4096 / (o.h * o.w + 1)),
              [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      int64_t n = plane / o.c, c = plane % o.c;
      forEachPosition(o, w, [&](int64_t oy, int64_t ox, int64_t y0,
                                int64_t x0) {
        Span s = span(in, w, kind, y0, x0);
        float acc = kind == MP_POOL_MAX
                        ? -std::numeric_limits<float>::infinity()
                        : 0.0f;
        for (int64_t yy = s.ya; yy < s.yb; ++yy)
          for (int64_t xx = s.xa; xx < s.xb; ++xx) {
            float v = x[in.at(n, c, yy, xx)];
            v = exact ? v : a.r(v);
            if (kind != MP_POOL_MAX)
              acc = a.add(acc, v);
            else if (v > acc || std::isnan(v))
              acc = v;
          }
        if (kind != MP_POOL_MAX)
          acc = s.divisor > 0 ? a.div(acc, float(s.divisor)) : 0.0f;
        y[o.at(n, c, oy, ox)] = acc;
      });
    }
  });
  return narrowInto(os, out);
}

/// The gradient of fastPool, likewise.
bool fastPoolGrad(Arith<float> a, mpPoolKind kind, const Act &in,
                  const Act &o, const mpWindow *w, const mpTensor *dy,
                  const mpTensor *input, const mpTensor *dx) {
  bool exactD = dy->elementType == a.compute || a.compute == MP_F32;
  bool exactX = kind != MP_POOL_MAX || input->elementType == a.compute ||
                a.compute == MP_F32;
  if (in.channelsLast) {
    auto takes = [](const mpTensor *t) {
      return t->elementType == MP_F32 || isNarrow(t);
    };
    if (!takes(dy) || !takes(dx) || (kind == MP_POOL_MAX && !takes(input)))
      return false;
    withPoolArith(a, false, [&](auto arith) {
      poolGradNhwc(arith, kind, in, o, w, exactD, exactX, dy, input, dx);
    });
    return true;
  }
  thread_local std::vector<float> ds, is, xs;
  const float *d = asF32(dy, ds, true);
  const float *x = kind == MP_POOL_MAX ? asF32(input, is, true) : nullptr;
  float *g = asF32(dx, xs, false);
  if (!d || !g || (kind == MP_POOL_MAX && !x))
    return false;
  parallelFor(o.n * o.c, std::max<int64_t>(1, 4096 / (o.h * o.w + 1)),
              [&](int64_t begin, int64_t end) {
    for (int64_t plane = begin; plane < end; ++plane) {
      int64_t n = plane / o.c, c = plane % o.c;
      for (int64_t yy = 0; yy < in.h; ++yy)
        for (int64_t xx = 0; xx < in.w; ++xx)
          g[in.at(n, c, yy, xx)] = 0.0f;
      forEachPosition(o, w, [&](int64_t oy, int64_t ox, int64_t y0,
                                int64_t x0) {
        Span s = span(in, w, kind, y0, x0);
        float dv = d[o.at(n, c, oy, ox)];
        dv = exactD ? dv : a.r(dv);
        if (kind == MP_POOL_MAX) {
          int64_t best = -1;
          float top = -std::numeric_limits<float>::infinity();
          for (int64_t yy = s.ya; yy < s.yb; ++yy)
            for (int64_t xx = s.xa; xx < s.xb; ++xx) {
              float v = x[in.at(n, c, yy, xx)];
              v = exactX ? v : a.r(v);
              if (best < 0 || v > top) {
                best = in.at(n, c, yy, xx);
                top = v;
              }
            }
          if (best >= 0)
            g[best] = a.add(g[best], dv);
          return;
        }
        if (s.divisor <= 0)
          return;
        float share = a.div(dv, float(s.divisor));
        for (int64_t yy = s.ya; yy < s.yb; ++yy)
          for (int64_t xx = s.xa; xx < s.xb; ++xx) {
            float &slot = g[in.at(n, c, yy, xx)];
            slot = a.add(slot, share);
          }
      });
    }
  });
  return narrowInto(xs, dx);
}

} // namespace

extern "C" mpStatus mpPool2d(mpPoolKind kind, const mpTensor *input,
                             mpTensor *out, const mpWindow *w,
                             mpElementType compute) {
  Act in, o;
  if (kind < MP_POOL_MAX || kind > MP_POOL_AVG_INCLUDE_PAD ||
      !poolShape(input, out, w, in, o) || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  if (compute != MP_F64 && libraryKernelsEnabled() &&
      fastPool(Arith<float>{compute}, kind, in, o, w, input, out))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t n = 0; n < o.n; ++n)
      for (int64_t c = 0; c < o.c; ++c)
        forEachPosition(o, w, [&](int64_t oy, int64_t ox, int64_t y0,
                                  int64_t x0) {
          Span s = span(in, w, kind, y0, x0);
          T acc = kind == MP_POOL_MAX ? -std::numeric_limits<T>::infinity()
                                      : T(0);
          for (int64_t y = s.ya; y < s.yb; ++y)
            for (int64_t x = s.xa; x < s.xb; ++x) {
              T v = a.in(input, in.at(n, c, y, x));
              if (kind != MP_POOL_MAX)
                acc = a.add(acc, v);
              else if (v > acc || std::isnan(v))
                acc = v;
            }
          if (kind != MP_POOL_MAX)
            acc = s.divisor > 0 ? a.div(acc, T(s.divisor)) : T(0);
          a.out(out, o.at(n, c, oy, ox), acc);
        });
  });
  return MP_OK;
}

extern "C" mpStatus mpPool2dGrad(mpPoolKind kind, const mpTensor *dy,
                                 const mpTensor *input, mpTensor *dx,
                                 const mpWindow *w, mpElementType compute) {
  Act in, o;
  if (kind < MP_POOL_MAX || kind > MP_POOL_AVG_INCLUDE_PAD ||
      !poolShape(dx, dy, w, in, o) || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  if (kind == MP_POOL_MAX &&
      (!input || !input->data || input->rank != 4 ||
       mpNumElements(input) != mpNumElements(dx)))
    return MP_ERROR_INVALID_ARGUMENT;
  if (compute != MP_F64 && libraryKernelsEnabled() &&
      fastPoolGrad(Arith<float>{compute}, kind, in, o, w, dy, input, dx))
    return MP_OK;
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    std::vector<T> acc(size_t(mpNumElements(dx)), T(0));
    for (int64_t n = 0; n < o.n; ++n)
      for (int64_t c = 0; c < o.c; ++c)
        forEachPosition(o, w, [&](int64_t oy, int64_t ox, int64_t y0,
                                  int64_t x0) {
          Span s = span(in, w, kind, y0, x0);
          T d = a.in(dy, o.at(n, c, oy, ox));
          if (kind == MP_POOL_MAX) {
            // The first maximum in row-major window order takes it all.
            int64_t best = -1;
            T top = -std::numeric_limits<T>::infinity();
            for (int64_t y = s.ya; y < s.yb; ++y)
              for (int64_t x = s.xa; x < s.xb; ++x) {
                T v = a.in(input, in.at(n, c, y, x));
                if (best < 0 || v > top) {
                  best = in.at(n, c, y, x);
                  top = v;
                }
              }
            if (best >= 0)
              acc[size_t(best)] = a.add(acc[size_t(best)], d);
            return;
          }
          if (s.divisor <= 0)
            return;
          T share = a.div(d, T(s.divisor));
          for (int64_t y = s.ya; y < s.yb; ++y)
            for (int64_t x = s.xa; x < s.xb; ++x) {
              T &slot = acc[size_t(in.at(n, c, y, x))];
              slot = a.add(slot, share);
            }
        });
    for (size_t i = 0; i < acc.size(); ++i)
      a.out(dx, int64_t(i), acc[i]);
  });
  return MP_OK;
}

//===----------------------------------------------------------------------===//
// Batch normalisation
//===----------------------------------------------------------------------===//

namespace {

/// Calls `body(index)` for every element of channel `c`.
template <typename Body> void forChannel(const Act &act, int64_t c, Body body) {
  for (int64_t n = 0; n < act.n; ++n)
    for (int64_t y = 0; y < act.h; ++y)
      for (int64_t x = 0; x < act.w; ++x)
        body(act.at(n, c, y, x));
}

//===----------------------------------------------------------------------===//
// Batch norm fast paths: f32 compute on f32/f16/bf16 tensors, threads over
// blocks of channels, each channel's sums in forChannel's order (n, y, x),
// so the bits are the loops'. NCHW gathers a channel (n runs of h * w) into
// f32 scratch once and works on it; NHWC, where a channel is strided,
// streams the rows of a block of channels, one pass per statistic as the
// loops do, with no scratch. An NHWC block is as wide as the threads allow
// (up to 256 channels). The passes run inside out, a vector register's
// worth of channels at a time down all the rows with their sums in
// registers (batchnorm_cpu.cpp: about 2x faster than a pass per row, whose
// sums went through memory, rowPass, which only the AVX2 loops on a CPU
// without F16C still take for f16 storage).
//===----------------------------------------------------------------------===//

constexpr int64_t kChannelBlock = 256;

/// One NCHW channel of `t` into `v` (n * h * w floats, in order), and back.
void gatherChannel(const mpTensor *t, const Act &act, int64_t c, float *v) {
  int64_t plane = act.h * act.w;
  for (int64_t n = 0; n < act.n; ++n)
    loadF32(t->data, t->elementType, act.at(n, c, 0, 0), plane, v + n * plane);
}

void scatterChannel(const float *v, const Act &act, int64_t c, mpTensor *t) {
  int64_t plane = act.h * act.w;
  for (int64_t n = 0; n < act.n; ++n)
    storeF32(v + n * plane, plane, t->data, t->elementType, act.at(n, c, 0, 0));
}

/// Calls `fn(a, b)` for every NHWC position in order, with channels
/// [c0, c0 + cn) of `ta` (and `tb` when given) there converted to f32; with
/// `out`, stores `a` (which fn may overwrite) there afterwards.
template <typename Fn>
void rowPass(const Act &act, int64_t c0, int64_t cn, const mpTensor *ta,
             const mpTensor *tb, mpTensor *out, Fn fn) {
  float a[kChannelBlock], b[kChannelBlock];
  // bf16 widens by a shift, inline, where a call per row would cost more
  // than the bytes it converts.
  auto load = [&](const mpTensor *t, int64_t at, float *v) {
    if (t->elementType != MP_BF16)
      return loadF32(t->data, t->elementType, at, cn, v);
    const uint16_t *p = static_cast<const uint16_t *>(t->data) + at;
    for (int64_t k = 0; k < cn; ++k) {
      uint32_t bits = uint32_t(p[k]) << 16;
      std::memcpy(&v[k], &bits, sizeof bits);
    }
  };
  for (int64_t j = 0, count = act.n * act.h * act.w; j < count; ++j) {
    int64_t at = j * act.c + c0;
    load(ta, at, a);
    if (tb)
      load(tb, at, b);
    fn(a, b);
    if (out)
      storeF32(a, cn, out->data, out->elementType, at);
  }
}

/// NHWC batch norm on f32, bf16 or f16 storage, inside out: a chunk of N
/// channels (one vector register: 16 with AVX-512, 8 with AVX2, 4 with
/// SSE) runs down the rows (n, y, x) of its block with its sums and
/// parameters in registers, where rowPass re-read and re-stored every sum
/// once per row. A channel still sees its elements in the reference loops'
/// order, so the bits are theirs.
///
/// `U` adjacent chunks at `x` (row 0) go down the rows together: U
/// independent chains of additions instead of one, and U * N consecutive
/// channels of each row read at once (whole cache lines, where one chunk of
/// bf16 read half of one and left the other half to a later walk down the
/// rows). `W` is N, or 0 for a block's last chunk, `width` < N channels
/// wide (U = 1). The chunks run down `rows` rows `stride` apart. Always
/// inlined into the per-instruction-set loops below.
template <int N, int64_t W, int U, typename SX>
MP_INLINE void momentsChunk(const SX *x, int64_t rows, int64_t stride,
                            int64_t width, float *mu, float *sq) {
  Vec<N> acc[U] = {}, dev[U] = {}, m[U];
  const SX *p = x;
  for (int64_t j = 0; j < rows; ++j, p += stride)
    for (int u = 0; u < U; ++u)
      acc[u] = acc[u] + loadVec<N, W>(p + u * N, width);
  for (int u = 0; u < U; ++u) {
    m[u] = acc[u] / float(rows);
    storeVec<N, W>(m[u], mu + u * N, width);
  }
  for (int64_t j = 0; j < rows; ++j, x += stride)
    for (int u = 0; u < U; ++u) {
      Vec<N> d = loadVec<N, W>(x + u * N, width) - m[u];
      dev[u] = dev[u] + d * d;
    }
  for (int u = 0; u < U; ++u)
    storeVec<N, W>(dev[u], sq + u * N, width);
}

template <int N, int64_t W, int U, typename SX, typename SY>
MP_INLINE void normaliseChunk(const SX *x, SY *y, int64_t rows,
                              int64_t stride, int64_t width, const float *mu,
                              const float *r, const float *g,
                              const float *b) {
  Vec<N> m[U], rr[U], gg[U], bb[U];
  for (int u = 0; u < U; ++u) {
    int64_t o = u * N;
    m[u] = loadVec<N, W>(mu + o, width);
    rr[u] = loadVec<N, W>(r + o, width);
    gg[u] = loadVec<N, W>(g + o, width);
    bb[u] = loadVec<N, W>(b + o, width);
  }
  for (int64_t j = 0; j < rows; ++j, x += stride, y += stride)
    for (int u = 0; u < U; ++u) {
      int64_t o = u * N;
      Vec<N> v = loadVec<N, W>(x + o, width);
      storeVec<N, W>((v - m[u]) * rr[u] * gg[u] + bb[u], y + o, width);
    }
}

template <int N, int64_t W, int U, typename SD, typename SX>
MP_INLINE void gradientSumsChunk(const SD *dy, const SX *x, int64_t rows,
                                 int64_t stride, int64_t width,
                                 const float *mu, const float *r,
                                 float *sumDy, float *sumDyXhat) {
  Vec<N> m[U], rr[U], sd[U] = {}, sdx[U] = {};
  for (int u = 0; u < U; ++u) {
    m[u] = loadVec<N, W>(mu + u * N, width);
    rr[u] = loadVec<N, W>(r + u * N, width);
  }
  for (int64_t j = 0; j < rows; ++j, dy += stride, x += stride)
    for (int u = 0; u < U; ++u) {
      int64_t o = u * N;
      Vec<N> d = loadVec<N, W>(dy + o, width);
      Vec<N> xhat = (loadVec<N, W>(x + o, width) - m[u]) * rr[u];
      sd[u] = sd[u] + d;
      sdx[u] = sdx[u] + d * xhat;
    }
  for (int u = 0; u < U; ++u) {
    storeVec<N, W>(sd[u], sumDy + u * N, width);
    storeVec<N, W>(sdx[u], sumDyXhat + u * N, width);
  }
}

template <int N, int64_t W, int U, typename SD, typename SX, typename SO>
MP_INLINE void gradientRowsChunk(const SD *dy, const SX *x, SO *dx,
                                 int64_t rows, int64_t stride, int64_t width,
                                 const float *mu, const float *r,
                                 const float *kk, const float *meanDy,
                                 const float *meanDyXhat) {
  Vec<N> m[U], rr[U], kl[U], md[U], mdx[U];
  for (int u = 0; u < U; ++u) {
    int64_t o = u * N;
    m[u] = loadVec<N, W>(mu + o, width);
    rr[u] = loadVec<N, W>(r + o, width);
    kl[u] = loadVec<N, W>(kk + o, width);
    md[u] = loadVec<N, W>(meanDy + o, width);
    mdx[u] = loadVec<N, W>(meanDyXhat + o, width);
  }
  for (int64_t j = 0; j < rows; ++j, dy += stride, x += stride, dx += stride)
    for (int u = 0; u < U; ++u) {
      int64_t o = u * N;
      Vec<N> xhat = (loadVec<N, W>(x + o, width) - m[u]) * rr[u];
      storeVec<N, W>(kl[u] * ((loadVec<N, W>(dy + o, width) - md[u]) - xhat * mdx[u]),
               dx + o, width);
    }
}

/// How many chunks of `rowBytes` bytes per row go down `rows` rows together
/// (8, 4, 2 or 1): as many as keep one walk's bytes within kGroupBytes, so
/// that a pass which reads them again (the variance after the mean, dx
/// after the gradient's sums) finds them in the core's L2 cache.
constexpr int64_t kGroupBytes = 256 * 1024;
inline int64_t groupSize(int64_t rows, int64_t rowBytes) {
  int64_t g = 8;
  while (g > 1 && g * rows * rowBytes > kGroupBytes)
    g /= 2;
  return g;
}

/// The loops over a block's chunks, compiled for AVX-512, AVX2 and the
/// baseline (no FMA contraction in any: -ffp-contract=off), each taking
/// pointers at channel c0 of row 0:
/// * moments: mean and sum of squared deviations of x (the two passes);
/// * normalise: y = (x - mu) * r * g + b;
/// * gradientSums: sums of dy and of dy * xhat;
/// * gradientRows: dx = kk * ((dy - meanDy) - xhat * meanDyXhat).
/// Each takes the chunks in groups of up to U vectors of N lanes (N the
/// register width), as wide as groupSize allows, then smaller groups, then
/// what is left.
#define MP_GROUP_LOOP(N, U, G, CALL, ...)                                      \
  if (G <= U && G <= group)                                                    \
    for (; k + G * N <= cn; k += G * N)                                        \
      CALL<N, N, (G <= U ? G : 1)>(__VA_ARGS__);
#define MP_CHUNKS(N, U, BYTES, CALL, ...)                                      \
  int64_t k = 0, group = groupSize(rows, N * (BYTES));                         \
  MP_GROUP_LOOP(N, U, 8, CALL, __VA_ARGS__)                                    \
  MP_GROUP_LOOP(N, U, 4, CALL, __VA_ARGS__)                                    \
  MP_GROUP_LOOP(N, U, 2, CALL, __VA_ARGS__)                                    \
  for (; k + N <= cn; k += N)                                                  \
    CALL<N, N, 1>(__VA_ARGS__);                                                \
  if (k < cn)                                                                  \
    CALL<N, 0, 1>(__VA_ARGS__);
#define MP_BATCH_NORM_LOOPS(SUFFIX, TARGET, LANES, GROUP)                      \
  template <typename SX>                                                       \
  TARGET void moments##SUFFIX(const SX *x, int64_t rows, int64_t stride,       \
                              int64_t cn, float *mu, float *sq) {              \
    MP_CHUNKS(LANES, GROUP, sizeof(SX), momentsChunk, x + k, rows, stride,     \
              cn - k, mu + k, sq + k)                                          \
  }                                                                            \
  template <typename SX, typename SY>                                          \
  TARGET void normalise##SUFFIX(const SX *x, SY *y, int64_t rows,              \
                                int64_t stride, int64_t cn, const float *mu,   \
                                const float *r, const float *g,                \
                                const float *b) {                              \
    MP_CHUNKS(LANES, GROUP, sizeof(SX) + sizeof(SY), normaliseChunk, x + k,    \
              y + k, rows, stride, cn - k, mu + k, r + k, g + k, b + k)        \
  }                                                                            \
  template <typename SD, typename SX>                                          \
  TARGET void gradientSums##SUFFIX(const SD *dy, const SX *x, int64_t rows,    \
                                   int64_t stride, int64_t cn,                 \
                                   const float *mu, const float *r,            \
                                   float *sumDy, float *sumDyXhat) {           \
    MP_CHUNKS(LANES, GROUP, sizeof(SD) + sizeof(SX), gradientSumsChunk,        \
              dy + k, x + k, rows, stride, cn - k, mu + k, r + k, sumDy + k,   \
              sumDyXhat + k)                                                   \
  }                                                                            \
  template <typename SD, typename SX, typename SO>                             \
  TARGET void gradientRows##SUFFIX(                                            \
      const SD *dy, const SX *x, SO *dx, int64_t rows, int64_t stride,         \
      int64_t cn, const float *mu, const float *r, const float *kk,            \
      const float *meanDy, const float *meanDyXhat) {                          \
    MP_CHUNKS(LANES, GROUP, sizeof(SD) + sizeof(SX) + sizeof(SO),              \
              gradientRowsChunk, dy + k, x + k, dx + k, rows, stride, cn - k,  \
              mu + k, r + k, kk + k, meanDy + k, meanDyXhat + k)               \
  }
#if MP_X86
MP_BATCH_NORM_LOOPS(Avx512, MP_TARGET_AVX512, 16, 8)
MP_BATCH_NORM_LOOPS(Avx2, MP_TARGET_AVX2_F16C, 8, 4)
#endif
MP_BATCH_NORM_LOOPS(Base, , 4, 4)
#undef MP_BATCH_NORM_LOOPS
#undef MP_CHUNKS
#undef MP_GROUP_LOOP

/// A depthwise filter gradient's geometry (NHWC; one channel per group).
struct Depthwise {
  int64_t n, c, ih, iw, oh, ow, kh, kw;
  int64_t strideY, strideX, padTop, padLeft, dilationY, dilationX;
};

/// The largest filter window the depthwise loop keeps sums for (7 x 7).
constexpr int64_t kDepthwiseTaps = 49;

/// Adds every output position's dy times its window's inputs into the sums
/// of a chunk of N channels (`W`: N, or 0 for the last `width` < N),
/// position by position in (n, oy, ox) order, so each filter element sums
/// its products in the reference loop's order; then stores the sums,
/// tap-major.
template <int N, int64_t W, typename SD, typename SX>
MP_INLINE void depthwiseChunk(const SD *dy, const SX *x, const Depthwise &g,
                              int64_t width, float *sums) {
  Vec<N> acc[kDepthwiseTaps] = {};
  for (int64_t n = 0; n < g.n; ++n)
    for (int64_t oy = 0; oy < g.oh; ++oy)
      for (int64_t ox = 0; ox < g.ow; ++ox) {
        Vec<N> d =
            loadVec<N, W>(dy + ((n * g.oh + oy) * g.ow + ox) * g.c, width);
        for (int64_t ky = 0; ky < g.kh; ++ky) {
          int64_t y = oy * g.strideY - g.padTop + ky * g.dilationY;
          if (y < 0 || y >= g.ih)
            continue;
          for (int64_t kx = 0; kx < g.kw; ++kx) {
            int64_t xx = ox * g.strideX - g.padLeft + kx * g.dilationX;
            if (xx < 0 || xx >= g.iw)
              continue;
            Vec<N> &a = acc[ky * g.kw + kx];
            a = a + d * loadVec<N, W>(x + ((n * g.ih + y) * g.iw + xx) * g.c,
                                      width);
          }
        }
      }
  for (int64_t t = 0; t < g.kh * g.kw; ++t)
    storeVec<N, W>(acc[t], sums + t * N, width);
}

/// depthwiseChunk over channels [0, cn) from the given pointers (channel
/// c0 of the first position), compiled for AVX-512, AVX2 and the baseline;
/// `out` gets the chunk's sums in OIHW order ([cn][kh * kw]). Chunks are
/// 16 channels on each: the sums of up to 49 taps live in memory anyway,
/// and a narrower chunk repeats the window's index arithmetic more often
/// (AVX2's and SSE's register widths ran 10-40% slower).
#define MP_DEPTHWISE_LOOPS(SUFFIX, TARGET)                                     \
  template <typename SD, typename SX>                                          \
  TARGET void depthwise##SUFFIX(const SD *dy, const SX *x, const Depthwise &g, \
                                int64_t cn, float *out) {                      \
    constexpr int N = kVectorLanes;                                            \
    float sums[kDepthwiseTaps * N];                                            \
    int64_t taps = g.kh * g.kw;                                                \
    for (int64_t k = 0; k < cn; k += N) {                                      \
      int64_t width = std::min<int64_t>(N, cn - k);                            \
      if (width == N)                                                          \
        depthwiseChunk<N, N>(dy + k, x + k, g, width, sums);                   \
      else                                                                     \
        depthwiseChunk<N, 0>(dy + k, x + k, g, width, sums);                   \
      for (int64_t j = 0; j < width; ++j)                                      \
        for (int64_t t = 0; t < taps; ++t)                                     \
          out[(k + j) * taps + t] = sums[t * N + j];                           \
    }                                                                          \
  }
#if MP_X86
MP_DEPTHWISE_LOOPS(Avx512, MP_TARGET_AVX512)
MP_DEPTHWISE_LOOPS(Avx2, MP_TARGET_AVX2)
#endif
MP_DEPTHWISE_LOOPS(Base, )
#undef MP_DEPTHWISE_LOOPS

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

/// The variant of loop NAME<...> this CPU runs (Vector.h's forIsa).
#if MP_X86
#define MP_BY_ISA(NAME, ...)                                                   \
  forIsa(&NAME##Avx512<__VA_ARGS__>, &NAME##Avx2<__VA_ARGS__>,                 \
         &NAME##Base<__VA_ARGS__>)
#else
#define MP_BY_ISA(NAME, ...) (&NAME##Base<__VA_ARGS__>)
#endif

/// Whether every tensor is stored as f32, bf16 or f16, which the inside-out
/// loops take.
bool insideOut(std::initializer_list<const mpTensor *> ts) {
  bool f16 = f16LanesSupported();
  for (const mpTensor *t : ts)
    if (t->elementType != MP_F32 && t->elementType != MP_BF16 &&
        (t->elementType != MP_F16 || !f16))
      return false;
  return true;
}

/// Calls `fn(S())` with the C++ type of an insideOut tensor's storage:
/// float, Bf16 or, when WithF16, F16.
template <bool WithF16 = true, typename Fn>
void withStorage(const mpTensor *t, Fn fn) {
  if (t->elementType == MP_F32)
    fn(float());
  else if (!WithF16 || t->elementType == MP_BF16)
    fn(Bf16());
  else if constexpr (WithF16)
    fn(F16());
}

/// `t`'s storage from channel c0 of row 0.
template <typename S> S *at(const mpTensor *t, int64_t c0) {
  return static_cast<S *>(t->data) + c0;
}

/// The filter gradient of a depthwise convolution (one input and one output
/// channel per group) on NHWC f32 or bf16 storage, computing in f32:
/// channels in vector lanes, split across threads in chunks of 16, each
/// filter element's sum in the reference loop's order (the same bits).
/// oneDNN's depthwise kernel (jit_dw) takes only 3 x 3 filters, and beats
/// these loops there (2-4x); other sizes go to a generic grouped kernel.
/// In bf16 that one is 10-20x slower than these loops (EfficientNet's
/// 5 x 5 layers: 0.6-0.7 ms against 35 µs on 8 x 8 maps, 17 ms against
/// 1.4 ms on 56 x 56); in f32 it is 3-6x slower on small maps and 1.6x
/// faster on large ones. So: every size but 3 x 3 with bf16 activations,
/// and f32 ones with at most 2048 output positions.
bool depthwiseFilterGrad(const mpTensor *dy, const mpTensor *input,
                         mpTensor *dfilter, const mpWindow *w,
                         mpElementType compute) {
  ConvShape s;
  if (!libraryKernelsEnabled() || compute != MP_F32 || !w ||
      !w->channelsLast || !s.init(input, dfilter, dy, w) ||
      s.groups != s.in.c || s.out.c != s.in.c ||
      s.kh * s.kw > kDepthwiseTaps || !insideOut({dy, input}) ||
      dy->elementType == MP_F16 || input->elementType == MP_F16 ||
      !isTileType(dfilter->elementType))
    return false;
  Depthwise g{s.in.n,          s.in.c,          s.in.h,
              s.in.w,          s.out.h,         s.out.w,
              s.kh,            s.kw,            w->strides[0],
              w->strides[1],   w->padding[0],   w->padding[1],
              w->dilations[0], w->dilations[1]};
  bool narrow = dy->elementType == MP_BF16 || input->elementType == MP_BF16;
  if ((s.kh == 3 && s.kw == 3) || (!narrow && g.n * g.oh * g.ow > 2048))
    return false;
  int64_t taps = s.kh * s.kw;
  std::vector<float> sums(size_t(g.c * taps));
  int64_t chunks = (g.c + kVectorLanes - 1) / kVectorLanes;
  int64_t work = g.n * g.oh * g.ow * taps; // lane products per chunk
  parallelFor(chunks, std::max<int64_t>(1, 16 * kTile / (work + 1)),
              [&](int64_t begin, int64_t end) {
                int64_t c0 = begin * kVectorLanes;
                int64_t cn = std::min(end * kVectorLanes, g.c) - c0;
                withStorage<false>(dy, [&](auto sd) {
                  withStorage<false>(input, [&](auto sx) {
                    using SD = decltype(sd);
                    using SX = decltype(sx);
                    MP_BY_ISA(depthwise, SD, SX)
                    (at<const SD>(dy, c0), at<const SX>(input, c0), g, cn,
                     sums.data() + c0 * taps);
                  });
                });
              });
  storeF32(sums.data(), int64_t(sums.size()), dfilter->data,
           dfilter->elementType, 0);
  return true;
}

/// y = (x - mu) * r * g + b over channels [c0, c0 + cn) inside out, when x
/// and y are insideOut.
bool normalise(const Act &act, int64_t c0, int64_t cn, const mpTensor *x,
               mpTensor *y, const float *mu, const float *r, const float *g,
               const float *b) {
  if (!insideOut({x, y}))
    return false;
  withStorage(x, [&](auto sx) {
    withStorage(y, [&](auto sy) {
      using SX = decltype(sx);
      using SY = decltype(sy);
      MP_BY_ISA(normalise, SX, SY)
      (at<const SX>(x, c0), at<SY>(y, c0), act.n * act.h * act.w, act.c, cn,
       mu, r, g, b);
    });
  });
  return true;
}

float scalarAt(const mpTensor *t, int64_t i) {
  if (t->elementType == MP_F32)
    return static_cast<const float *>(t->data)[i];
  float v;
  loadF32(t->data, t->elementType, i, 1, &v);
  return v;
}

void setScalar(mpTensor *t, int64_t i, float v) {
  if (t->elementType == MP_F32) {
    static_cast<float *>(t->data)[i] = v;
    return;
  }
  storeF32(&v, 1, t->data, t->elementType, i);
}

/// Calls `body(c0, cn, scratch)` for every block of channels (one channel
/// for NCHW, up to kChannelBlock for NHWC), blocks split across threads;
/// for NCHW, `scratch` holds `buffers` channels of f32, owned by the call.
template <typename Body>
void forChannelBlocks(const Act &act, int buffers, Body body) {
  int64_t count = act.n * act.h * act.w;
  int64_t block = 1;
  if (act.channelsLast) {
    // A block per thread, in whole 16-channel (64-byte) pieces.
    int64_t share = (act.c + kernelThreads() - 1) / kernelThreads();
    block = std::min(kChannelBlock, (share + 15) / 16 * 16);
  }
  int64_t blocks = (act.c + block - 1) / block;
  parallelFor(blocks, std::max<int64_t>(1, 16 * kTile / (count * block + 1)),
              [&](int64_t begin, int64_t end) {
                std::vector<float> scratch(
                    act.channelsLast ? 0 : size_t(buffers * count));
                for (int64_t b = begin; b < end; ++b) {
                  int64_t c0 = b * block;
                  body(c0, std::min(block, act.c - c0), scratch.data());
                }
              });
}

/// The running statistics' update and the saved ones of channel c.
void finishChannel(mpTensor *mean, mpTensor *rstd, const mpTensor *runningMean,
                   const mpTensor *runningVar, mpTensor *newRunningMean,
                   mpTensor *newRunningVar, int64_t c, float mu, float r,
                   float sq, float var, int64_t count, float momentum) {
  setScalar(mean, c, mu);
  setScalar(rstd, c, r);
  float unbiased = count > 1 ? sq / float(count - 1) : var;
  float m = momentum, keep = 1.0f - momentum;
  // Read the old running statistics before writing: the new ones may be
  // the same buffers.
  float oldMean = scalarAt(runningMean, c), oldVar = scalarAt(runningVar, c);
  setScalar(newRunningMean, c, keep * oldMean + m * mu);
  setScalar(newRunningVar, c, keep * oldVar + m * unbiased);
}

} // namespace

extern "C" mpStatus mpBatchNorm(const mpTensor *x, const mpTensor *scale,
                                const mpTensor *bias,
                                const mpTensor *runningMean,
                                const mpTensor *runningVar, mpTensor *y,
                                mpTensor *mean, mpTensor *rstd,
                                mpTensor *newRunningMean,
                                mpTensor *newRunningVar, float epsilon,
                                float momentum, int32_t channelsLast,
                                mpElementType compute) {
  Act act;
  if (!batchNormShape(x, y,
                      {scale, bias, runningMean, runningVar, mean, rstd,
                       newRunningMean, newRunningVar},
                      channelsLast, act) ||
      !isFloatType(compute) || !(epsilon > 0) || !(momentum >= 0) ||
      momentum > 1)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t count = act.n * act.h * act.w;
  if (f32FastPath(compute, {x, scale, bias, runningMean, runningVar, y, mean,
                              rstd, newRunningMean, newRunningVar})) {
    forChannelBlocks(act, 1, [&](int64_t c0, int64_t cn, float *xs) {
      if (!act.channelsLast) {
        gatherChannel(x, act, c0, xs);
        float mu, sq;
        meanAndSquares(xs, count, mu, sq);
        float var = sq / float(count);
        float r = 1.0f / std::sqrt(var + epsilon);
        float g = scalarAt(scale, c0), b = scalarAt(bias, c0);
        for (int64_t j = 0; j < count; ++j)
          xs[j] = (xs[j] - mu) * r * g + b;
        scatterChannel(xs, act, c0, y);
        finishChannel(mean, rstd, runningMean, runningVar, newRunningMean,
                      newRunningVar, c0, mu, r, sq, var, count, momentum);
        return;
      }
      float sq[kChannelBlock] = {};
      float mu[kChannelBlock], r[kChannelBlock], g[kChannelBlock],
          b[kChannelBlock];
      if (insideOut({x})) {
        withStorage(x, [&](auto sx) {
          using SX = decltype(sx);
          MP_BY_ISA(moments, SX)(at<const SX>(x, c0), count, act.c, cn, mu, sq);
        });
      } else {
        float sum[kChannelBlock] = {};
        rowPass(act, c0, cn, x, nullptr, nullptr, [&](float *v, float *) {
          for (int64_t k = 0; k < cn; ++k)
            sum[k] = sum[k] + v[k];
        });
        for (int64_t k = 0; k < cn; ++k)
          mu[k] = sum[k] / float(count);
        rowPass(act, c0, cn, x, nullptr, nullptr, [&](float *v, float *) {
          for (int64_t k = 0; k < cn; ++k) {
            float d = v[k] - mu[k];
            sq[k] = sq[k] + d * d;
          }
        });
      }
      for (int64_t k = 0; k < cn; ++k) {
        float var = sq[k] / float(count);
        r[k] = 1.0f / std::sqrt(var + epsilon);
        g[k] = scalarAt(scale, c0 + k);
        b[k] = scalarAt(bias, c0 + k);
        finishChannel(mean, rstd, runningMean, runningVar, newRunningMean,
                      newRunningVar, c0 + k, mu[k], r[k], sq[k], var, count,
                      momentum);
      }
      if (!normalise(act, c0, cn, x, y, mu, r, g, b))
        rowPass(act, c0, cn, x, nullptr, y, [&](float *v, float *) {
          for (int64_t k = 0; k < cn; ++k)
            v[k] = (v[k] - mu[k]) * r[k] * g[k] + b[k];
        });
    });
    return MP_OK;
  }
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t c = 0; c < act.c; ++c) {
      T sum = 0;
      forChannel(act, c, [&](int64_t i) { sum = a.add(sum, a.in(x, i)); });
      T mu = a.div(sum, T(count));
      T sq = 0;
      forChannel(act, c, [&](int64_t i) {
        T d = a.sub(a.in(x, i), mu);
        sq = a.add(sq, a.mul(d, d));
      });
      T var = a.div(sq, T(count));
      T r = a.div(T(1), a.sqrt(a.add(var, T(epsilon))));
      T g = a.in(scale, c), b = a.in(bias, c);
      forChannel(act, c, [&](int64_t i) {
        a.out(y, i, a.add(a.mul(a.mul(a.sub(a.in(x, i), mu), r), g), b));
      });
      a.out(mean, c, mu);
      a.out(rstd, c, r);
      T unbiased = count > 1 ? a.div(sq, T(count - 1)) : var;
      T m = T(momentum), keep = T(1) - T(momentum);
      // Read the old running statistics before writing: the new ones may
      // be the same buffers.
      T oldMean = a.in(runningMean, c), oldVar = a.in(runningVar, c);
      a.out(newRunningMean, c, a.add(a.mul(keep, oldMean), a.mul(m, mu)));
      a.out(newRunningVar, c, a.add(a.mul(keep, oldVar), a.mul(m, unbiased)));
    }
  });
  return MP_OK;
}

extern "C" mpStatus mpBatchNormInference(const mpTensor *x,
                                         const mpTensor *scale,
                                         const mpTensor *bias,
                                         const mpTensor *mean,
                                         const mpTensor *variance,
                                         mpTensor *y, float epsilon,
                                         int32_t channelsLast,
                                         mpElementType compute) {
  Act act;
  if (!batchNormShape(x, y, {scale, bias, mean, variance}, channelsLast,
                      act) ||
      !isFloatType(compute) || !(epsilon > 0))
    return MP_ERROR_INVALID_ARGUMENT;
  if (f32FastPath(compute, {x, scale, bias, mean, variance, y})) {
    forChannelBlocks(act, 1, [&](int64_t c0, int64_t cn, float *xs) {
      float mu[kChannelBlock], r[kChannelBlock], g[kChannelBlock],
          b[kChannelBlock];
      for (int64_t k = 0; k < cn; ++k) {
        int64_t c = c0 + k;
        mu[k] = scalarAt(mean, c);
        r[k] = 1.0f / std::sqrt(scalarAt(variance, c) + epsilon);
        g[k] = scalarAt(scale, c);
        b[k] = scalarAt(bias, c);
      }
      if (!act.channelsLast) {
        gatherChannel(x, act, c0, xs);
        for (int64_t j = 0, count = act.n * act.h * act.w; j < count; ++j)
          xs[j] = (xs[j] - mu[0]) * r[0] * g[0] + b[0];
        scatterChannel(xs, act, c0, y);
        return;
      }
      if (!normalise(act, c0, cn, x, y, mu, r, g, b))
        rowPass(act, c0, cn, x, nullptr, y, [&](float *v, float *) {
          for (int64_t k = 0; k < cn; ++k)
            v[k] = (v[k] - mu[k]) * r[k] * g[k] + b[k];
        });
    });
    return MP_OK;
  }
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t c = 0; c < act.c; ++c) {
      T mu = a.in(mean, c);
      T r = a.div(T(1), a.sqrt(a.add(a.in(variance, c), T(epsilon))));
      T g = a.in(scale, c), b = a.in(bias, c);
      forChannel(act, c, [&](int64_t i) {
        a.out(y, i, a.add(a.mul(a.mul(a.sub(a.in(x, i), mu), r), g), b));
      });
    }
  });
  return MP_OK;
}

extern "C" mpStatus mpBatchNormGrad(const mpTensor *dy, const mpTensor *x,
                                    const mpTensor *scale,
                                    const mpTensor *mean,
                                    const mpTensor *rstd, mpTensor *dx,
                                    mpTensor *dscale, mpTensor *dbias,
                                    int32_t channelsLast,
                                    mpElementType compute) {
  Act act, grad;
  if (!batchNormShape(x, dx, {scale, mean, rstd, dscale, dbias},
                      channelsLast, act) ||
      !grad.init(dy, channelsLast) || grad.n != act.n || grad.c != act.c ||
      grad.h != act.h || grad.w != act.w || !isFloatType(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t count = act.n * act.h * act.w;
  if (f32FastPath(compute, {dy, x, scale, mean, rstd, dx, dscale, dbias})) {
    forChannelBlocks(act, 2, [&](int64_t c0, int64_t cn, float *scratch) {
      float mu[kChannelBlock], r[kChannelBlock], kk[kChannelBlock];
      float sumDy[kChannelBlock] = {}, sumDyXhat[kChannelBlock] = {};
      for (int64_t k = 0; k < cn; ++k) {
        mu[k] = scalarAt(mean, c0 + k);
        r[k] = scalarAt(rstd, c0 + k);
        kk[k] = scalarAt(scale, c0 + k) * r[k];
      }
      if (!act.channelsLast) {
        float *xs = scratch, *ds = scratch + count;
        gatherChannel(x, act, c0, xs);
        gatherChannel(dy, act, c0, ds);
        float sd = 0, sdx = 0;
        for (int64_t j = 0; j < count; ++j) {
          float xhat = (xs[j] - mu[0]) * r[0];
          sd = sd + ds[j];
          sdx = sdx + ds[j] * xhat;
        }
        float meanDy = sd / float(count), meanDyXhat = sdx / float(count);
        for (int64_t j = 0; j < count; ++j) {
          float xhat = (xs[j] - mu[0]) * r[0];
          ds[j] = kk[0] * ((ds[j] - meanDy) - xhat * meanDyXhat);
        }
        scatterChannel(ds, act, c0, dx);
        setScalar(dscale, c0, sdx);
        setScalar(dbias, c0, sd);
        return;
      }
      bool inside = insideOut({dy, x, dx});
      if (inside)
        withStorage(dy, [&](auto sd) {
          withStorage(x, [&](auto sx) {
            using SD = decltype(sd);
            using SX = decltype(sx);
            MP_BY_ISA(gradientSums, SD, SX)
            (at<const SD>(dy, c0), at<const SX>(x, c0), count, act.c, cn, mu,
             r, sumDy, sumDyXhat);
          });
        });
      else
        rowPass(act, c0, cn, dy, x, nullptr, [&](float *d, float *v) {
          for (int64_t k = 0; k < cn; ++k) {
            float xhat = (v[k] - mu[k]) * r[k];
            sumDy[k] = sumDy[k] + d[k];
            sumDyXhat[k] = sumDyXhat[k] + d[k] * xhat;
          }
        });
      float meanDy[kChannelBlock], meanDyXhat[kChannelBlock];
      for (int64_t k = 0; k < cn; ++k) {
        meanDy[k] = sumDy[k] / float(count);
        meanDyXhat[k] = sumDyXhat[k] / float(count);
        setScalar(dscale, c0 + k, sumDyXhat[k]);
        setScalar(dbias, c0 + k, sumDy[k]);
      }
      if (inside)
        withStorage(dy, [&](auto sd) {
          withStorage(x, [&](auto sx) {
            withStorage(dx, [&](auto so) {
              using SD = decltype(sd);
              using SX = decltype(sx);
              using SO = decltype(so);
              MP_BY_ISA(gradientRows, SD, SX, SO)
              (at<const SD>(dy, c0), at<const SX>(x, c0), at<SO>(dx, c0),
               count, act.c, cn, mu, r, kk, meanDy, meanDyXhat);
            });
          });
        });
      else
        rowPass(act, c0, cn, dy, x, dx, [&](float *d, float *v) {
          for (int64_t k = 0; k < cn; ++k) {
            float xhat = (v[k] - mu[k]) * r[k];
            d[k] = kk[k] * ((d[k] - meanDy[k]) - xhat * meanDyXhat[k]);
          }
        });
    });
    return MP_OK;
  }
  withCompute(compute, [&](auto a) {
    using T = decltype(a.r(0));
    for (int64_t c = 0; c < act.c; ++c) {
      T mu = a.in(mean, c), r = a.in(rstd, c), g = a.in(scale, c);
      // dbias = sum(dy), dscale = sum(dy * xhat);
      // dx = g * r * (dy - dbias / count - xhat * dscale / count).
      T sumDy = 0, sumDyXhat = 0;
      forChannel(act, c, [&](int64_t i) {
        T d = a.in(dy, i);
        T xhat = a.mul(a.sub(a.in(x, i), mu), r);
        sumDy = a.add(sumDy, d);
        sumDyXhat = a.add(sumDyXhat, a.mul(d, xhat));
      });
      T meanDy = a.div(sumDy, T(count)), meanDyXhat = a.div(sumDyXhat, T(count));
      T k = a.mul(g, r);
      forChannel(act, c, [&](int64_t i) {
        T xhat = a.mul(a.sub(a.in(x, i), mu), r);
        T d = a.sub(a.sub(a.in(dy, i), meanDy), a.mul(xhat, meanDyXhat));
        a.out(dx, i, a.mul(k, d));
      });
      a.out(dscale, c, sumDyXhat);
      a.out(dbias, c, sumDy);
    }
  });
  return MP_OK;
}
