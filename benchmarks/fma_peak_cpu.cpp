//===- fma_peak_cpu.cpp - the CPU's f32 FMA peak, per core and in all
//------===//
//
// The ceiling a GEMM's GFLOP/s is a fraction of: independent chains of
// vector FMAs on registers (12 ymm with AVX2 and FMA, 24 zmm with
// AVX-512), enough to cover the FMA latency on both ports, on one thread
// and then on every thread the machine has. The numbers in
// benchmarks/README.md that say "of the FMA peak" come from it, measured
// in the same minutes as the products they divide (the benchmark VMs'
// clocks move with their neighbours). No runtime library needed:
//
//   g++ -O2 -fopenmp benchmarks/fma_peak_cpu.cpp -o fma_peak_cpu
//   ./fma_peak_cpu [seconds]
//
//===----------------------------------------------------------------------===//

#include <immintrin.h>
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

/// NAME(steps): `steps` rounds of FMAs over CHAINS independent accumulators
/// of vector type V; returns a value that depends on all of them, so that
/// nothing is optimised away.
#define MP_FMA_CHAINS(NAME, TARGET, V, CHAINS, SET1, FMADD, FIRST)             \
  __attribute__((target(TARGET))) float NAME(long steps) {                     \
    V acc[CHAINS];                                                             \
    V b = SET1(0.5f), c = SET1(0.25f);                                         \
    for (int i = 0; i < CHAINS; ++i)                                           \
      acc[i] = SET1(float(i));                                                 \
    for (long s = 0; s < steps; ++s) {                                         \
      _Pragma("GCC unroll 24") for (int i = 0; i < CHAINS; ++i) acc[i] =       \
          FMADD(acc[i], b, c);                                                 \
    }                                                                          \
    float sum = 0;                                                             \
    for (int i = 0; i < CHAINS; ++i)                                           \
      sum += FIRST(acc[i]);                                                    \
    return sum;                                                                \
  }

// Two FMA ports of 4-cycle latency need at least 8 chains in flight.
MP_FMA_CHAINS(chainsAvx2, "avx2,fma", __m256, 12, _mm256_set1_ps,
              _mm256_fmadd_ps, _mm256_cvtss_f32)
MP_FMA_CHAINS(chainsAvx512, "avx512f", __m512, 24, _mm512_set1_ps,
              _mm512_fmadd_ps, _mm512_cvtss_f32)

/// GFLOP/s of `threads` threads running `chains` for about `seconds`.
double measure(float (*chains)(long), long flopsPerStep, int threads,
               double seconds) {
  long steps = 1 << 20;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
    sink += chains(steps);
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    if (sink == 1234.5f) // never: keeps the sums alive
      std::puts("");
    if (s >= seconds)
      return double(threads) * steps * flopsPerStep / s / 1e9;
    steps *= 2;
  }
}

} // namespace

int main(int argc, char **argv) {
  double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  if (!(seconds > 0)) {
    std::fprintf(stderr, "fma_peak_cpu: seconds must be positive\n");
    return 1;
  }
  int all = omp_get_max_threads();
  std::printf(
      "| ISA | 1 thread GFLOP/s | %d threads GFLOP/s |\n|---|---:|---:|\n",
      all);
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    std::printf("| AVX2 + FMA | %.1f | %.1f |\n",
                measure(chainsAvx2, 12 * 16, 1, seconds),
                measure(chainsAvx2, 12 * 16, all, seconds));
  if (__builtin_cpu_supports("avx512f"))
    std::printf("| AVX-512 | %.1f | %.1f |\n",
                measure(chainsAvx512, 24 * 32, 1, seconds),
                measure(chainsAvx512, 24 * 32, all, seconds));
  return 0;
}
