//===- Parallel.h - splitting a kernel's work across threads ----*- C++ -*-===//
//
// The CPU kernels split their outermost loop into contiguous ranges, one per
// thread, through OpenMP (the threading runtime Debian's oneDNN uses too, so
// the two share one pool of threads). Work below a threshold stays on the
// calling thread: a fork costs a few microseconds, which small ops cannot
// pay back. Ranges never change a result: each element is computed by the
// same expression in the same order whichever thread runs it.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_PARALLEL_H
#define MP_RUNTIME_CPU_PARALLEL_H

#include <cstdint>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace mp::rt {

/// Threads the kernels use (OMP_NUM_THREADS, else the cores).
int kernelThreads();

/// Calls `body(begin, end)` on disjoint ranges covering [0, n), in parallel
/// when n is at least two `grain`s; `grain` is the number of items whose
/// work is worth a thread (about 20 microseconds of it).
template <typename Body>
void parallelFor(int64_t n, int64_t grain, Body &&body) {
  int64_t parts = grain > 0 ? n / grain : n;
#ifdef _OPENMP
  int threads = kernelThreads();
  if (parts > threads)
    parts = threads;
  if (parts >= 2 && !omp_in_parallel()) {
#pragma omp parallel for num_threads(parts) schedule(static, 1)
    for (int64_t p = 0; p < parts; ++p)
      body(n * p / parts, n * (p + 1) / parts);
    return;
  }
#endif
  (void)parts;
  if (n > 0)
    body(int64_t(0), n);
}

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_PARALLEL_H
