//===- Elementwise.cpp - elementwise ops on the CPU -----------------------===//
//
// One loop per op family over a scalar function evaluated in the compute
// type: T = double for f64 compute, float otherwise, with inputs and the
// result rounded to f16/bf16 when that is the compute type. Binary ops map
// each output index to its broadcast operand indices with per-dimension
// strides (0 on a broadcast dimension).
//
// Fast paths (Tiles.h) take the common case, f32/f16/bf16 storage and
// compute, with operands under any broadcast: tiles converted with
// vector instructions, the same scalar function per element, the same
// roundings, so they give the reference loop's bits, on every thread.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"
#include "mp/Runtime/Philox.h"

#include "Elements.h"
#include "Lanes.h"
#include "Math.h"
#include "Tiles.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

using namespace mp::rt;

namespace {

/// Rounds to the compute type: identity for f32/f64.
template <typename T>
T roundCompute(mpElementType compute, T x) {
  if (compute == MP_F16)
    return mpF16ToF32(mpF32ToF16(float(x)));
  if (compute == MP_BF16)
    return mpBF16ToF32(mpF32ToBF16(float(x)));
  return x;
}

template <typename T>
__attribute__((always_inline)) inline T unary(mpUnaryKind kind, T x) {
  switch (kind) {
  case MP_NEG:
    return -x;
  case MP_RELU: // NaN stays NaN, as in PyTorch (not max(x, 0))
    return x > T(0) || x != x ? x : T(0);
  case MP_GELU:
    return x * mathNormalCdf(x);
  case MP_GELU_TANH:
    return geluTanh(x);
  case MP_TANH:
    return mathTanh(x);
  case MP_SIGMOID:
    return T(1) / (T(1) + mathExp(-x));
  case MP_EXP:
    return mathExp(x);
  case MP_LOG:
    return std::log(x);
  case MP_SQRT:
    return std::sqrt(x);
  case MP_RSQRT:
    return T(1) / std::sqrt(x);
  case MP_SQUARE:
    return x * x;
  case MP_ERF:
    return mathErf(x);
  case MP_SIN:
    return std::sin(x);
  case MP_COS:
    return std::cos(x);
  }
  return x;
}

template <typename T>
T binary(mpBinaryKind kind, T a, T b) {
  switch (kind) {
  case MP_ADD:
    return a + b;
  case MP_SUB:
    return a - b;
  case MP_MUL:
    return a * b;
  case MP_DIV:
    return a / b;
  case MP_MAXIMUM: // NaN-propagating, like torch.maximum
    return std::isnan(a) || std::isnan(b) ? a + b : (a > b ? a : b);
  case MP_MINIMUM:
    return std::isnan(a) || std::isnan(b) ? a + b : (a < b ? a : b);
  }
  return a;
}

template <typename T>
__attribute__((always_inline)) inline T activationGrad(mpActivationGradKind kind,
                                                       T dy, T s) {
  switch (kind) {
  case MP_RELU_GRAD:
    return s > T(0) ? dy : T(0);
  case MP_GELU_GRAD: {
    CdfPdf<T> n = mathNormalCdfPdf(s);
    return dy * (n.cdf + s * n.pdf);
  }
  case MP_GELU_TANH_GRAD:
    return geluTanhGrad(dy, s);
  case MP_TANH_GRAD:
    return dy * (T(1) - s * s);
  case MP_SIGMOID_GRAD:
    return dy * s * (T(1) - s);
  }
  return dy;
}

bool valid(const mpTensor *t) {
  return t && t->data && isFloatType(t->elementType) && mpNumElements(t) >= 0;
}

template <typename T, typename F>
void map1(const mpTensor *in, mpTensor *out, mpElementType compute, F f) {
  int64_t n = mpNumElements(in);
  for (int64_t i = 0; i < n; ++i) {
    T x = roundCompute(compute, T(load(in->data, in->elementType, i)));
    store(out->data, out->elementType, i, roundCompute(compute, f(x)));
  }
}

//===----------------------------------------------------------------------===//
// Fast paths
//===----------------------------------------------------------------------===//

/// Elementwise work worth a thread: 16 tiles of cheap arithmetic.
constexpr int64_t kCheapTiles = 16;
/// Tiles of transcendental functions worth a thread.
constexpr int64_t kCostlyTiles = 2;

bool tileTypes(std::initializer_list<mpElementType> types) {
  if (!libraryKernelsEnabled())
    return false;
  for (mpElementType t : types)
    if (!isTileType(t))
      return false;
  return true;
}

/// `c[i] = f(a[i], b[i])` over a tile, as a loop the compiler can
/// vectorise (c overlaps neither operand).
template <typename F>
void each2(const float *__restrict a, const float *__restrict b,
           float *__restrict c, int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    c[i] = f(a[i], b[i]);
}

/// Calls the variant of a loop compiled for the vector instructions this
/// CPU offers (less what MP_CPU_ISA leaves out): `avx512`, `avx2` or
/// `base`, all functions of one type.
template <typename Fn, typename... Args>
void byIsa(Fn avx512, Fn avx2, Fn base, Args... args) {
  forIsa(avx512, avx2, base)(args...);
}

/// One loop per kind, each over `unary` with the kind a constant, so the
/// switch folds away and the loop (Math.h's functions included) vectorises
/// to the same bits as the reference loop's calls. Each loop is its own
/// small function, compiled for AVX-512, AVX2 and the baseline (no FMA
/// contraction in any: -ffp-contract=off), chosen by cpuFeatures(), so
/// MP_CPU_ISA caps them.
#define MP_ELEMENT_LOOPS(SUFFIX, TARGET)                                       \
  template <mpUnaryKind K>                                                     \
  TARGET void unaryLoop##SUFFIX(const float *__restrict x, int64_t n,          \
                                float *__restrict y) {                         \
    for (int64_t i = 0; i < n; ++i)                                            \
      y[i] = unary(K, x[i]);                                                   \
  }                                                                            \
  template <mpActivationGradKind K>                                            \
  TARGET void gradLoop##SUFFIX(const float *__restrict g,                      \
                               const float *__restrict s, int64_t n,           \
                               float *__restrict dx) {                         \
    for (int64_t i = 0; i < n; ++i)                                            \
      dx[i] = activationGrad(K, g[i], s[i]);                                   \
  }
MP_ELEMENT_LOOPS(Avx512, MP_TARGET_AVX512)
MP_ELEMENT_LOOPS(Avx2, MP_TARGET_AVX2)
MP_ELEMENT_LOOPS(Base, )
#undef MP_ELEMENT_LOOPS

/// A bf16's bits widened to f32 (exact), and an f32 rounded to bf16 bits as
/// mpF32ToBF16 rounds (to nearest even; a NaN quieted, its payload kept),
/// in integer arithmetic the loops below vectorise.
__attribute__((always_inline)) inline float widenBf16(uint16_t h) {
  return floatOf(uint32_t(h) << 16);
}
__attribute__((always_inline)) inline uint16_t roundToBf16(float x) {
  uint32_t u = bitsOf(x);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t quiet = (u >> 16) | 0x40u;
  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
}

/// Binary ops (on whole tensors and bias rows), unary ops and activation
/// gradients on bf16 tensors, f32 arithmetic: each element widened,
/// computed and rounded in one loop, where the tiles would convert the
/// operands into f32 buffers, compute on those and convert the result back
/// (three passes, which cost more than the bytes they save while the
/// tensors are in cache). The result is rounded once, as the tiles round
/// it.
#define MP_BF16_LOOPS(SUFFIX, TARGET)                                          \
  template <mpBinaryKind K>                                                    \
  TARGET void bf16BinaryLoop##SUFFIX(const uint16_t *__restrict a,             \
                                     const uint16_t *__restrict b, int64_t n,  \
                                     uint16_t *__restrict c) {                 \
    for (int64_t i = 0; i < n; ++i)                                            \
      c[i] = roundToBf16(binary(K, widenBf16(a[i]), widenBf16(b[i])));         \
  }                                                                            \
  template <mpUnaryKind K>                                                     \
  TARGET void bf16UnaryLoop##SUFFIX(const uint16_t *__restrict x, int64_t n,   \
                                    uint16_t *__restrict y) {                  \
    for (int64_t i = 0; i < n; ++i)                                            \
      y[i] = roundToBf16(unary(K, widenBf16(x[i])));                           \
  }                                                                            \
  template <mpActivationGradKind K>                                            \
  TARGET void bf16GradLoop##SUFFIX(const uint16_t *__restrict g,               \
                                   const uint16_t *__restrict s, int64_t n,    \
                                   uint16_t *__restrict dx) {                  \
    for (int64_t i = 0; i < n; ++i)                                            \
      dx[i] = roundToBf16(activationGrad(K, widenBf16(g[i]), widenBf16(s[i])));\
  }
MP_BF16_LOOPS(Avx512, MP_TARGET_AVX512)
MP_BF16_LOOPS(Avx2, MP_TARGET_AVX2)
MP_BF16_LOOPS(Base, )
#undef MP_BF16_LOOPS

// The f16 loops' vectors are arguments and results only of functions that
// are always inlined, so GCC's note that their ABI differs between
// instruction sets does not apply; it reports the note at the end of the
// file, so it stays off to there.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

/// x `K` y on N lanes: the scalar binary's arithmetic, lane by lane.
template <mpBinaryKind K, int N>
MP_INLINE Vec<N> binaryLanes(Vec<N> x, Vec<N> y) {
  if constexpr (K == MP_ADD)
    return x + y;
  else if constexpr (K == MP_SUB)
    return x - y;
  else if constexpr (K == MP_MUL)
    return x * y;
  else
    return x / y;
}

/// Unary op `K` on N lanes (ReLU only), as the scalar function: NaN kept,
/// +0 for -0.
template <mpUnaryKind K, int N> MP_INLINE Vec<N> unaryLanes(Vec<N> v) {
  static_assert(K == MP_RELU, "f16 loops: ReLU only");
  typedef typename VecOf<N>::U U;
  return select<N>((U)(v > 0.0f) | (U)(v != v), v, Vec<N>{});
}

/// Activation gradient `K` on N lanes (ReLU's only): dy where s > 0, else
/// +0.
template <mpActivationGradKind K, int N>
MP_INLINE Vec<N> gradLanes(Vec<N> dy, Vec<N> s) {
  static_assert(K == MP_RELU_GRAD, "f16 loops: ReLU's gradient only");
  typedef typename VecOf<N>::U U;
  return select<N>((U)(s > 0.0f), dy, Vec<N>{});
}

/// The bf16 loops' binary ops (whole tensors and bias rows), and ReLU and
/// its gradient, on f16 tensors: N lanes (the register width) widened,
/// computed and rounded at a time with Lanes.h's conversions (vcvtph2ps
/// and vcvtps2ph on AVX-512 and F16C), since GCC 12 converts _Float16 a
/// lane at a time, which a scalar loop as the bf16 ones would leave it to.
/// The same bits as the tiles. Each run is inlined into the loop of its
/// instruction set below, which passes it only pointers: clang checks a
/// vector passed by value in a function with a target attribute against
/// the instruction set the function has without it.
template <mpBinaryKind K, int N>
MP_INLINE void binaryRun(const F16 *a, const F16 *b, int64_t n, F16 *c) {
  int64_t i = 0;
  for (; i + N <= n; i += N)
    storeVec<N, N>(
        binaryLanes<K, N>(loadVec<N, N>(a + i, N), loadVec<N, N>(b + i, N)),
        c + i, N);
  if (i < n)
    storeVec<N, 0>(binaryLanes<K, N>(loadVec<N, 0>(a + i, n - i),
                                     loadVec<N, 0>(b + i, n - i)),
                   c + i, n - i);
}

template <mpUnaryKind K, int N>
MP_INLINE void unaryRun(const F16 *x, int64_t n, F16 *y) {
  int64_t i = 0;
  for (; i + N <= n; i += N)
    storeVec<N, N>(unaryLanes<K, N>(loadVec<N, N>(x + i, N)), y + i, N);
  if (i < n)
    storeVec<N, 0>(unaryLanes<K, N>(loadVec<N, 0>(x + i, n - i)), y + i,
                   n - i);
}

template <mpActivationGradKind K, int N>
MP_INLINE void gradRun(const F16 *g, const F16 *s, int64_t n, F16 *dx) {
  int64_t i = 0;
  for (; i + N <= n; i += N)
    storeVec<N, N>(
        gradLanes<K, N>(loadVec<N, N>(g + i, N), loadVec<N, N>(s + i, N)),
        dx + i, N);
  if (i < n)
    storeVec<N, 0>(gradLanes<K, N>(loadVec<N, 0>(g + i, n - i),
                                   loadVec<N, 0>(s + i, n - i)),
                   dx + i, n - i);
}

#define MP_F16_LOOPS(SUFFIX, TARGET, N)                                        \
  template <mpBinaryKind K>                                                    \
  TARGET void f16BinaryLoop##SUFFIX(const uint16_t *a, const uint16_t *b,      \
                                    int64_t n, uint16_t *c) {                  \
    binaryRun<K, N>(reinterpret_cast<const F16 *>(a),                          \
                    reinterpret_cast<const F16 *>(b), n,                       \
                    reinterpret_cast<F16 *>(c));                               \
  }                                                                            \
  template <mpUnaryKind K>                                                     \
  TARGET void f16UnaryLoop##SUFFIX(const uint16_t *x, int64_t n,               \
                                   uint16_t *y) {                              \
    unaryRun<K, N>(reinterpret_cast<const F16 *>(x), n,                        \
                   reinterpret_cast<F16 *>(y));                                \
  }                                                                            \
  template <mpActivationGradKind K>                                            \
  TARGET void f16GradLoop##SUFFIX(const uint16_t *g, const uint16_t *s,        \
                                  int64_t n, uint16_t *dx) {                   \
    gradRun<K, N>(reinterpret_cast<const F16 *>(g),                            \
                  reinterpret_cast<const F16 *>(s), n,                         \
                  reinterpret_cast<F16 *>(dx));                                \
  }
#if MP_X86
MP_F16_LOOPS(Avx512, MP_TARGET_AVX512, 16)
MP_F16_LOOPS(Avx2, MP_TARGET_AVX2_F16C, 8)
#else
MP_F16_LOOPS(Avx512, , 4)
MP_F16_LOOPS(Avx2, , 4)
#endif
MP_F16_LOOPS(Base, , 4)
#undef MP_F16_LOOPS

/// Blocks of dropout mask words per tile.
constexpr int64_t kTileBlocks = kTile / 4;

/// The mask words of blocks [first, first + count) of (seed, stream),
/// count <= kTileBlocks, written as words[4 b + j]: the rounds of
/// mpPhilox4x32_10 over arrays of counters (portable; the vector variants
/// below use intrinsics).
void philoxWordsBase(uint64_t seed, uint64_t stream, uint64_t first,
                     int64_t count, uint32_t *words) {
  uint32_t c0[kTileBlocks], c1[kTileBlocks], c2[kTileBlocks],
      c3[kTileBlocks];
  for (int64_t b = 0; b < count; ++b) {
    c0[b] = uint32_t(first + b);
    c1[b] = uint32_t((first + b) >> 32);
    c2[b] = uint32_t(stream);
    c3[b] = uint32_t(stream >> 32);
  }
  uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    if (round) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    for (int64_t b = 0; b < count; ++b) {
      uint64_t p0 = uint64_t(0xD2511F53u) * c0[b];
      uint64_t p1 = uint64_t(0xCD9E8D57u) * c2[b];
      uint32_t n0 = uint32_t(p1 >> 32) ^ c1[b] ^ k0;
      uint32_t n2 = uint32_t(p0 >> 32) ^ c3[b] ^ k1;
      c0[b] = n0;
      c1[b] = uint32_t(p1);
      c2[b] = n2;
      c3[b] = uint32_t(p0);
    }
  }
  for (int64_t b = 0; b < count; ++b) {
    words[4 * b] = c0[b];
    words[4 * b + 1] = c1[b];
    words[4 * b + 2] = c2[b];
    words[4 * b + 3] = c3[b];
  }
}

#ifdef MP_X86
// The same rounds with intrinsics, U vectors of W blocks at a time. A round
// is a chain of about ten cycles (the product's latency, then a blend and
// two xors), which one vector in flight left mostly idle; with two, AVX2 is
// bound by its shuffles and blends, AVX-512 by its products. With the
// select below in vectors too, mpDropout on f32 became 1.25x (AVX2) and
// 1.55x (AVX-512) faster than with one vector and a scalar select.
// The compiler would widen each 32 x 32 -> 64-bit product to 64-bit lanes
// (vpmullq on AVX-512, three micro-ops, plus the widening and narrowing
// shuffles), where vpmuludq of the even lanes and of the odd lanes moved
// down, one micro-op each, gives the high and low halves after two blends.
// The odd lanes move down to the even ones by an in-lane shuffle (ODD_DOWN),
// which runs on another port than the products; HI and LO gather the high
// and low halves of the even products e and the odd ones o, and XOR3 is a
// three-way xor. AVX-512 does each in one instruction (a masked shuffle, a
// ternary logic op), AVX2 in two. The counters are padded to whole groups
// of vectors (the extra blocks' words are never read).
#define MP_PHILOX_VECTOR(SUFFIX, TARGET, V, W, U, MUL, ODD_DOWN, HI, LO, XOR3, \
                         SET1, LOAD, STORE)                                    \
  TARGET void philoxWords##SUFFIX(uint64_t seed, uint64_t stream,              \
                                  uint64_t first, int64_t count,               \
                                  uint32_t *words) {                           \
    constexpr int64_t kGroup = W * U;                                          \
    alignas(64) uint32_t c[4][(kTileBlocks + kGroup - 1) / kGroup * kGroup];   \
    int64_t padded = (count + kGroup - 1) / kGroup * kGroup;                   \
    for (int64_t b = 0; b < padded; ++b) {                                     \
      c[0][b] = uint32_t(first + b);                                           \
      c[1][b] = uint32_t((first + b) >> 32);                                   \
      c[2][b] = uint32_t(stream);                                              \
      c[3][b] = uint32_t(stream >> 32);                                        \
    }                                                                          \
    V keys[10][2];                                                             \
    uint32_t k0 = uint32_t(seed), k1 = uint32_t(seed >> 32);                   \
    for (int round = 0; round < 10; ++round) {                                 \
      keys[round][0] = SET1(int(k0));                                          \
      keys[round][1] = SET1(int(k1));                                          \
      k0 += 0x9E3779B9u;                                                       \
      k1 += 0xBB67AE85u;                                                       \
    }                                                                          \
    V m0 = SET1(int(0xD2511F53u)), m1 = SET1(int(0xCD9E8D57u));                \
    for (int64_t b = 0; b < padded; b += kGroup) {                             \
      V x0[U], x1[U], x2[U], x3[U];                                            \
      for (int u = 0; u < U; ++u) {                                            \
        x0[u] = LOAD(&c[0][b + u * W]);                                        \
        x1[u] = LOAD(&c[1][b + u * W]);                                        \
        x2[u] = LOAD(&c[2][b + u * W]);                                        \
        x3[u] = LOAD(&c[3][b + u * W]);                                        \
      }                                                                        \
      for (int round = 0; round < 10; ++round) {                               \
        for (int u = 0; u < U; ++u) {                                          \
          V e0 = MUL(x0[u], m0), o0 = MUL(ODD_DOWN(x0[u]), m0);                \
          V e1 = MUL(x2[u], m1), o1 = MUL(ODD_DOWN(x2[u]), m1);                \
          x0[u] = XOR3(HI(e1, o1), x1[u], keys[round][0]);                     \
          x2[u] = XOR3(HI(e0, o0), x3[u], keys[round][1]);                     \
          x1[u] = LO(e1, o1);                                                  \
          x3[u] = LO(e0, o0);                                                  \
        }                                                                      \
      }                                                                        \
      for (int u = 0; u < U; ++u) {                                            \
        STORE(&c[0][b + u * W], x0[u]);                                        \
        STORE(&c[1][b + u * W], x1[u]);                                        \
        STORE(&c[2][b + u * W], x2[u]);                                        \
        STORE(&c[3][b + u * W], x3[u]);                                        \
      }                                                                        \
    }                                                                          \
    for (int64_t b = 0; b < count; ++b)                                        \
      for (int j = 0; j < 4; ++j)                                              \
        words[4 * b + j] = c[j][b];                                            \
  }

// GCC 12's AVX-512 intrinsics pass an undefined vector as the masked-off
// source, which -Wmaybe-uninitialized reports as a use.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#define MP_ODD_DOWN512(v) _mm512_shuffle_epi32(v, _MM_PERM_DDBB)
#define MP_HI512(e, o)                                                         \
  _mm512_mask_shuffle_epi32(o, __mmask16(0x5555), e, _MM_PERM_DDBB)
#define MP_LO512(e, o)                                                         \
  _mm512_mask_shuffle_epi32(e, __mmask16(0xAAAA), o, _MM_PERM_CCAA)
#define MP_XOR3_512(a, b, c) _mm512_ternarylogic_epi32(a, b, c, 0x96)
#define MP_LOAD512(p) _mm512_load_si512(p)
#define MP_STORE512(p, v) _mm512_store_si512(p, v)
MP_PHILOX_VECTOR(Avx512, __attribute__((target("avx512f"))), __m512i, 16, 2,
                 _mm512_mul_epu32, MP_ODD_DOWN512, MP_HI512, MP_LO512,
                 MP_XOR3_512, _mm512_set1_epi32, MP_LOAD512, MP_STORE512)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#define MP_ODD_DOWN256(v) _mm256_shuffle_epi32(v, 0xF5)
#define MP_HI256(e, o)                                                         \
  _mm256_blend_epi32(_mm256_shuffle_epi32(e, 0xF5), o, 0xAA)
#define MP_LO256(e, o)                                                         \
  _mm256_blend_epi32(e, _mm256_shuffle_epi32(o, 0xA0), 0xAA)
#define MP_XOR3_256(a, b, c) _mm256_xor_si256(_mm256_xor_si256(a, b), c)
#define MP_LOAD256(p) _mm256_load_si256(reinterpret_cast<const __m256i *>(p))
#define MP_STORE256(p, v) _mm256_store_si256(reinterpret_cast<__m256i *>(p), v)
MP_PHILOX_VECTOR(Avx2, MP_TARGET_AVX2, __m256i, 8, 2, _mm256_mul_epu32,
                 MP_ODD_DOWN256, MP_HI256, MP_LO256, MP_XOR3_256,
                 _mm256_set1_epi32, MP_LOAD256, MP_STORE256)
#undef MP_ODD_DOWN512
#undef MP_HI512
#undef MP_LO512
#undef MP_XOR3_512
#undef MP_LOAD512
#undef MP_STORE512
#undef MP_ODD_DOWN256
#undef MP_HI256
#undef MP_LO256
#undef MP_XOR3_256
#undef MP_LOAD256
#undef MP_STORE256
#undef MP_PHILOX_VECTOR
#else
// Elsewhere the vector variants are the portable loop.
void philoxWordsAvx512(uint64_t seed, uint64_t stream, uint64_t first,
                       int64_t count, uint32_t *words) {
  philoxWordsBase(seed, stream, first, count, words);
}
void philoxWordsAvx2(uint64_t seed, uint64_t stream, uint64_t first,
                     int64_t count, uint32_t *words) {
  philoxWordsBase(seed, stream, first, count, words);
}
#endif

/// e[k] = expF(x[k] - shift): the exponentials of a softmax row.
#define MP_EXP_LOOP(SUFFIX, TARGET)                                            \
  TARGET void expShifted##SUFFIX(const float *x, float shift, float *e,        \
                                 int64_t n) {                                  \
    for (int64_t k = 0; k < n; ++k)                                            \
      e[k] = expF(x[k] - shift);                                               \
  }
MP_EXP_LOOP(Avx512, MP_TARGET_AVX512)
MP_EXP_LOOP(Avx2, MP_TARGET_AVX2)
MP_EXP_LOOP(Base, )
#undef MP_EXP_LOOP

} // namespace

void mp::rt::expShifted(const float *x, float shift, float *e, int64_t n) {
  byIsa(expShiftedAvx512, expShiftedAvx2, expShiftedBase, x, shift, e, n);
}

namespace {

void philoxWords(uint64_t seed, uint64_t stream, uint64_t first,
                 int64_t count, uint32_t *words) {
  byIsa(philoxWordsAvx512, philoxWordsAvx2, philoxWordsBase, seed, stream,
        first, count, words);
}

/// y[k] = x[k] * scale where mask word k keeps its element, else +0: the
/// reference loop's select, N lanes at a time.
template <int N>
MP_INLINE void dropoutRun(const uint32_t *words, const float *x, int64_t n,
                          uint32_t threshold, float scale, float *y) {
  typedef typename VecOf<N>::U U;
  typedef typename VecOf<N>::I I;
  // A word's top 24 bits and the threshold (at most 2^24) compare as signed
  // integers, which AVX2 has an instruction for.
  int64_t k = 0;
  for (; k + N <= n; k += N) {
    U w;
    std::memcpy(&w, words + k, sizeof w);
    storeVec<N, N>(select<N>((U)((I)(w >> 8) >= int32_t(threshold)),
                             loadVec<N, N>(x + k, N) * scale, Vec<N>{}),
                   y + k, N);
  }
  for (; k < n; ++k)
    y[k] = selectF(mpDropoutKeeps(words[k], threshold), x[k] * scale, 0.0f);
}
#define MP_DROPOUT_LOOP(SUFFIX, TARGET, N)                                     \
  TARGET void dropoutLoop##SUFFIX(const uint32_t *words, const float *x,       \
                                  int64_t n, uint32_t threshold, float scale,  \
                                  float *y) {                                  \
    dropoutRun<N>(words, x, n, threshold, scale, y);                           \
  }
MP_DROPOUT_LOOP(Avx512, MP_TARGET_AVX512, 16)
MP_DROPOUT_LOOP(Avx2, MP_TARGET_AVX2, 8)
MP_DROPOUT_LOOP(Base, , 4)
#undef MP_DROPOUT_LOOP

/// The loop of kind K for this CPU.
template <mpUnaryKind K> void unaryLoop(const float *x, int64_t n, float *y) {
  byIsa(unaryLoopAvx512<K>, unaryLoopAvx2<K>, unaryLoopBase<K>, x, n, y);
}

template <mpActivationGradKind K>
void gradLoop(const float *g, const float *s, int64_t n, float *dx) {
  byIsa(gradLoopAvx512<K>, gradLoopAvx2<K>, gradLoopBase<K>, g, s, n, dx);
}

/// y = kind(x) over n elements; y overlaps no input (nor do dx below).
void unaryTile(mpUnaryKind kind, const float *x, int64_t n, float *y) {
  switch (kind) {
  case MP_NEG: return unaryLoop<MP_NEG>(x, n, y);
  case MP_RELU: return unaryLoop<MP_RELU>(x, n, y);
  case MP_SQUARE: return unaryLoop<MP_SQUARE>(x, n, y);
  case MP_GELU: return unaryLoop<MP_GELU>(x, n, y);
  case MP_GELU_TANH: return unaryLoop<MP_GELU_TANH>(x, n, y);
  case MP_TANH: return unaryLoop<MP_TANH>(x, n, y);
  case MP_SIGMOID: return unaryLoop<MP_SIGMOID>(x, n, y);
  case MP_EXP: return unaryLoop<MP_EXP>(x, n, y);
  case MP_ERF: return unaryLoop<MP_ERF>(x, n, y);
  default: // libm's calls: one element at a time
    for (int64_t i = 0; i < n; ++i)
      y[i] = unary(kind, x[i]);
  }
}

void activationGradTile(mpActivationGradKind kind, const float *g,
                        const float *s, int64_t n, float *dx) {
  switch (kind) {
  case MP_RELU_GRAD: return gradLoop<MP_RELU_GRAD>(g, s, n, dx);
  case MP_GELU_GRAD: return gradLoop<MP_GELU_GRAD>(g, s, n, dx);
  case MP_GELU_TANH_GRAD: return gradLoop<MP_GELU_TANH_GRAD>(g, s, n, dx);
  case MP_TANH_GRAD: return gradLoop<MP_TANH_GRAD>(g, s, n, dx);
  case MP_SIGMOID_GRAD: return gradLoop<MP_SIGMOID_GRAD>(g, s, n, dx);
  }
}

/// Whether an elementwise kernel may read its f32 operands and write its
/// f32 result where they are, without tiles: f32 throughout and a result
/// that overlaps no operand.
bool directF32(mpElementType compute, mpTensor *out,
                std::initializer_list<const mpTensor *> inputs) {
  if (compute != MP_F32 || out->elementType != MP_F32 ||
      overlapsAny(out, inputs))
    return false;
  for (const mpTensor *t : inputs)
    if (t->elementType != MP_F32)
      return false;
  return true;
}

/// Whether `out` and `inputs` are all stored as `type`, bf16 or f16,
/// computed in f32 or in `type` (f32 arithmetic on exact operands, rounded
/// once to `type` either way), `out` overlaps none of them, and for f16
/// this CPU's loops convert f16 lanes (f16LanesSupported): the case of the
/// bf16 and f16 loops.
bool narrowThroughout(mpElementType type, mpElementType compute,
                      const mpTensor *out,
                      std::initializer_list<const mpTensor *> inputs) {
  if (!libraryKernelsEnabled() || (type != MP_BF16 && type != MP_F16) ||
      out->elementType != type || (compute != MP_F32 && compute != type) ||
      (type == MP_F16 && !f16LanesSupported()) || overlapsAny(out, inputs))
    return false;
  for (const mpTensor *t : inputs)
    if (t->elementType != type)
      return false;
  return true;
}

/// fastUnary's ReLU through f16UnaryLoop where narrowThroughout. Out of
/// line, as narrowBinary.
__attribute__((noinline)) bool f16Unary(mpUnaryKind kind, const mpTensor *in,
                                        mpTensor *out, mpElementType compute,
                                        int64_t grain) {
  if (kind != MP_RELU || !narrowThroughout(MP_F16, compute, out, {in}))
    return false;
  auto loop = forIsa(f16UnaryLoopAvx512<MP_RELU>, f16UnaryLoopAvx2<MP_RELU>,
                     f16UnaryLoopBase<MP_RELU>);
  auto *x = static_cast<const uint16_t *>(in->data);
  auto *y = static_cast<uint16_t *>(out->data);
  forEachTile(mpNumElements(in), grain,
              [&](int64_t i, int64_t n) { loop(x + i, n, y + i); });
  return true;
}

/// fastActivationGrad's ReLU gradient through f16GradLoop where
/// narrowThroughout.
__attribute__((noinline)) bool f16ActivationGrad(mpActivationGradKind kind,
                                                 const mpTensor *dy,
                                                 const mpTensor *saved,
                                                 mpTensor *dx,
                                                 mpElementType compute,
                                                 int64_t grain) {
  if (kind != MP_RELU_GRAD ||
      !narrowThroughout(MP_F16, compute, dx, {dy, saved}))
    return false;
  auto loop = forIsa(f16GradLoopAvx512<MP_RELU_GRAD>,
                     f16GradLoopAvx2<MP_RELU_GRAD>,
                     f16GradLoopBase<MP_RELU_GRAD>);
  auto *g = static_cast<const uint16_t *>(dy->data);
  auto *s = static_cast<const uint16_t *>(saved->data);
  auto *d = static_cast<uint16_t *>(dx->data);
  forEachTile(mpNumElements(dy), grain,
              [&](int64_t i, int64_t n) { loop(g + i, s + i, n, d + i); });
  return true;
}

/// fastUnary through bf16UnaryLoop, where narrowThroughout and the kind has
/// a vector loop; false otherwise. Out of line, as narrowBinary.
__attribute__((noinline)) bool bf16Unary(mpUnaryKind kind, const mpTensor *in,
                                         mpTensor *out, mpElementType compute,
                                         int64_t grain) {
  using Loop = void (*)(const uint16_t *, int64_t, uint16_t *);
  Loop loop = nullptr;
  switch (kind) {
#define MP_BY_KIND(K)                                                          \
  case K:                                                                      \
    loop = forIsa<Loop>(bf16UnaryLoopAvx512<K>, bf16UnaryLoopAvx2<K>,          \
                        bf16UnaryLoopBase<K>);                                 \
    break;
    MP_BY_KIND(MP_NEG)
    MP_BY_KIND(MP_RELU)
    MP_BY_KIND(MP_SQUARE)
    MP_BY_KIND(MP_GELU)
    MP_BY_KIND(MP_GELU_TANH)
    MP_BY_KIND(MP_TANH)
    MP_BY_KIND(MP_SIGMOID)
    MP_BY_KIND(MP_EXP)
    MP_BY_KIND(MP_ERF)
#undef MP_BY_KIND
  default:
    return false;
  }
  if (!narrowThroughout(MP_BF16, compute, out, {in}))
    return false;
  auto *x = static_cast<const uint16_t *>(in->data);
  auto *y = static_cast<uint16_t *>(out->data);
  forEachTile(mpNumElements(in), grain, [&](int64_t i, int64_t n) {
    loop(x + i, n, y + i);
  });
  return true;
}

/// fastActivationGrad through bf16GradLoop where narrowThroughout.
__attribute__((noinline)) bool bf16ActivationGrad(mpActivationGradKind kind,
                                                  const mpTensor *dy,
                                                  const mpTensor *saved,
                                                  mpTensor *dx,
                                                  mpElementType compute,
                                                  int64_t grain) {
  using Loop =
      void (*)(const uint16_t *, const uint16_t *, int64_t, uint16_t *);
  Loop loop = nullptr;
  switch (kind) {
#define MP_BY_KIND(K)                                                          \
  case K:                                                                      \
    loop = forIsa<Loop>(bf16GradLoopAvx512<K>, bf16GradLoopAvx2<K>,            \
                        bf16GradLoopBase<K>);                                  \
    break;
    MP_BY_KIND(MP_RELU_GRAD)
    MP_BY_KIND(MP_GELU_GRAD)
    MP_BY_KIND(MP_GELU_TANH_GRAD)
    MP_BY_KIND(MP_TANH_GRAD)
    MP_BY_KIND(MP_SIGMOID_GRAD)
#undef MP_BY_KIND
  }
  // Every kind has a loop; a value outside the enum (from the C API) has
  // none. (No default label: clang's -Wcovered-switch-default.)
  if (!loop || !narrowThroughout(MP_BF16, compute, dx, {dy, saved}))
    return false;
  auto *g = static_cast<const uint16_t *>(dy->data);
  auto *s = static_cast<const uint16_t *>(saved->data);
  auto *d = static_cast<uint16_t *>(dx->data);
  forEachTile(mpNumElements(dy), grain, [&](int64_t i, int64_t n) {
    loop(g + i, s + i, n, d + i);
  });
  return true;
}

bool fastUnary(mpUnaryKind kind, const mpTensor *in, mpTensor *out,
               mpElementType compute) {
  if (!tileTypes({in->elementType, out->elementType, compute}))
    return false;
  bool cheap = kind == MP_NEG || kind == MP_RELU || kind == MP_SQUARE;
  int64_t grain = cheap ? kCheapTiles : kCostlyTiles;
  if (bf16Unary(kind, in, out, compute, grain) ||
      f16Unary(kind, in, out, compute, grain))
    return true;
  if (directF32(compute, out, {in})) {
    auto *x = static_cast<const float *>(in->data);
    auto *y = static_cast<float *>(out->data);
    forEachTile(mpNumElements(in), grain, [&](int64_t i, int64_t n) {
      unaryTile(kind, x + i, n, y + i);
    });
    return true;
  }
  forEachTile(mpNumElements(in), grain, [&](int64_t i, int64_t n) {
    float x[kTile], y[kTile];
    loadF32(in->data, in->elementType, i, n, x);
    if (roundsFrom(compute, in->elementType))
      roundF32(x, n, compute);
    unaryTile(kind, x, n, y);
    if (roundsFrom(compute, out->elementType))
      roundF32(y, n, compute);
    storeF32(y, n, out->data, out->elementType, i);
  });
  return true;
}

bool fastActivationGrad(mpActivationGradKind kind, const mpTensor *dy,
                        const mpTensor *saved, mpTensor *dx,
                        mpElementType compute) {
  if (!tileTypes(
          {dy->elementType, saved->elementType, dx->elementType, compute}))
    return false;
  bool cheap =
      kind == MP_RELU_GRAD || kind == MP_TANH_GRAD || kind == MP_SIGMOID_GRAD;
  int64_t grain = cheap ? kCheapTiles : kCostlyTiles;
  if (bf16ActivationGrad(kind, dy, saved, dx, compute, grain) ||
      f16ActivationGrad(kind, dy, saved, dx, compute, grain))
    return true;
  if (directF32(compute, dx, {dy, saved})) {
    auto *g = static_cast<const float *>(dy->data);
    auto *s = static_cast<const float *>(saved->data);
    auto *d = static_cast<float *>(dx->data);
    forEachTile(mpNumElements(dy), grain, [&](int64_t i, int64_t n) {
      activationGradTile(kind, g + i, s + i, n, d + i);
    });
    return true;
  }
  forEachTile(mpNumElements(dy), grain, [&](int64_t i, int64_t n) {
    float g[kTile], s[kTile], d[kTile];
    loadF32(dy->data, dy->elementType, i, n, g);
    loadF32(saved->data, saved->elementType, i, n, s);
    if (roundsFrom(compute, dy->elementType))
      roundF32(g, n, compute);
    if (roundsFrom(compute, saved->elementType))
      roundF32(s, n, compute);
    activationGradTile(kind, g, s, n, d);
    if (roundsFrom(compute, dx->elementType))
      roundF32(d, n, compute);
    storeF32(d, n, dx->data, dx->elementType, i);
  });
  return true;
}

void binaryTile(mpBinaryKind kind, const float *a, const float *b, int64_t n,
                float *c) {
  switch (kind) {
  case MP_ADD:
    return each2(a, b, c, n, [](float x, float y) { return x + y; });
  case MP_SUB:
    return each2(a, b, c, n, [](float x, float y) { return x - y; });
  case MP_MUL:
    return each2(a, b, c, n, [](float x, float y) { return x * y; });
  case MP_DIV:
    return each2(a, b, c, n, [](float x, float y) { return x / y; });
  default:
    return each2(a, b, c, n,
                 [kind](float x, float y) { return binary(kind, x, y); });
  }
}

/// The variant of bf16BinaryLoop (`type` bf16) or f16BinaryLoop for `kind`
/// on this CPU, or null.
using NarrowLoop = void (*)(const uint16_t *, const uint16_t *, int64_t,
                            uint16_t *);
NarrowLoop narrowBinaryLoop(mpBinaryKind kind, mpElementType type) {
#define MP_BY_KIND(K)                                                          \
  case K:                                                                      \
    return type == MP_BF16                                                     \
               ? forIsa<NarrowLoop>(bf16BinaryLoopAvx512<K>,                   \
                                    bf16BinaryLoopAvx2<K>,                     \
                                    bf16BinaryLoopBase<K>)                     \
               : forIsa<NarrowLoop>(f16BinaryLoopAvx512<K>,                    \
                                    f16BinaryLoopAvx2<K>, f16BinaryLoopBase<K>);
  switch (kind) {
    MP_BY_KIND(MP_ADD)
    MP_BY_KIND(MP_SUB)
    MP_BY_KIND(MP_MUL)
    MP_BY_KIND(MP_DIV)
  default:
    return nullptr;
  }
#undef MP_BY_KIND
}

/// The period of `t` as the output reads it, element i at i % period: a
/// tensor of the output's size (broadcast shapes with its element count are
/// its shape), or a row repeated down the leading dimensions (a bias row)
/// at least 16 long; 0 for any other broadcast.
int64_t narrowPeriod(const mpTensor *t, const mpTensor *out,
                     const int64_t *steps) {
  int64_t n = mpNumElements(out);
  if (mpNumElements(t) == n)
    return n;
  Operand o;
  o.init(t, *out, steps);
  return !o.general && o.inner == 1 && o.period >= 16 ? o.period : 0;
}

/// fastBinary on bf16 (f16) tensors with f32 compute, or bf16 (f16)
/// compute (f32 arithmetic on exact operands, rounded to the storage type,
/// which the store's rounding repeats), where each operand is whole or a
/// repeated row (narrowPeriod): bf16BinaryLoop (f16BinaryLoop) over the
/// runs in which both operands are consecutive; false for anything else.
/// Kept apart from fastBinary (noinline, called before it): GCC compiled
/// fastBinary's tile loops slower with this inlined beside them.
__attribute__((noinline)) bool narrowBinary(mpBinaryKind kind,
                                            const mpTensor *lhs,
                                            const mpTensor *rhs, mpTensor *out,
                                            const int64_t *ls,
                                            const int64_t *rs,
                                            mpElementType compute) {
  int64_t n = mpNumElements(out);
  if (n == 0 || !narrowThroughout(out->elementType, compute, out, {lhs, rhs}))
    return false;
  NarrowLoop loop = narrowBinaryLoop(kind, out->elementType);
  int64_t pa = narrowPeriod(lhs, out, ls), pb = narrowPeriod(rhs, out, rs);
  if (!loop || !pa || !pb)
    return false;
  auto *a = static_cast<const uint16_t *>(lhs->data);
  auto *b = static_cast<const uint16_t *>(rhs->data);
  auto *c = static_cast<uint16_t *>(out->data);
  forEachTile(n, kCheapTiles, [&](int64_t i, int64_t len) {
    for (int64_t j = i, end = i + len; j < end;) {
      int64_t ja = j % pa, jb = j % pb;
      int64_t run = std::min({end - j, pa - ja, pb - jb});
      loop(a + ja, b + jb, run, c + j);
      j += run;
    }
  });
  return true;
}

bool fastBinary(mpBinaryKind kind, const mpTensor *lhs, const mpTensor *rhs,
                mpTensor *out, const int64_t *ls, const int64_t *rs,
                mpElementType compute) {
  if (!tileTypes(
          {lhs->elementType, rhs->elementType, out->elementType, compute}))
    return false;
  Operand l, r;
  l.init(lhs, *out, ls);
  r.init(rhs, *out, rs);
  // f32 throughout: operands read where they lie when a tile is one run of
  // them, and the result written in place.
  bool direct = directF32(compute, out, {lhs, rhs});
  forEachTile(mpNumElements(out), kCheapTiles, [&](int64_t i, int64_t n) {
    float a[kTile], b[kTile], c[kTile];
    const float *pa = direct ? l.direct(i, n) : nullptr;
    const float *pb = direct ? r.direct(i, n) : nullptr;
    if (!pa) {
      l.load(i, n, a);
      if (roundsFrom(compute, lhs->elementType))
        roundF32(a, n, compute);
      pa = a;
    }
    if (!pb) {
      r.load(i, n, b);
      if (roundsFrom(compute, rhs->elementType))
        roundF32(b, n, compute);
      pb = b;
    }
    if (direct) {
      binaryTile(kind, pa, pb, n, static_cast<float *>(out->data) + i);
      return;
    }
    binaryTile(kind, pa, pb, n, c);
    if (roundsFrom(compute, out->elementType))
      roundF32(c, n, compute);
    storeF32(c, n, out->data, out->elementType, i);
  });
  return true;
}

} // namespace

extern "C" mpStatus mpUnary(mpUnaryKind kind, const mpTensor *in,
                            mpTensor *out, mpElementType compute) {
  if (!valid(in) || !valid(out) || !sameShape(in, out) ||
      !isFloatType(compute) || kind < MP_NEG || kind > MP_COS)
    return MP_ERROR_INVALID_ARGUMENT;
  if (fastUnary(kind, in, out, compute))
    return MP_OK;
  if (compute == MP_F64)
    map1<double>(in, out, compute, [&](double x) { return unary(kind, x); });
  else
    map1<float>(in, out, compute, [&](float x) { return unary(kind, x); });
  return MP_OK;
}

extern "C" mpStatus mpActivationGrad(mpActivationGradKind kind,
                                     const mpTensor *dy, const mpTensor *saved,
                                     mpTensor *dx, mpElementType compute) {
  if (!valid(dy) || !valid(saved) || !valid(dx) || !sameShape(dy, saved) ||
      !sameShape(dy, dx) || !isFloatType(compute) || kind < MP_RELU_GRAD ||
      kind > MP_SIGMOID_GRAD)
    return MP_ERROR_INVALID_ARGUMENT;
  if (fastActivationGrad(kind, dy, saved, dx, compute))
    return MP_OK;
  int64_t n = mpNumElements(dy);
  for (int64_t i = 0; i < n; ++i) {
    if (compute == MP_F64) {
      double r = activationGrad(kind, load(dy->data, dy->elementType, i),
                                load(saved->data, saved->elementType, i));
      store(dx->data, dx->elementType, i, r);
    } else {
      float g = roundCompute(compute, float(load(dy->data, dy->elementType, i)));
      float s = roundCompute(compute,
                             float(load(saved->data, saved->elementType, i)));
      store(dx->data, dx->elementType, i,
            roundCompute(compute, activationGrad(kind, g, s)));
    }
  }
  return MP_OK;
}

extern "C" mpStatus mpBinary(mpBinaryKind kind, const mpTensor *lhs,
                             const mpTensor *rhs, mpTensor *out,
                             mpElementType compute) {
  if (!valid(lhs) || !valid(rhs) || !valid(out) || !isFloatType(compute) ||
      kind < MP_ADD || kind > MP_MINIMUM)
    return MP_ERROR_INVALID_ARGUMENT;
  // Per output dimension, the stride of each operand (0 where it broadcasts).
  int32_t rank = out->rank;
  int64_t ls[MP_MAX_RANK] = {}, rs[MP_MAX_RANK] = {};
  if (!broadcastStrides(*lhs, *rhs, *out, ls, rs))
    return MP_ERROR_INVALID_ARGUMENT;
  if (narrowBinary(kind, lhs, rhs, out, ls, rs, compute) ||
      fastBinary(kind, lhs, rhs, out, ls, rs, compute))
    return MP_OK;
  int64_t n = mpNumElements(out);
  for (int64_t i = 0; i < n; ++i) {
    int64_t li = 0, ri = 0, rest = i;
    for (int32_t d = rank - 1; d >= 0; --d) {
      int64_t c = rest % out->shape[d];
      rest /= out->shape[d];
      li += c * ls[d];
      ri += c * rs[d];
    }
    double a = load(lhs->data, lhs->elementType, li);
    double b = load(rhs->data, rhs->elementType, ri);
    double r;
    if (compute == MP_F64)
      r = binary(kind, a, b);
    else
      r = roundCompute(compute,
                       binary(kind, roundCompute(compute, float(a)),
                              roundCompute(compute, float(b))));
    store(out->data, out->elementType, i, r);
  }
  return MP_OK;
}

namespace {

/// Per output element, the flat index of each operand, for `count`
/// operands broadcast to `out`: strides[k] holds operand k's.
template <typename F>
void forEachBroadcast(const mpTensor &out, unsigned count,
                      const int64_t (*strides)[MP_MAX_RANK], F f) {
  int64_t n = mpNumElements(&out);
  int64_t index[3];
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i;
    for (unsigned k = 0; k < count; ++k)
      index[k] = 0;
    for (int32_t d = out.rank - 1; d >= 0; --d) {
      int64_t c = rest % out.shape[d];
      rest /= out.shape[d];
      for (unsigned k = 0; k < count; ++k)
        index[k] += c * strides[k][d];
    }
    f(i, index);
  }
}

int64_t loadInteger(const void *data, mpElementType type, int64_t i) {
  switch (type) {
  case MP_I1: return static_cast<const uint8_t *>(data)[i] != 0;
  case MP_I32: return static_cast<const int32_t *>(data)[i];
  case MP_I64: return static_cast<const int64_t *>(data)[i];
  default: return 0;
  }
}

template <typename T> bool compare(mpCompareKind kind, T a, T b) {
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

} // namespace

extern "C" mpStatus mpCompare(mpCompareKind kind, const mpTensor *lhs,
                              const mpTensor *rhs, mpTensor *out) {
  int64_t strides[2][MP_MAX_RANK] = {};
  if (!validCompare(lhs, rhs, out, kind) ||
      (mpNumElements(out) && (!lhs->data || !rhs->data || !out->data)) ||
      !broadcastStrides(*lhs, *rhs, *out, strides[0], strides[1]))
    return MP_ERROR_INVALID_ARGUMENT;
  auto *result = static_cast<uint8_t *>(out->data);
  mpElementType type = lhs->elementType;
  bool integer = !isFloatType(type);
  forEachBroadcast(*out, 2, strides, [&](int64_t i, const int64_t *at) {
    result[i] = integer ? compare(kind, loadInteger(lhs->data, type, at[0]),
                                  loadInteger(rhs->data, type, at[1]))
                        : compare(kind, load(lhs->data, type, at[0]),
                                  load(rhs->data, type, at[1]));
  });
  return MP_OK;
}

namespace {

/// Select over tiles, across threads, for f32, f16 and bf16 values: the
/// condition loaded (broadcast) as 0 or 1, both values as their bits
/// (loadBits32), chosen by a mask, so every bit of the chosen value is
/// kept, a signalling NaN's too.
bool fastSelect(const mpTensor *cond, const mpTensor *onTrue,
                const mpTensor *onFalse, mpTensor *out,
                const int64_t (*strides)[MP_MAX_RANK]) {
  if (!tileTypes({out->elementType}))
    return false;
  Operand c, a, b;
  c.init(cond, *out, strides[0]);
  a.init(onTrue, *out, strides[1]);
  b.init(onFalse, *out, strides[2]);
  a.read = b.read = loadBits32;
  forEachTile(mpNumElements(out), kCheapTiles, [&](int64_t i, int64_t n) {
    float m[kTile], x[kTile], y[kTile];
    c.load(i, n, m);
    a.load(i, n, x);
    b.load(i, n, y);
    for (int64_t k = 0; k < n; ++k)
      x[k] = selectF(m[k] != 0.0f, x[k], y[k]);
    storeBits32(x, n, out->data, out->elementType, i);
  });
  return true;
}

} // namespace

extern "C" mpStatus mpSelect(const mpTensor *cond, const mpTensor *onTrue,
                             const mpTensor *onFalse, mpTensor *out) {
  int64_t strides[3][MP_MAX_RANK] = {};
  if (!validSelect(cond, onTrue, onFalse, out) ||
      (mpNumElements(out) &&
       (!cond->data || !onTrue->data || !onFalse->data || !out->data)) ||
      !broadcastStridesTo(*cond, *out, strides[0]) ||
      !broadcastStridesTo(*onTrue, *out, strides[1]) ||
      !broadcastStridesTo(*onFalse, *out, strides[2]))
    return MP_ERROR_INVALID_ARGUMENT;
  if (fastSelect(cond, onTrue, onFalse, out, strides))
    return MP_OK;
  size_t size = mpElementSize(out->elementType);
  const auto *c = static_cast<const uint8_t *>(cond->data);
  const auto *t = static_cast<const char *>(onTrue->data);
  const auto *f = static_cast<const char *>(onFalse->data);
  auto *o = static_cast<char *>(out->data);
  forEachBroadcast(*out, 3, strides, [&](int64_t i, const int64_t *at) {
    const char *from = c[at[0]] ? t + at[1] * size : f + at[2] * size;
    std::memcpy(o + i * size, from, size);
  });
  return MP_OK;
}

namespace {

/// Dropout over tiles, across threads: the tile's mask words by the
/// vectorised Philox, then the reference loop's expression per element.
bool fastDropout(const mpTensor *in, mpTensor *out, uint64_t seed,
                 uint64_t stream, uint32_t threshold, float scale,
                 mpElementType compute) {
  if (!tileTypes({in->elementType, out->elementType, compute}))
    return false;
  // f32 in and out, nothing rounded: the tile is read and written in place.
  bool direct = in->elementType == MP_F32 && out->elementType == MP_F32 &&
                !roundsFrom(compute, MP_F32);
  auto apply = forIsa(dropoutLoopAvx512, dropoutLoopAvx2, dropoutLoopBase);
  forEachTile(mpNumElements(in), kCostlyTiles, [&](int64_t i, int64_t n) {
    float x[kTile];
    uint32_t words[kTile];
    philoxWords(seed, stream, uint64_t(i / 4), (n + 3) / 4, words);
    // A select by mask, not a branch: a random mask mispredicts one branch
    // in ten, which cost more than the Philox rounds.
    if (direct) {
      apply(words, static_cast<const float *>(in->data) + i, n, threshold,
            scale, static_cast<float *>(out->data) + i);
      return;
    }
    loadF32(in->data, in->elementType, i, n, x);
    if (roundsFrom(compute, in->elementType))
      roundF32(x, n, compute);
    apply(words, x, n, threshold, scale, x);
    if (roundsFrom(compute, out->elementType))
      roundF32(x, n, compute);
    storeF32(x, n, out->data, out->elementType, i);
  });
  return true;
}

} // namespace

extern "C" mpStatus mpDropout(const mpTensor *in, const mpTensor *seed,
                              mpTensor *out, float rate, int64_t stream,
                              mpElementType compute) {
  if (!valid(in) || !valid(out) || !sameShape(in, out) ||
      !isFloatType(compute) || !validDropout(seed, rate, stream))
    return MP_ERROR_INVALID_ARGUMENT;
  auto s = static_cast<uint64_t>(*static_cast<const int64_t *>(seed->data));
  uint32_t threshold = mpDropoutThreshold(rate);
  float scale = 1.0f / (1.0f - rate);
  int64_t n = mpNumElements(in);
  if (fastDropout(in, out, s, uint64_t(stream), threshold, scale, compute))
    return MP_OK;
  for (int64_t block = 0; block * 4 < n; ++block) {
    mpPhilox4x32 words = mpDropoutBlock(s, uint64_t(stream), uint64_t(block));
    for (int64_t i = block * 4, e = std::min(n, i + 4); i < e; ++i) {
      bool keep = mpDropoutKeeps(words.v[i % 4], threshold);
      if (compute == MP_F64) {
        double x = load(in->data, in->elementType, i);
        store(out->data, out->elementType, i,
              keep ? x / (1.0 - double(rate)) : 0.0);
      } else {
        float x = roundCompute(compute, float(load(in->data, in->elementType, i)));
        store(out->data, out->elementType, i,
              roundCompute(compute, keep ? x * scale : 0.0f));
      }
    }
  }
  return MP_OK;
}

extern "C" mpStatus mpRandomUniform(const mpTensor *seed, mpTensor *out,
                                    double low, double high, int64_t stream) {
  if (!valid(out) || !isFloatType(out->elementType) ||
      !validDropout(seed, 0, stream) || !std::isfinite(low) ||
      !std::isfinite(high) || !(low <= high))
    return MP_ERROR_INVALID_ARGUMENT;
  auto s = static_cast<uint64_t>(*static_cast<const int64_t *>(seed->data));
  int64_t n = mpNumElements(out);
  for (int64_t block = 0; block * 4 < n; ++block) {
    mpPhilox4x32 words = mpDropoutBlock(s, uint64_t(stream), uint64_t(block));
    for (int64_t i = block * 4, e = std::min(n, i + 4); i < e; ++i)
      store(out->data, out->elementType, i,
            low + (high - low) * mpUniformOfWord(words.v[i % 4]));
  }
  return MP_OK;
}

extern "C" mpStatus mpNextSeed(const mpTensor *seed, mpTensor *out) {
  if (!isScalar(seed, MP_I64) || !isScalar(out, MP_I64))
    return MP_ERROR_INVALID_ARGUMENT;
  auto s = static_cast<uint64_t>(*static_cast<const int64_t *>(seed->data));
  *static_cast<int64_t *>(out->data) = static_cast<int64_t>(s + 1);
  return MP_OK;
}
