//===- Gemm.cpp - the runtime's own f32 GEMM ------------------------------===//
//
// The loop nest of a BLIS GEMM, at the sizes of a training step's
// projections (m in the hundreds to thousands, n and k 64 to a few
// thousand):
//
//   for each block of up to 256 along k:
//     pack b's block into panels of kColumns columns, k-major (each thread
//       packs a share of the panels; a barrier makes them visible to all);
//     pack a's block into panels of kRows rows, k-major (each thread packs
//       the panels of its own rows), unless a is read in place (below);
//     for each panel of b, for each group of kRows of the thread's rows of a:
//       the kRows x kColumns tile of c in registers: per step along k, the
//       tile's two vectors of b and a broadcast of each of its rows of a
//       feed 2 kRows FMAs; its lines of c (and of a residual added as it
//       stores) are prefetched before the loop, to be in L1 by then.
//
// AVX-512: 14 x 32 tiles, 28 zmm accumulators. AVX2 with FMA: 6 x 16 tiles,
// 12 ymm accumulators. A panel of b (at most 32 KB) stays in L1 while the
// thread's rows of a stream from its L2. Panels are padded with zeros past
// m and n; a tile computes the columns past n and stores none of them, and
// takes only the rows of a that exist (a tile of fewer rows). An operand
// stored with its panel's lines along k (a transposed rhs, a row-major lhs
// that is packed) is packed by register transposes of 16 x 16 (8 x 8)
// blocks; one with the lines side by side (a row-major rhs, a transposed
// lhs) is copied. The tile adds the bias and an addend when it stores: in
// the first block the caller's (c itself, or a residual laid out as c, read
// where it lies rather than copied into c first), in later blocks what c
// holds (the previous blocks' sums). Each output
// element is a sum in a fixed order (blocks in turn, each in order along k)
// whatever the number of threads. Sums of a's rows or b's columns along k
// (a weight gradient's bias gradient) are added as the lines are packed,
// in order along k like the products, by the thread that packs them.
//
// A row-major a (the activations of a forward product, the output gradient
// of an input gradient's) is not packed: the tile broadcasts its rows'
// elements from where they lie, kRows streams along k. That saves a pass
// over an operand that arrives cold, just written by the op before, and
// with operands in cache it also ran faster (benchmarks/README.md, on
// AVX2) except where the rows lie a multiple of 4 KB apart: then the
// tile's kRows streams and their prefetches all fall in one set of L1, and
// a is packed as before. b is always packed: read in place, a panel's steps
// would lie whole rows apart and crowd a few sets of L1 likewise.
//
// The threads share out the rows of a, as above, or, where a is read in
// place and b has more than 8 panels a thread, the panels of b: each then
// packs the panels it multiplies by every row of a, and no thread waits
// for another's packing (no barrier at all). With operands in cache that
// ran 5-6% faster on AVX2; in the steps, where a arrives cold and each
// thread now reads all of it, about 1% (benchmarks/README.md).
//
//===----------------------------------------------------------------------===//

#include "Gemm.h"

#include "Parallel.h"
#include "Vector.h"

#include <algorithm>
#include <cassert>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

using namespace mp::rt;

namespace {

constexpr int64_t kDepth = 256; // the longest block along k (KC)

/// Addresses this many bytes apart map to the same set of L1.
constexpr int64_t kL1SetStride = 4096;

/// Products below this many multiply-adds stay with oneDNN: packing costs
/// a pass over both operands, and the parallel region a few microseconds.
constexpr int64_t kMinimumProduct = int64_t(1) << 21;

/// In a batch shared out whole matrices at a time, matrices below this many
/// multiply-adds stay with oneDNN: packing them costs about as much as
/// their tiles.
constexpr int64_t kMinimumMatrix = int64_t(1) << 15;

/// A tile: `rows` rows of a times the first `columns` columns of the panel
/// `bp`, over `depth` steps, times `alpha` (when not null),
/// stored into c (row step `ldc`) plus the bias (when given) plus the
/// matrix `addend` (when given, row step `ldc`: c itself, or the caller's
/// residual). The rows of a are the panel `ap` (row i at step x
/// is ap[x * kRows + i]), or for the tiles that read a in place, rows
/// `lda` apart from ap on (ap[i * lda + x]).
using TileFn = void (*)(int64_t depth, const float *ap, int64_t lda,
                        const float *bp, float *c, int64_t ldc,
                        const float *alpha, const float *bias,
                        const float *addend, int64_t columns);

#ifdef MP_X86

// GCC 12's AVX-512 shuffle intrinsics start from _mm512_undefined_ps(),
// `__m512 __Y = __Y;`, which -Wmaybe-uninitialized reports at every
// inlined use.
#if !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

//===----------------------------------------------------------------------===//
// The vector operations of each ISA
//===----------------------------------------------------------------------===//

/// Fetches the lines of `columns` floats from `row` on into L1 (a tile's
/// row of at most 32 floats spans at most three lines).
inline void prefetchRow(const float *row, int64_t columns) {
  for (int64_t j = 0; j < columns; j += 16)
    _mm_prefetch(reinterpret_cast<const char *>(row + j), _MM_HINT_T0);
  _mm_prefetch(reinterpret_cast<const char *>(row + columns - 1), _MM_HINT_T0);
}

/// A lane mask of the first n of 16 lanes.
MP_TARGET_AVX512 inline __mmask16 lanes16(int64_t n) {
  return __mmask16(n >= 16 ? 0xffff : n <= 0 ? 0 : (1u << n) - 1);
}

/// A vmaskmov mask of the first n of 8 lanes.
MP_TARGET_AVX2 inline __m256i lanes8(int64_t n) {
  int32_t count = int32_t(std::clamp<int64_t>(n, 0, 8));
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(count),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// Each ISA's tile shape and vector operations; `loadFirst`, `storeFirst`,
/// `pack`, `packLinesAlongK` and `tileFor` come from MP_GEMM_KERNELS
/// below. `pack` packs lines
/// [0, lines) of an operand, `step` apart and `depth` long (`along` apart
/// along k), into panels `width` wide, one after another: panel p at
/// to + p * width * depth holds to[x * width + l] = line p * width + l at
/// step x, lines past `lines` zero. `packLinesAlongK` packs one panel of
/// `count` lines, `step` apart, that are contiguous along k. Both add each
/// line's elements to sums[line] (when `sums` is not null) one step after
/// another, as they read them.
struct Avx512 {
  using V = __m512;
  static constexpr int64_t kLanes = 16, kRows = 14, kColumns = 32;
  MP_TARGET_AVX512 static V zero() { return _mm512_setzero_ps(); }
  MP_TARGET_AVX512 static V load(const float *p) { return _mm512_loadu_ps(p); }
  MP_TARGET_AVX512 static void store(float *p, V v) { _mm512_storeu_ps(p, v); }
  /// The first n lanes, 0 < n < kLanes (loadFirst, storeFirst).
  MP_TARGET_AVX512 static V loadPartial(const float *p, int64_t n) {
    return _mm512_maskz_loadu_ps(lanes16(n), p);
  }
  MP_TARGET_AVX512 static void storePartial(float *p, V v, int64_t n) {
    _mm512_mask_storeu_ps(p, lanes16(n), v);
  }
  static V loadFirst(const float *p, int64_t n);
  static void storeFirst(float *p, V v, int64_t n);
  MP_TARGET_AVX512 static V broadcast(const float *p) {
    return _mm512_set1_ps(*p);
  }
  MP_TARGET_AVX512 static V fma(V a, V b, V c) {
    return _mm512_fmadd_ps(a, b, c);
  }
  MP_TARGET_AVX512 static V add(V a, V b) { return _mm512_add_ps(a, b); }
  MP_TARGET_AVX512 static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  /// r[i] lane j becomes r[j] lane i: unpacks within 128-bit lanes, then
  /// 128-bit lane shuffles.
  MP_TARGET_AVX512 static void transpose(V r[16]) {
    V t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // r[4 g + c], lane L: rows 4 g .. 4 g + 3 of column 4 L + c.
    for (int g = 0; g < 4; ++g) {
      __m512d u0 = _mm512_castps_pd(t[4 * g]);
      __m512d u1 = _mm512_castps_pd(t[4 * g + 1]);
      __m512d u2 = _mm512_castps_pd(t[4 * g + 2]);
      __m512d u3 = _mm512_castps_pd(t[4 * g + 3]);
      r[4 * g] = _mm512_castpd_ps(_mm512_unpacklo_pd(u0, u2));
      r[4 * g + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(u0, u2));
      r[4 * g + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(u1, u3));
      r[4 * g + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(u1, u3));
    }
    for (int c = 0; c < 4; ++c) {
      V lo01 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
      V hi01 = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
      V lo23 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
      V hi23 = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
      t[c] = _mm512_shuffle_f32x4(lo01, lo23, 0x88);
      t[8 + c] = _mm512_shuffle_f32x4(lo01, lo23, 0xdd);
      t[4 + c] = _mm512_shuffle_f32x4(hi01, hi23, 0x88);
      t[12 + c] = _mm512_shuffle_f32x4(hi01, hi23, 0xdd);
    }
    for (int i = 0; i < 16; ++i)
      r[i] = t[i];
  }
  static void pack(const float *from, int64_t step, int64_t along,
                   int64_t lines, int64_t width, int64_t depth, float *to,
                   float *sums);
  static void packLinesAlongK(const float *from, int64_t step, int64_t count,
                              int64_t width, int64_t depth, float *to,
                              float *sums);
  static TileFn tileFor(int64_t rows, bool inPlace);
};

/// AVX2 with FMA (MP_TARGET_AVX2).
struct Avx2 {
  using V = __m256;
  static constexpr int64_t kLanes = 8, kRows = 6, kColumns = 16;
  MP_TARGET_AVX2 static V zero() { return _mm256_setzero_ps(); }
  MP_TARGET_AVX2 static V load(const float *p) { return _mm256_loadu_ps(p); }
  MP_TARGET_AVX2 static void store(float *p, V v) { _mm256_storeu_ps(p, v); }
  // vmaskmov only for partial vectors: it is microcoded on some AMD cores.
  MP_TARGET_AVX2 static V loadPartial(const float *p, int64_t n) {
    return _mm256_maskload_ps(p, lanes8(n));
  }
  MP_TARGET_AVX2 static void storePartial(float *p, V v, int64_t n) {
    _mm256_maskstore_ps(p, lanes8(n), v);
  }
  static V loadFirst(const float *p, int64_t n);
  static void storeFirst(float *p, V v, int64_t n);
  MP_TARGET_AVX2 static V broadcast(const float *p) {
    return _mm256_broadcast_ss(p);
  }
  MP_TARGET_AVX2 static V fma(V a, V b, V c) {
    return _mm256_fmadd_ps(a, b, c);
  }
  MP_TARGET_AVX2 static V add(V a, V b) { return _mm256_add_ps(a, b); }
  MP_TARGET_AVX2 static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  MP_TARGET_AVX2 static void transpose(V r[8]) {
    V t[8], u[8];
    for (int i = 0; i < 4; ++i) {
      t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
      t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
    }
    // u[4 h + c], 128-bit lane L: rows 4 h .. 4 h + 3 of column 4 L + c.
    for (int h = 0; h < 2; ++h) {
      V *s = t + 4 * h;
      u[4 * h] = _mm256_shuffle_ps(s[0], s[2], 0x44);
      u[4 * h + 1] = _mm256_shuffle_ps(s[0], s[2], 0xee);
      u[4 * h + 2] = _mm256_shuffle_ps(s[1], s[3], 0x44);
      u[4 * h + 3] = _mm256_shuffle_ps(s[1], s[3], 0xee);
    }
    for (int c = 0; c < 4; ++c) {
      r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
      r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
    }
  }
  static void pack(const float *from, int64_t step, int64_t along,
                   int64_t lines, int64_t width, int64_t depth, float *to,
                   float *sums);
  static void packLinesAlongK(const float *from, int64_t step, int64_t count,
                              int64_t width, int64_t depth, float *to,
                              float *sums);
  static TileFn tileFor(int64_t rows, bool inPlace);
};

//===----------------------------------------------------------------------===//
// Packing and tiles, once per ISA
//===----------------------------------------------------------------------===//

// The tile is two vectors wide: kColumns = 2 kLanes.
#define MP_GEMM_KERNELS(ISA, TARGET)                                           \
  /* p[0, n) and zeros: nothing past n is read, nothing at all for n <= 0      \
     (a masked access whose address lies past a buffer is not made), and       \
     whole vectors without a mask. */                                          \
  TARGET inline ISA::V ISA::loadFirst(const float *p, int64_t n) {             \
    if (n >= kLanes)                                                           \
      return load(p);                                                          \
    return n > 0 ? loadPartial(p, n) : zero();                                 \
  }                                                                            \
  /* Stores lanes [0, n) of v, likewise. */                                    \
  TARGET inline void ISA::storeFirst(float *p, V v, int64_t n) {               \
    if (n >= kLanes)                                                           \
      store(p, v);                                                             \
    else if (n > 0)                                                            \
      storePartial(p, v, n);                                                   \
  }                                                                            \
                                                                               \
  TARGET void ISA::pack(const float *from, int64_t step, int64_t along,        \
                        int64_t lines, int64_t width, int64_t depth,           \
                        float *to, float *sums) {                              \
    if (step != 1) {                                                           \
      for (int64_t p = 0; p * width < lines; ++p)                              \
        packLinesAlongK(from + p * width * step, step,                         \
                        std::min(width, lines - p * width), width, depth,      \
                        to + p * width * depth,                                \
                        sums ? sums + p * width : nullptr);                    \
      return;                                                                  \
    }                                                                          \
    /* Each step's lines are adjacent. kGroup steps at a time, each panel      \
       copies its share of their runs, zero-padded, into kGroup consecutive    \
       steps of its own (one run of stores, not one store in every panel per   \
       step); the sums then add the runs just read. A panel narrower than      \
       whole vectors (a's, kRows wide) takes whole-vector stores all the       \
       same: the lanes past its width fall on the panel's next step, which is  \
       stored after them. Only the last step's are masked. */                  \
    constexpr int64_t kGroup = 16;                                             \
    for (int64_t x0 = 0; x0 < depth; x0 += kGroup) {                           \
      int64_t x1 = std::min(depth, x0 + kGroup);                               \
      for (int64_t p = 0; p * width < lines; ++p)                              \
        for (int64_t l0 = 0; l0 < width; l0 += kLanes) {                       \
          const float *line = from + p * width + l0;                           \
          float *slot = to + p * depth * width + l0;                           \
          int64_t count = lines - p * width - l0;                              \
          for (int64_t x = x0; x < x1; ++x)                                    \
            storeFirst(slot + x * width, loadFirst(line + x * along, count),   \
                       x + 1 < depth ? kLanes : width - l0);                   \
        }                                                                      \
      if (sums)                                                                \
        for (int64_t x = x0; x < x1; ++x)                                      \
          for (int64_t l = 0; l < lines; l += kLanes)                          \
            storeFirst(sums + l,                                               \
                       add(loadFirst(sums + l, lines - l),                     \
                           loadFirst(from + x * along + l, lines - l)),        \
                       lines - l);                                             \
    }                                                                          \
  }                                                                            \
                                                                               \
  TARGET void ISA::packLinesAlongK(const float *from, int64_t step,            \
                                   int64_t count, int64_t width,               \
                                   int64_t depth, float *to, float *sums) {    \
    /* Each line is contiguous along k: kLanes lines by kLanes                 \
       steps at a time, transposed in registers, where their sums add one      \
       step after another (lanes past `count` stay zero). */                   \
    for (int64_t l0 = 0; l0 < width; l0 += kLanes) {                           \
      bool summing = sums && l0 < count;                                       \
      int64_t summed = std::min(kLanes, count - l0);                           \
      V sum = summing ? loadFirst(sums + l0, summed) : zero();                 \
      for (int64_t x0 = 0; x0 < depth; x0 += kLanes) {                         \
        int64_t length = std::min(kLanes, depth - x0);                         \
        V r[kLanes];                                                           \
        for (int64_t l = 0; l < kLanes; ++l)                                   \
          r[l] = l0 + l < count                                                \
                     ? loadFirst(from + (l0 + l) * step + x0, length)          \
                     : zero();                                                 \
        transpose(r);                                                          \
        for (int64_t x = 0; x < length; ++x) {                                 \
          storeFirst(to + (x0 + x) * width + l0, r[x], width - l0);            \
          if (summing)                                                         \
            sum = add(sum, r[x]);                                              \
        }                                                                      \
      }                                                                        \
      if (summing)                                                             \
        storeFirst(sums + l0, sum, summed);                                    \
    }                                                                          \
  }                                                                            \
                                                                               \
  template <int R, bool kInPlace>                                              \
  TARGET void tile##ISA(int64_t depth, const float *ap, int64_t lda,           \
                        const float *bp, float *c, int64_t ldc,                \
                        const float *alpha, const float *bias,                 \
                        const float *addend, int64_t columns) {                \
    using V = ISA::V;                                                          \
    constexpr int64_t kLanes = ISA::kLanes;                                    \
    V acc[R][2];                                                               \
    _Pragma("GCC unroll 14") for (int i = 0; i < R; ++i) acc[i][0] =           \
        acc[i][1] = ISA::zero();                                               \
    /* Row i of a at step x: aRows[i][x * kStep]. */                           \
    constexpr int64_t kStep = kInPlace ? 1 : ISA::kRows;                       \
    const float *aRows[R];                                                     \
    _Pragma("GCC unroll 14") for (int i = 0; i < R; ++i) aRows[i] =            \
        kInPlace ? ap + i * lda : ap + i;                                      \
    /* The tile's lines of c and of the addend, fetched while it */            \
    /* multiplies: in a step they are cold, and the stores and loads after */  \
    /* the loop would otherwise wait for them. */                              \
    _Pragma("GCC unroll 14") for (int i = 0; i < R; ++i) {                     \
      prefetchRow(c + i * ldc, columns);                                       \
      if (addend && addend != c)                                               \
        prefetchRow(addend + i * ldc, columns);                                \
    }                                                                          \
    _Pragma("GCC unroll 4") for (int64_t x = 0; x < depth; ++x) {              \
      V b0 = ISA::load(bp), b1 = ISA::load(bp + kLanes);                       \
      _Pragma("GCC unroll 14") for (int i = 0; i < R; ++i) {                   \
        V a = ISA::broadcast(aRows[i] + x * kStep);                            \
        acc[i][0] = ISA::fma(a, b0, acc[i][0]);                                \
        acc[i][1] = ISA::fma(a, b1, acc[i][1]);                                \
      }                                                                        \
      bp += ISA::kColumns;                                                     \
    }                                                                          \
    int64_t high = columns - kLanes;                                           \
    V scale = alpha ? ISA::broadcast(alpha) : ISA::zero();                     \
    V bias0 = ISA::zero(), bias1 = ISA::zero();                                \
    if (bias) {                                                                \
      bias0 = ISA::loadFirst(bias, columns);                                   \
      bias1 = ISA::loadFirst(bias + kLanes, high);                             \
    }                                                                          \
    _Pragma("GCC unroll 14") for (int i = 0; i < R; ++i) {                     \
      float *row = c + i * ldc;                                                \
      V v0 = acc[i][0], v1 = acc[i][1];                                        \
      if (alpha) {                                                             \
        v0 = ISA::mul(v0, scale);                                              \
        v1 = ISA::mul(v1, scale);                                              \
      }                                                                        \
      if (bias) {                                                              \
        v0 = ISA::add(v0, bias0);                                              \
        v1 = ISA::add(v1, bias1);                                              \
      }                                                                        \
      if (addend) {                                                            \
        const float *from = addend + i * ldc;                                  \
        v0 = ISA::add(v0, ISA::loadFirst(from, columns));                      \
        v1 = ISA::add(v1, ISA::loadFirst(from + kLanes, high));                \
      }                                                                        \
      ISA::storeFirst(row, v0, columns);                                       \
      ISA::storeFirst(row + kLanes, v1, high);                                 \
    }                                                                          \
  }                                                                            \
                                                                               \
  TileFn ISA::tileFor(int64_t rows, bool inPlace) {                            \
    auto table = [](auto inPlaceTag) {                                         \
      return tileTable<ISA>(                                                   \
          [](auto r) -> TileFn {                                               \
            return tile##ISA<decltype(r)::value + 1,                           \
                             decltype(inPlaceTag)::value>;                     \
          },                                                                   \
          std::make_index_sequence<ISA::kRows>());                             \
    };                                                                         \
    return (inPlace ? table(std::true_type())                                  \
                    : table(std::false_type()))[rows - 1];                     \
  }

/// The tiles of 1 .. kRows rows, tileOf(integral_constant<R - 1>) for R.
template <typename Isa, typename TileOf, size_t... R>
const TileFn *tileTable(TileOf tileOf, std::index_sequence<R...>) {
  static const TileFn tiles[] = {
      tileOf(std::integral_constant<size_t, R>())...};
  return tiles;
}

MP_GEMM_KERNELS(Avx512, MP_TARGET_AVX512)
MP_GEMM_KERNELS(Avx2, MP_TARGET_AVX2)

//===----------------------------------------------------------------------===//
// The loop nest
//===----------------------------------------------------------------------===//

/// A buffer of floats aligned to a cache line, grown as needed and kept:
/// a step multiplies the same shapes every time, and fresh buffers cost
/// page faults on every call.
struct Panels {
  std::vector<float> storage;
  float *get(int64_t count) {
    size_t need = size_t(count) + 16;
    if (storage.size() < need)
      storage.resize(need);
    auto at = reinterpret_cast<uintptr_t>(storage.data());
    return reinterpret_cast<float *>((at + 63) & ~uintptr_t(63));
  }
};

template <typename Isa>
void gemmOn(int64_t m, int64_t n, int64_t k, const GemmOperand &a,
            const GemmOperand &b, float *c, int64_t ldc, const float *bias,
            const float *addend, float alpha, float *aSums, float *bSums) {
  constexpr int64_t kRows = Isa::kRows, kColumns = Isa::kColumns;
  int64_t rowPanels = (m + kRows - 1) / kRows;
  int64_t columnPanels = (n + kColumns - 1) / kColumns;
  int64_t blocks = (k + kDepth - 1) / kDepth;
  int64_t depth = (k + blocks - 1) / blocks; // blocks of equal length
  const float *scale = alpha == 1.0f ? nullptr : &alpha;
  // A row-major a is read where it lies (module comment), unless its rows
  // are a multiple of 4 KB apart: then the tile's rows share one set of L1.
  // Its sums are added as it is packed.
  bool inPlace = a.colStep == 1 && !aSums &&
                 a.rowStep % int64_t(kL1SetStride / sizeof(float)) != 0;
  if (aSums)
    std::fill(aSums, aSums + m, 0.0f);
  if (bSums)
    std::fill(bSums, bSums + n, 0.0f);
  // Where a is read in place and b has enough panels, each thread takes a
  // share of the columns instead of the rows: it packs only the panels of b
  // it multiplies, and the threads never wait for each other.
  int64_t wanted = kernelThreads();
  bool byColumns = inPlace && columnPanels > 8 * wanted;
  thread_local Panels aKept, bKept;
  float *aPacked = inPlace ? nullptr : aKept.get(rowPanels * kRows * depth);
  float *bShared =
      byColumns ? nullptr : bKept.get(columnPanels * kColumns * depth);
  auto run = [&](int thread, int threads, auto barrier) {
    // The thread packs panels [q0, q1) of b (and [p0, p1) of a, unless a is
    // read in place), and computes the tiles of panels [p0, p1) of a by
    // panels [t0, t1) of b.
    int64_t p0 = byColumns ? 0 : rowPanels * thread / threads;
    int64_t p1 = byColumns ? rowPanels : rowPanels * (thread + 1) / threads;
    int64_t q0 = columnPanels * thread / threads;
    int64_t q1 = columnPanels * (thread + 1) / threads;
    int64_t t0 = byColumns ? q0 : 0, t1 = byColumns ? q1 : columnPanels;
    // Panel q of b lies at bPacked + (q - t0) kColumns d: in the buffer
    // the threads share or, by columns, in the thread's own, which a
    // neighbour's panels of a shorter last block cannot overlap while the
    // thread still reads its own. (Declared here, so that each thread
    // constructs its own.)
    thread_local Panels bOwn;
    float *bPacked =
        byColumns ? bOwn.get((q1 - q0) * kColumns * depth) : bShared;
    for (int64_t k0 = 0; k0 < k; k0 += depth) {
      int64_t d = std::min(depth, k - k0);
      // Column j of b is line j of its panels, k their step; row i of a
      // likewise.
      int64_t column = q0 * kColumns, row = p0 * kRows;
      // Each thread packs, and sums, lines of its own.
      Isa::pack(b.data + k0 * b.rowStep + column * b.colStep, b.colStep,
                b.rowStep, std::min(n, q1 * kColumns) - column, kColumns, d,
                bPacked + (q0 - t0) * kColumns * d,
                bSums ? bSums + column : nullptr);
      if (!inPlace)
        Isa::pack(a.data + row * a.rowStep + k0 * a.colStep, a.rowStep,
                  a.colStep, std::min(m, p1 * kRows) - row, kRows, d,
                  aPacked + p0 * kRows * d, aSums ? aSums + row : nullptr);
      if (!byColumns)
        barrier();
      bool first = k0 == 0;
      // The first block adds the caller's addend, later ones what c holds.
      const float *added = first ? addend : c;
      for (int64_t q = t0; q < t1; ++q) {
        int64_t j0 = q * kColumns;
        const float *bp = bPacked + (q - t0) * kColumns * d;
        const float *tileBias = first && bias ? bias + j0 : nullptr;
        for (int64_t p = p0; p < p1; ++p) {
          int64_t i0 = p * kRows;
          const float *ap =
              inPlace ? a.data + i0 * a.rowStep + k0 : aPacked + p * kRows * d;
          Isa::tileFor(std::min(kRows, m - i0), inPlace)(
              d, ap, a.rowStep, bp, c + i0 * ldc + j0, ldc, scale, tileBias,
              added ? added + i0 * ldc + j0 : nullptr,
              std::min(kColumns, n - j0));
        }
      }
      // The next block repacks b, which the other threads may still read,
      // and, when it is shorter, starts each thread's panels of a at other
      // offsets, overlapping what a neighbour still reads.
      if (!byColumns)
        barrier();
    }
  };
#ifdef _OPENMP
  int threads =
      int(std::min<int64_t>(wanted, byColumns ? columnPanels : rowPanels));
  if (threads >= 2 && !omp_in_parallel()) {
#pragma omp parallel num_threads(threads)
    run(omp_get_thread_num(), omp_get_num_threads(), [] {
#pragma omp barrier
    });
    return;
  }
#endif
  run(0, 1, [] {});
}

#if !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif // MP_X86

/// Whether the packed GEMM runs on this CPU (packedGemmTakes).
bool packedGemmEnabled() {
#ifdef MP_X86
  // On AVX2 the packed GEMM made BERT's FP32 step 1.12x as fast as oneDNN's
  // jit GEMM did; on AVX-512 it matched oneDNN's brgemm within the noise
  // (benchmarks/README.md), so there oneDNN keeps the products unless
  // MP_PACKED_GEMM=1 asks for this one.
  static const bool enabled = [] {
    const CpuFeatures &cpu = cpuFeatures();
    const char *env = std::getenv("MP_PACKED_GEMM");
    if (env && !std::strcmp(env, "0"))
      return false;
    bool asked = env && !std::strcmp(env, "1");
    return (cpu.avx512 && asked) || (cpu.avx2 && !cpu.avx512);
  }();
  return enabled && libraryKernelsEnabled();
#else
  return false;
#endif
}

} // namespace

bool mp::rt::packedGemmTakes(int64_t m, int64_t n, int64_t k) {
#ifdef MP_X86
  // Rows are what the threads share out: a product with fewer panels of
  // rows than threads would leave some idle, which oneDNN does not.
  int64_t rows = cpuFeatures().avx512 ? Avx512::kRows : Avx2::kRows;
  return packedGemmEnabled() && m > 0 && n > 0 && k > 0 &&
         m * n * k >= kMinimumProduct &&
         (m + rows - 1) / rows >= kernelThreads();
#else
  (void)m, (void)n, (void)k;
  return false;
#endif
}

bool mp::rt::packedGemmBatchTakes(int64_t count, int64_t m, int64_t n,
                                  int64_t k) {
  if (!packedGemmEnabled() || count <= 0 || m <= 0 || n <= 0 || k <= 0)
    return false;
  int64_t threads = kernelThreads();
  int64_t rounds = (count + threads - 1) / threads; // matrices per thread
  return count * 5 >= rounds * threads * 4 && m * n * k >= kMinimumMatrix &&
         count * m * n * k >= kMinimumProduct;
}

void mp::rt::packedGemm(int64_t m, int64_t n, int64_t k, GemmOperand a,
                        GemmOperand b, float *c, int64_t ldc, const float *bias,
                        const float *addend, float alpha, float *aSums,
                        float *bSums) {
#ifdef MP_X86
  if (m <= 0 || n <= 0 || k <= 0)
    return; // outside packedGemmTakes's products: nothing to sum
  assert((a.rowStep == 1 || a.colStep == 1) &&
         (b.rowStep == 1 || b.colStep == 1) && "an operand with no unit step");
  if (cpuFeatures().avx512)
    gemmOn<Avx512>(m, n, k, a, b, c, ldc, bias, addend, alpha, aSums, bSums);
  else
    gemmOn<Avx2>(m, n, k, a, b, c, ldc, bias, addend, alpha, aSums, bSums);
#else
  (void)m, (void)n, (void)k, (void)a, (void)b, (void)c, (void)ldc, (void)bias,
      (void)addend, (void)alpha, (void)aSums, (void)bSums;
#endif
}
