//===- Lanes.h - f32 vectors in the vector extension ------------*- C++ -*-===//
//
// Vectors of f32 in GCC's and clang's vector extension for loops compiled
// once per instruction set (Vector.h's MP_TARGET_AVX512 / AVX2 and the
// baseline), with loads and stores of f32, bf16 and f16 storage that widen
// exactly and round as mpF32ToBF16 and mpF32ToF16 do. Every function is
// always inlined, so each compiles for the instruction set of the loop it
// is inlined into.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_LANES_H
#define MP_RUNTIME_CPU_LANES_H

#include "Vector.h"

#include <cstdint>
#include <cstring>

// Vectors are arguments and results of functions that are always inlined,
// so GCC's note that their ABI differs between instruction sets does not
// apply.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
#endif

namespace mp::rt {

/// A bf16's bits, and an f16's.
struct Bf16 {
  uint16_t bits;
};
struct F16 {
  uint16_t bits;
};

/// N lanes of f32 (of u32, of u16) in GCC's and clang's vector extension.
/// Each loop takes N lanes of the register width it is compiled for: 16
/// (AVX-512), 8 (AVX2) or 4 (SSE). GCC keeps 16-lane values that need more
/// than one register in memory across loop iterations: AVX2's batch-norm
/// passes on them ran 2x slower than SSE's.
template <int N> struct VecOf {
  typedef float F __attribute__((vector_size(4 * N)));
  typedef uint32_t U __attribute__((vector_size(4 * N)));
  typedef int32_t I __attribute__((vector_size(4 * N)));
  typedef uint16_t H __attribute__((vector_size(2 * N)));
};
template <int N> using Vec = typename VecOf<N>::F;

/// Whether the loops forIsa picks on this CPU convert f16 lanes: the AVX2
/// ones (MP_TARGET_AVX2_F16C) use F16C, which every AVX2 CPU has so far.
inline bool f16LanesSupported() {
  const CpuFeatures &cpu = cpuFeatures();
  return cpu.avx512 || !cpu.avx2 || cpu.f16c;
}

/// Loads `W` elements (0: `n` < N, the rest of the lanes 0) as f32.
template <int N, int64_t W>
MP_INLINE Vec<N> loadVec(const float *p, int64_t n) {
  Vec<N> v = {};
  std::memcpy(&v, p, sizeof(float) * size_t(W ? W : n));
  return v;
}
template <int N, int64_t W>
MP_INLINE Vec<N> loadVec(const Bf16 *p, int64_t n) {
  typename VecOf<N>::H h = {};
  std::memcpy(&h, p, sizeof(Bf16) * size_t(W ? W : n));
  typename VecOf<N>::U bits =
      __builtin_convertvector(h, typename VecOf<N>::U) << 16;
  Vec<N> v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
/// f16 lanes widened exactly, as mpF16ToF32 widens them (a signalling NaN
/// stays signalling). 16 or 8 lanes take vcvtph2ps (AVX-512, F16C): with
/// GCC as inline assembly, since an intrinsic needs its target attribute on
/// every function it is inlined through and these are shared by the loops
/// of all instruction sets (GCC 12 widens _Float16 vectors a lane at a
/// time); clang, which checks an assembly operand's size against the
/// function it is written in, converts _Float16 vectors, which LLVM selects
/// as vcvtph2ps in the AVX-512 and AVX2 + F16C loops they are inlined into.
/// vcvtph2ps quiets signalling NaNs, so NaN lanes are rebuilt from their
/// bits. 4 lanes (the baseline, no F16C) rebias the exponent in integer
/// arithmetic and scale subnormals by 2^-24 (exact).
template <int N, int64_t W>
MP_INLINE Vec<N> loadVec(const F16 *p, int64_t n) {
  typedef typename VecOf<N>::U U;
  typename VecOf<N>::H h = {};
  std::memcpy(&h, p, sizeof(F16) * size_t(W ? W : n));
  U x = __builtin_convertvector(h, U);
  U abs = x & 0x7fffu, exponent = abs >> 10, sign = (x & 0x8000u) << 16;
  U special = sign | (abs << 13) | 0x7f800000u; // infinity or NaN
  U bits;
  if constexpr (N == 16 || N == 8) {
    Vec<N> v;
#if defined(__clang__)
    typedef _Float16 Halves __attribute__((vector_size(2 * N)));
    Halves halves;
    std::memcpy(&halves, &h, sizeof halves);
    v = __builtin_convertvector(halves, Vec<N>);
#else
    asm("vcvtph2ps %1, %0" : "=v"(v) : "v"(h));
#endif
    std::memcpy(&bits, &v, sizeof bits);
    U isNan = (U)(abs > 0x7c00u);
    bits = (special & isNan) | (bits & ~isNan);
  } else {
    U normal = sign | ((abs << 13) + (112u << 23)); // rebiased 15 to 127
    Vec<N> tiny = // a subnormal's mantissa times 2^-24, exactly
        __builtin_convertvector((typename VecOf<N>::I)abs, Vec<N>) * 0x1p-24f;
    U tinyBits;
    std::memcpy(&tinyBits, &tiny, sizeof tinyBits);
    tinyBits |= sign;
    U isTiny = (U)(exponent == 0u), isSpecial = (U)(exponent == 31u);
    bits = (tinyBits & isTiny) | (special & isSpecial) |
           (normal & ~(isTiny | isSpecial));
  }
  Vec<N> v;
  std::memcpy(&v, &bits, sizeof v);
  return v;
}
/// Stores `W` lanes (0: the first `n`), rounded as mpF32ToBF16 rounds
/// (to nearest even; a NaN quieted with its payload) for bf16.
template <int N, int64_t W>
MP_INLINE void storeVec(Vec<N> v, float *p, int64_t n) {
  std::memcpy(p, &v, sizeof(float) * size_t(W ? W : n));
}
template <int N, int64_t W>
MP_INLINE void storeVec(Vec<N> v, Bf16 *p, int64_t n) {
  typedef typename VecOf<N>::U U;
  U x;
  std::memcpy(&x, &v, sizeof x);
  U rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  U quiet = (x >> 16) | 0x40u;
  U nan = (U)((x & 0x7fffffffu) > 0x7f800000u);
  typename VecOf<N>::H h = __builtin_convertvector(
      (quiet & nan) | (rounded & ~nan), typename VecOf<N>::H);
  std::memcpy(p, &h, sizeof(Bf16) * size_t(W ? W : n));
}
/// f16: rounded as mpF32ToF16 rounds (to nearest even; past 65520 to
/// infinity; a NaN quieted with its top payload bits), which vcvtps2ph
/// does with rounding to nearest even (16 and 8 lanes, written as loadVec
/// gives; the assembly's imm8 = 8). 4 lanes round in integer
/// arithmetic; a subnormal result by adding 0.5, whose last place is
/// 2^-24, the f16 subnormals' spacing: the sum's low bits are the result's
/// (round to nearest even, as the default floating-point environment
/// rounds).
template <int N, int64_t W>
MP_INLINE void storeVec(Vec<N> v, F16 *p, int64_t n) {
  typedef typename VecOf<N>::U U;
  typename VecOf<N>::H h;
  if constexpr (N == 16 || N == 8) {
#if defined(__clang__)
    typedef _Float16 Halves __attribute__((vector_size(2 * N)));
    Halves halves = __builtin_convertvector(v, Halves);
    std::memcpy(&h, &halves, sizeof h);
#else
    asm("vcvtps2ph $8, %1, %0" : "=v"(h) : "v"(v));
#endif
  } else {
    U x;
    std::memcpy(&x, &v, sizeof x);
    U abs = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u;
    U nan = ((abs >> 13) & 0x3ffu) | 0x7e00u; // top payload bits, quiet
    U normal = ((abs + 0xfffu + ((abs >> 13) & 1u)) >> 13) - (112u << 10);
    Vec<N> absF;
    std::memcpy(&absF, &abs, sizeof absF);
    Vec<N> tinyF = absF + 0.5f;
    U tiny;
    std::memcpy(&tiny, &tinyF, sizeof tiny);
    tiny -= 0x3f000000u;
    U isNan = (U)(abs > 0x7f800000u), isHuge = (U)(abs >= 0x477ff000u),
      isTiny = (U)(abs < 0x38800000u);
    U finite = (tiny & isTiny) | (normal & ~isTiny);
    U bits =
        (nan & isNan) | (0x7c00u & isHuge & ~isNan) | (finite & ~isHuge);
    h = __builtin_convertvector(bits | sign, typename VecOf<N>::H);
  }
  std::memcpy(p, &h, sizeof(F16) * size_t(W ? W : n));
}

/// a where `mask` is set, else b.
template <int N>
MP_INLINE Vec<N> select(typename VecOf<N>::U mask, Vec<N> a, Vec<N> b) {
  typename VecOf<N>::U x, y;
  std::memcpy(&x, &a, sizeof x);
  std::memcpy(&y, &b, sizeof y);
  typename VecOf<N>::U r = (x & mask) | (y & ~mask);
  Vec<N> v;
  std::memcpy(&v, &r, sizeof v);
  return v;
}

} // namespace mp::rt

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#endif // MP_RUNTIME_CPU_LANES_H
