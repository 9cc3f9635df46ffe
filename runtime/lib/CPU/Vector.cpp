//===- Vector.cpp - vectorised f16/bf16 conversions -----------------------===//
//
// Three implementations of each conversion, picked per call from the
// features read at start-up: AVX-512 (16 lanes), AVX2 (8 lanes; F16C for
// f16) and the scalar functions of Convert.cpp. Each is compiled for its
// own instruction set with a target attribute, so the library itself still
// runs on any x86-64 CPU (and builds on other architectures, which take the
// scalar path).
//
// bf16 is rounded with integer arithmetic, (x + 0x7fff + lsb) >> 16 with
// NaNs quieted, rather than vcvtneps2bf16, because that instruction flushes
// subnormal inputs to zero and the runtime's conversions keep them. f16 uses
// vcvtps2ph with round-to-nearest-even, which keeps subnormals and quiets
// NaNs exactly as mpF32ToF16 does; vcvtph2ps quiets signalling NaNs, which
// mpF16ToF32 keeps, so NaN lanes are rebuilt from their bits. All 2^32 f32
// patterns were checked against the scalar functions once (0 differences);
// mp-fast-path-tests checks every exponent and rounding boundary each run.
//
//===----------------------------------------------------------------------===//

#include "Vector.h"
#include "Dnnl.h"
#include "Parallel.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace mp::rt;

const CpuFeatures &mp::rt::cpuFeatures() {
  static const CpuFeatures features = [] {
    CpuFeatures f;
#ifdef MP_X86
    __builtin_cpu_init();
    // The AVX2 loops multiply-add (Vector.h): every AVX2 CPU has FMA too.
    f.fma = __builtin_cpu_supports("fma");
    f.avx2 = __builtin_cpu_supports("avx2") && f.fma;
    f.f16c = __builtin_cpu_supports("f16c");
    f.avx512 = __builtin_cpu_supports("avx512f") &&
               __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") &&
               __builtin_cpu_supports("avx512dq");
    f.avx512bf16 = f.avx512 && __builtin_cpu_supports("avx512bf16");
    // AMX is not in GCC 12's __builtin_cpu_supports: CPUID.(7,0):EDX bits
    // 22 (AMX-BF16) and 24 (AMX-TILE).
    unsigned a, b, c, d;
    __asm__("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(7), "c"(0));
    f.amx = f.avx512 && (d >> 22 & 1) && (d >> 24 & 1);
#endif
    // MP_CPU_ISA=avx2 or =scalar caps what the kernels use, so that each
    // path can be tested on one machine (oneDNN has DNNL_MAX_CPU_ISA).
    if (const char *isa = std::getenv("MP_CPU_ISA")) {
      bool avx2 = !std::strcmp(isa, "avx2"),
           scalar = !std::strcmp(isa, "scalar");
      if (avx2 || scalar)
        f.avx512 = f.avx512bf16 = f.amx = false;
      if (scalar)
        f.avx2 = f.fma = f.f16c = false;
      if (!avx2 && !scalar && *isa)
        std::fprintf(stderr,
                     "mp runtime: MP_CPU_ISA=%s is not avx2 or scalar; "
                     "ignored\n",
                     isa);
    }
    return f;
  }();
  return features;
}

extern "C" mpCpuInfo mpGetCpuInfo(void) {
  const CpuFeatures &f = cpuFeatures();
  mpCpuInfo info{};
  info.avx2 = f.avx2 && f.fma;
  info.f16c = f.f16c;
  info.avx512 = f.avx512;
  info.avx512bf16 = f.avx512bf16;
  info.amx = f.amx;
  info.threads = kernelThreads();
  info.fastKernels = libraryKernelsEnabled();
  info.bf16Gemm = info.fastKernels && dnnlTakesBf16();
  return info;
}

namespace {

void loadScalar(const uint16_t *in, bool bf16, int64_t n, float *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16 ? mpBF16ToF32(in[i]) : mpF16ToF32(in[i]);
}

void storeScalar(const float *in, int64_t n, bool bf16, uint16_t *out) {
  for (int64_t i = 0; i < n; ++i)
    out[i] = bf16 ? mpF32ToBF16(in[i]) : mpF32ToF16(in[i]);
}

#ifdef MP_X86

// GCC 12's intrinsic headers build "undefined" vectors as `__m512 __Y =
// __Y;`, which -Wmaybe-uninitialized reports at every inlined use.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/// Stores the elements before `out` reaches an `alignment`-byte boundary
/// (streaming stores need it) as the tails are stored, the same bits, and
/// advances past them.
void storeHeadToAlignment(const float *&in, int64_t &n, bool bf16,
                          uint16_t *&out, uintptr_t alignment) {
  uintptr_t at = reinterpret_cast<uintptr_t>(out) % alignment;
  int64_t head = std::min<int64_t>(
      n, int64_t((alignment - at) % alignment / sizeof(uint16_t)));
  storeScalar(in, head, bf16, out);
  in += head;
  out += head;
  n -= head;
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void
loadAvx512(const uint16_t *in, bool bf16, int64_t n, float *out) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(in + i));
    __m512i x = _mm512_cvtepu16_epi32(h);
    __m512 v;
    if (bf16) {
      v = _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
    } else {
      v = _mm512_cvtph_ps(h);
      // NaN lanes: sign, all-ones exponent, the payload shifted up as is.
      __m512i abs = _mm512_and_si512(x, _mm512_set1_epi32(0x7fff));
      __mmask16 nan = _mm512_cmpgt_epi32_mask(abs, _mm512_set1_epi32(0x7c00));
      __m512i bits = _mm512_or_si512(
          _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x8000)), 16),
          _mm512_or_si512(
              _mm512_set1_epi32(0x7f800000),
              _mm512_slli_epi32(_mm512_and_si512(x, _mm512_set1_epi32(0x3ff)),
                                13)));
      v = _mm512_mask_mov_ps(v, nan, _mm512_castsi512_ps(bits));
    }
    _mm512_storeu_ps(out + i, v);
  }
  loadScalar(in + i, bf16, n - i, out + i);
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void
storeAvx512(const float *in, int64_t n, bool bf16, uint16_t *out,
            bool stream) {
  if (stream)
    storeHeadToAlignment(in, n, bf16, out, 32);
  const __m512i lsbMask = _mm512_set1_epi32(1);
  const __m512i bias = _mm512_set1_epi32(0x7fff);
  const __m512i quiet = _mm512_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(in + i);
    __m256i h;
    if (bf16) {
      __m512i x = _mm512_castps_si512(v);
      __m512i hi = _mm512_srli_epi32(x, 16);
      __m512i r = _mm512_add_epi32(
          x, _mm512_add_epi32(bias, _mm512_and_si512(hi, lsbMask)));
      r = _mm512_srli_epi32(r, 16);
      __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      r = _mm512_mask_mov_epi32(r, nan, _mm512_or_si512(hi, quiet));
      h = _mm512_cvtepi32_epi16(r);
    } else {
      h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    }
    if (stream)
      _mm256_stream_si256(reinterpret_cast<__m256i *>(out + i), h);
    else
      _mm256_storeu_si256(reinterpret_cast<__m256i *>(out + i), h);
  }
  if (stream)
    _mm_sfence();
  storeScalar(in + i, n - i, bf16, out + i);
}

__attribute__((target("avx2,f16c"))) void loadF16C(const uint16_t *in,
                                                   int64_t n, float *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i));
    // NaN lanes take the scalar conversion, which keeps signalling NaNs.
    __m128i abs = _mm_and_si128(h, _mm_set1_epi16(0x7fff));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(abs, _mm_set1_epi16(0x7c00)))) {
      loadScalar(in + i, false, 8, out + i);
      continue;
    }
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
  }
  loadScalar(in + i, false, n - i, out + i);
}

__attribute__((target("avx2,f16c"))) void storeF16C(const float *in, int64_t n,
                                                    uint16_t *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(
        reinterpret_cast<__m128i *>(out + i),
        _mm256_cvtps_ph(_mm256_loadu_ps(in + i),
                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  storeScalar(in + i, n - i, false, out + i);
}

__attribute__((target("avx2"))) void loadBF16Avx2(const uint16_t *in, int64_t n,
                                                  float *out) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(in + i));
    _mm256_storeu_ps(out + i, _mm256_castsi256_ps(_mm256_slli_epi32(
                                  _mm256_cvtepu16_epi32(h), 16)));
  }
  loadScalar(in + i, true, n - i, out + i);
}

__attribute__((target("avx2"))) void
storeBF16Avx2(const float *in, int64_t n, uint16_t *out, bool stream) {
  if (stream)
    storeHeadToAlignment(in, n, true, out, 16);
  const __m256i one = _mm256_set1_epi32(1);
  const __m256i bias = _mm256_set1_epi32(0x7fff);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(in + i);
    __m256i x = _mm256_castps_si256(v);
    __m256i hi = _mm256_srli_epi32(x, 16);
    __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(hi, one))),
        16);
    __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), nan);
    // Every lane is below 0x10000, so unsigned saturation packs exactly;
    // packus interleaves the 128-bit halves, which the permute undoes.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    if (stream)
      _mm_stream_si128(reinterpret_cast<__m128i *>(out + i),
                       _mm256_castsi256_si128(packed));
    else
      _mm_storeu_si128(reinterpret_cast<__m128i *>(out + i),
                       _mm256_castsi256_si128(packed));
  }
  if (stream)
    _mm_sfence();
  storeScalar(in + i, n - i, true, out + i);
}

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif // MP_X86

void load16(const uint16_t *in, bool bf16, int64_t n, float *out) {
#ifdef MP_X86
  const CpuFeatures &f = cpuFeatures();
  if (f.avx512)
    return loadAvx512(in, bf16, n, out);
  if (!bf16 && f.f16c && f.avx2)
    return loadF16C(in, n, out);
  if (bf16 && f.avx2)
    return loadBF16Avx2(in, n, out);
#endif
  loadScalar(in, bf16, n, out);
}

void store16(const float *in, int64_t n, bool bf16, uint16_t *out,
             bool stream = false) {
#ifdef MP_X86
  const CpuFeatures &f = cpuFeatures();
  if (f.avx512)
    return storeAvx512(in, n, bf16, out, stream);
  if (!bf16 && f.f16c && f.avx2)
    return storeF16C(in, n, out);
  if (bf16 && f.avx2)
    return storeBF16Avx2(in, n, out, stream);
#endif
  storeScalar(in, n, bf16, out);
}

} // namespace

void mp::rt::loadF32(const void *data, mpElementType t, int64_t offset,
                     int64_t n, float *out) {
  if (t == MP_I1) {
    const uint8_t *bytes = static_cast<const uint8_t *>(data) + offset;
    for (int64_t i = 0; i < n; ++i)
      out[i] = bytes[i] ? 1.0f : 0.0f;
    return;
  }
  if (t == MP_F32) {
    std::memcpy(out, static_cast<const float *>(data) + offset,
                size_t(n) * sizeof(float));
    return;
  }
  load16(static_cast<const uint16_t *>(data) + offset, t == MP_BF16, n, out);
}

void mp::rt::storeF32(const float *in, int64_t n, void *data, mpElementType t,
                      int64_t offset) {
  if (t == MP_F32) {
    std::memcpy(static_cast<float *>(data) + offset, in,
                size_t(n) * sizeof(float));
    return;
  }
  store16(in, n, t == MP_BF16, static_cast<uint16_t *>(data) + offset);
}

void mp::rt::streamF32(const float *in, int64_t n, void *data,
                       mpElementType t, int64_t offset) {
  if (t == MP_F32)
    return storeF32(in, n, data, t, offset);
  store16(in, n, t == MP_BF16, static_cast<uint16_t *>(data) + offset,
          /*stream=*/true);
}

void mp::rt::loadBits32(const void *data, mpElementType t, int64_t offset,
                        int64_t n, float *out) {
  if (t == MP_F32)
    return loadF32(data, t, offset, n, out);
  const uint16_t *in = static_cast<const uint16_t *>(data) + offset;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t slot = in[i];
    std::memcpy(&out[i], &slot, sizeof slot);
  }
}

void mp::rt::storeBits32(const float *in, int64_t n, void *data,
                         mpElementType t, int64_t offset) {
  if (t == MP_F32)
    return storeF32(in, n, data, t, offset);
  uint16_t *out = static_cast<uint16_t *>(data) + offset;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t slot;
    std::memcpy(&slot, &in[i], sizeof slot);
    out[i] = uint16_t(slot);
  }
}

void mp::rt::roundF32(float *x, int64_t n, mpElementType t) {
  if (t != MP_F16 && t != MP_BF16)
    return;
  // Through a 16-bit buffer in chunks: both directions are exact, so this is
  // the scalar rounding at vector speed.
  uint16_t buffer[256];
  for (int64_t i = 0; i < n; i += 256) {
    int64_t m = n - i < 256 ? n - i : 256;
    store16(x + i, m, t == MP_BF16, buffer);
    load16(buffer, t == MP_BF16, m, x + i);
  }
}
