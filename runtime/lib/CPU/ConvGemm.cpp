//===- ConvGemm.cpp - small-image convolutions as im2col GEMMs ------------===//
//
// The late stages of a CNN have few output positions and many channels:
// ResNet-50 on 64x64 images ends with 2x2 maps of 512 channels under 3x3
// filters. There oneDNN's direct NHWC kernels spend most of a call on the
// filter: they want it in a blocked layout of their own, so every call
// reorders the caller's OIHW filter into it (forward, data gradient) or
// the blocked weight gradient back out of it (9.4 MB of f32 for that
// 512 x 512 x 3 x 3 filter), and the bf16 AMX kernels took 2-3.6x the time
// of the f32 ones at those shapes (benchmarks/README.md).
//
// With M = N * OH * OW output positions and K = C * KH * KW filter taps,
// every pass is one GEMM against the plain OIHW filter, viewed as an [O, K]
// matrix, once the input is unfolded into the [M, K] matrix of its windows
// (im2col, columns in the filter's (c, y, x) order):
//
//   forward          Y[M, O]  = cols[M, K] W^T
//   data gradient    dcols[M, K] = dY[M, O] W, folded back onto dX (col2im)
//   filter gradient  dW[O, K] = dY^T cols[M, K], written straight into OIHW
//
// The unfolded matrix has KH * KW copies of the input, cheap when M is
// small next to the filter: the path is taken when M is at most about the
// output channels (preferGemm), for f32 or bf16 storage computing in f32,
// NHWC, ungrouped. The GEMMs are oneDNN matmuls (Dnnl.cpp), which read
// the plain filter as it is.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "../Checks.h"
#include "Dnnl.h"
#include "Parallel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

using namespace mp::rt;

namespace {

/// Whether a pass with `m` output positions, `o` output channels and
/// `type` storage runs as GEMMs. The direct kernels pay for reordering the
/// filter (O * K elements), the GEMMs for unfolding the input (M * K), so
/// the rule is on M against O, with factors from benchmarks/conv_gemm_cpu.cpp
/// (AMX and AVX-512 CPUs; benchmarks/README.md): f32 data gradients gain
/// less and want M four times smaller, and bf16 filter gradients gain most
/// (oneDNN's AMX weight-gradient kernels took 2-4x its f32 ones at
/// ResNet-50's late shapes) and take M up to 4 O. MP_CONV_GEMM=always or
/// never overrides the rule; it is read on every call (a microsecond next
/// to a convolution), so a test or a benchmark can compare both paths in one
/// process.
bool preferGemm(DnnlConv kind, mpElementType type, int64_t m, int64_t o) {
  if (const char *env = std::getenv("MP_CONV_GEMM")) {
    if (std::strcmp(env, "always") == 0)
      return true;
    if (std::strcmp(env, "never") == 0)
      return false;
  }
  switch (kind) {
  case DnnlConv::Forward:
    return m <= o;
  case DnnlConv::BackwardData:
    return type == MP_F32 ? 4 * m <= o : m <= o;
  case DnnlConv::BackwardWeights:
    return type == MP_F32 ? m <= o : m <= 4 * o;
  }
  return false;
}

bool gemmType(mpElementType t) { return t == MP_F32 || t == MP_BF16; }

/// The unfolded matrix a GEMM pass reads: [M, K] elements of `Bits` (the
/// storage type's bit pattern; zero bits are zero in f32 and bf16). Each
/// row is written in order, reading the window's taps as KH * KW streams
/// along the channels (a tap in the padding reads a row of zeros).
template <typename Bits>
void im2col(const ConvShape &s, const mpWindow *w, const Bits *x, Bits *cols) {
  int64_t taps = s.kh * s.kw, k = s.in.c * taps;
  int64_t m = s.out.n * s.out.h * s.out.w;
  std::vector<Bits> zeros(size_t(s.in.c), Bits(0));
  parallelFor(m, std::max<int64_t>(1, 16384 / k), [&](int64_t begin,
                                                       int64_t end) {
    std::vector<const Bits *> tap(static_cast<size_t>(taps));
    for (int64_t row = begin; row < end; ++row) {
      int64_t n = row / (s.out.h * s.out.w), p = row % (s.out.h * s.out.w);
      int64_t y0 = (p / s.out.w) * w->strides[0] - w->padding[0];
      int64_t x0 = (p % s.out.w) * w->strides[1] - w->padding[1];
      for (int64_t ky = 0; ky < s.kh; ++ky)
        for (int64_t kx = 0; kx < s.kw; ++kx) {
          int64_t y = y0 + ky * w->dilations[0];
          int64_t xx = x0 + kx * w->dilations[1];
          bool inside = y >= 0 && y < s.in.h && xx >= 0 && xx < s.in.w;
          tap[size_t(ky * s.kw + kx)] =
              inside ? x + s.in.at(n, 0, y, xx) : zeros.data();
        }
      Bits *out = cols + row * k;
      if (taps == 1) {
        std::memcpy(out, tap[0], size_t(s.in.c) * sizeof(Bits));
        continue;
      }
      for (int64_t c = 0; c < s.in.c; ++c)
        for (int64_t t = 0; t < taps; ++t)
          out[c * taps + t] = tap[size_t(t)][c];
    }
  });
}

/// dx = the sum, over every window that reads an input element, of that
/// window's entry of `dcols` ([M, K] f32): im2col's adjoint. Threads over
/// (image, channel block) pairs, whose elements no other pair writes.
void col2im(const ConvShape &s, const mpWindow *w, const float *dcols,
            float *dx) {
  int64_t taps = s.kh * s.kw, k = s.in.c * taps;
  int64_t block = std::min<int64_t>(s.in.c, 64);
  int64_t blocks = (s.in.c + block - 1) / block;
  int64_t work = s.out.h * s.out.w * taps * block;
  parallelFor(s.in.n * blocks, std::max<int64_t>(1, 32768 / work),
              [&](int64_t begin, int64_t end) {
    for (int64_t item = begin; item < end; ++item) {
      int64_t n = item / blocks, c0 = (item % blocks) * block;
      int64_t c1 = std::min(s.in.c, c0 + block);
      for (int64_t y = 0; y < s.in.h; ++y)
        for (int64_t x = 0; x < s.in.w; ++x)
          std::memset(dx + s.in.at(n, c0, y, x), 0,
                      size_t(c1 - c0) * sizeof(float));
      forEachPosition(s.out, w, [&](int64_t oy, int64_t ox, int64_t y0,
                                    int64_t x0) {
        int64_t row = (n * s.out.h + oy) * s.out.w + ox;
        for (int64_t ky = 0; ky < s.kh; ++ky) {
          int64_t y = y0 + ky * w->dilations[0];
          if (y < 0 || y >= s.in.h)
            continue;
          for (int64_t kx = 0; kx < s.kw; ++kx) {
            int64_t xx = x0 + kx * w->dilations[1];
            if (xx < 0 || xx >= s.in.w)
              continue;
            const float *src = dcols + row * k + ky * s.kw + kx;
            float *dst = dx + s.in.at(n, 0, y, xx);
            for (int64_t c = c0; c < c1; ++c)
              dst[c] += src[c * taps];
          }
        }
      });
    }
  });
}

/// An [rows, cols] matrix view of `data` for dnnlMatmul.
mpTensor matrix(void *data, mpElementType type, int64_t rows, int64_t cols) {
  mpTensor t{};
  t.data = data;
  t.elementType = type;
  t.rank = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  return t;
}

} // namespace

bool mp::rt::gemmConv2d(DnnlConv kind, const mpTensor *src,
                        const mpTensor *weights, const mpTensor *dst,
                        const mpWindow *w, mpElementType compute) {
  ConvShape s;
  if (compute != MP_F32 || !w->channelsLast || w->groups != 1 ||
      !libraryKernelsEnabled() || !s.init(src, weights, dst, w))
    return false;
  // The two operands a pass reads share a type (dnnlMatmul checks which
  // result types it can write).
  const mpTensor *read = kind == DnnlConv::BackwardData ? dst : src;
  const mpTensor *other = kind == DnnlConv::BackwardWeights ? dst : weights;
  mpElementType type = read->elementType;
  if (!gemmType(type) || other->elementType != type ||
      !gemmType(src->elementType) || !gemmType(weights->elementType) ||
      !gemmType(dst->elementType))
    return false;
  int64_t m = s.out.n * s.out.h * s.out.w;
  int64_t k = s.in.c * s.kh * s.kw, o = s.out.c;
  if (!preferGemm(kind, type, m, o))
    return false;
  // Ask before unfolding: oneDNN refuses bf16 on CPUs without bf16
  // instructions (the caller then widens to f32 and comes back).
  bool available =
      kind == DnnlConv::Forward
          ? dnnlMatmulAvailable(type, dst->elementType, false, true, m, o, k)
      : kind == DnnlConv::BackwardWeights
          ? dnnlMatmulAvailable(type, weights->elementType, true, false, o, k,
                                m)
          : dnnlMatmulAvailable(type, MP_F32, false, false, m, k, o);
  if (!available)
    return false;
  // Scratch matrices are written whole before they are read: left
  // uninitialised (new[] without value-initialisation).
  std::unique_ptr<uint32_t[]> colWords;
  auto unfold = [&] {
    if (type == MP_F32) {
      colWords.reset(new uint32_t[size_t(m * k)]);
      im2col(s, w, static_cast<const uint32_t *>(src->data), colWords.get());
    } else {
      colWords.reset(new uint32_t[size_t(m * k + 1) / 2]);
      im2col(s, w, static_cast<const uint16_t *>(src->data),
             reinterpret_cast<uint16_t *>(colWords.get()));
    }
    return matrix(colWords.get(), type, m, k);
  };
  mpTensor filter = matrix(weights->data, weights->elementType, o, k);
  switch (kind) {
  case DnnlConv::Forward: {
    mpTensor cols = unfold();
    mpTensor y = matrix(dst->data, dst->elementType, m, o);
    return dnnlMatmul(&cols, &filter, &y, false, true, m, o, k, 1, true, true);
  }
  case DnnlConv::BackwardWeights: {
    mpTensor cols = unfold();
    mpTensor dy = matrix(dst->data, type, m, o);
    return dnnlMatmul(&dy, &cols, &filter, true, false, o, k, m, 1, true,
                      true);
  }
  case DnnlConv::BackwardData: {
    std::unique_ptr<float[]> dcolData(new float[size_t(m * k)]);
    mpTensor dcols = matrix(dcolData.get(), MP_F32, m, k);
    mpTensor dy = matrix(dst->data, type, m, o);
    if (!dnnlMatmul(&dy, &filter, &dcols, false, false, m, k, o, 1, true,
                    true))
      return false;
    // dX sums in f32 and is rounded once to its storage type.
    std::vector<float> wide;
    float *dx = static_cast<float *>(src->data);
    if (src->elementType != MP_F32) {
      wide.resize(size_t(mpNumElements(src)));
      dx = wide.data();
    }
    col2im(s, w, dcolData.get(), dx);
    return wide.empty() || mpConvert(dx, MP_F32, src->data, src->elementType,
                                     int64_t(wide.size())) == MP_OK;
  }
  }
  return false;
}
