//===- Vector.h - tiles of f32 for the CPU kernels ---------------*- C++
//-*-===//
//
// The fast paths of the CPU kernels work on tiles: a run of elements stored
// as f32, f16 or bf16 is converted into an f32 buffer with the host's vector
// instructions (AVX-512, or AVX2 and F16C), computed on in f32, rounded to the
// compute type where that is f16 or bf16, and converted back. The
// conversions are bit-identical to the scalar mpF32ToF16 / mpF32ToBF16 (round
// to nearest even, subnormals kept, NaNs quieted with their payload), so a
// fast path gives exactly the reference loop's result when it evaluates the
// same expression in the same order. One exception: a signalling NaN read
// by a kernel that only moves or negates it stays signalling on a fast path,
// where the reference loops quiet it by widening to double; arithmetic
// quiets it on both. The instruction set is chosen once, at run time, from
// what the CPU reports (cpuFeatures()).
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_VECTOR_H
#define MP_RUNTIME_CPU_VECTOR_H

#include "mp/Runtime/MPRuntime.h"

#include <cstdint>

// MP_X86: the kernels may use x86 intrinsics, each in a function compiled
// for its instruction set (__attribute__((target))) and called only where
// cpuFeatures() has it.
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define MP_X86 1
#include <immintrin.h>
#endif

namespace mp::rt {

/// For the helpers a vectorised loop is built from: inlined into the loop
/// of each instruction set, whatever GCC's size heuristics would decide.
#define MP_INLINE __attribute__((always_inline)) inline

/// Elements per tile: small enough to stay in L1 with three operands.
constexpr int64_t kTile = 1024;

/// Whether the fast paths take storage or compute type `t`.
inline bool isTileType(mpElementType t) {
  return t == MP_F32 || t == MP_F16 || t == MP_BF16;
}

/// What the CPU offers the kernels, read once with cpuid, less what
/// MP_CPU_ISA (avx2, scalar) leaves out.
struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false; // avx2: AVX2 and FMA
  bool avx512 = false;     // AVX-512 F, BW, VL, DQ
  bool avx512bf16 = false; // vdpbf16ps (oneDNN's bf16 GEMM)
  bool amx = false;        // AMX tiles with bf16
};
const CpuFeatures &cpuFeatures();

/// `avx512`, `avx2` or `base`: the variant of a function compiled for the
/// vector instructions this CPU offers (less what MP_CPU_ISA leaves out).
template <typename Fn> Fn forIsa(Fn avx512, Fn avx2, Fn base) {
  const CpuFeatures &cpu = cpuFeatures();
  return cpu.avx512 ? avx512 : cpu.avx2 ? avx2 : base;
}

// The instruction sets a kernel's loops are compiled for besides the
// baseline: a macro defines each loop once per SUFFIX and TARGET, and
// forIsa picks the variant. AVX2 comes with FMA (cpuFeatures().avx2 asks
// for both): the functions of Math.h multiply-add explicitly (std::fma,
// one rounding, libm's fmaf in the baseline), and nothing is contracted
// (-ffp-contract=off), so the variants give the same bits.
// Elsewhere they are empty: every variant is the baseline loop.
#ifdef MP_X86
#define MP_TARGET_AVX512                                                       \
  __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))
#define MP_TARGET_AVX2 __attribute__((target("avx2,fma")))
// The AVX2 loops that convert f16 lanes (Lanes.h) with F16C.
#define MP_TARGET_AVX2_F16C __attribute__((target("avx2,fma,f16c")))
#else
#define MP_TARGET_AVX512
#define MP_TARGET_AVX2
#define MP_TARGET_AVX2_F16C
#endif

/// Converts data[offset, offset + n) of type `t` (f32, f16, bf16, or i1 as
/// 0 or 1) to f32 (exact).
void loadF32(const void *data, mpElementType t, int64_t offset, int64_t n,
             float *out);
/// Stores `n` values into data[offset, ...) of type `t`, rounding to nearest
/// even as the scalar conversions do.
void storeF32(const float *in, int64_t n, void *data, mpElementType t,
              int64_t offset);
/// storeF32 with f16/bf16 written by streaming (non-temporal) stores where
/// the CPU has them and the destination is aligned for them: the lines go
/// to memory without being read first or kept in the cache. For large
/// outputs that nothing reads soon (an optimizer's low-precision copy of a
/// parameter, read by the next step's forward pass).
void streamF32(const float *in, int64_t n, void *data, mpElementType t,
               int64_t offset);
/// Moves data[offset, offset + n) of type `t` (f32, f16 or bf16) into
/// float slots bit for bit, without converting: f32 as it is, a 16-bit
/// element as the low half of its slot. For selects and other moves, which
/// must keep a signalling NaN's bits where a conversion would quiet it;
/// storeBits32 writes the slots back.
void loadBits32(const void *data, mpElementType t, int64_t offset, int64_t n,
                float *out);
void storeBits32(const float *in, int64_t n, void *data, mpElementType t,
                 int64_t offset);
/// Rounds `n` values in place to `t` when it is f16 or bf16.
void roundF32(float *x, int64_t n, mpElementType t);

/// Whether the bytes of `a` and `b` do not overlap. Fast kernels that run
/// rows on several threads, or read operands through __restrict pointers,
/// need it; on overlapping buffers they copy, or the element-by-element
/// reference loops run, in their order.
inline bool disjoint(const mpTensor *a, const mpTensor *b) {
  auto lo = [](const mpTensor *t) {
    return reinterpret_cast<uintptr_t>(t->data);
  };
  auto bytes = [](const mpTensor *t) {
    return uintptr_t(mpNumElements(t)) * mpElementSize(t->elementType);
  };
  return lo(a) + bytes(a) <= lo(b) || lo(b) + bytes(b) <= lo(a);
}

/// Whether the vectorised and library kernels may be used; false after
/// mpUseLibraryKernels(0) or with MP_REFERENCE_KERNELS=1, which leaves every
/// kernel on its reference loop (the tests compare the two).
bool libraryKernelsEnabled();

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_VECTOR_H
