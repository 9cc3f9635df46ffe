//===- Parallel.cpp - the CPU backend's switches --------------------------===//
//
// Whether the fast kernels are on (mpUseLibraryKernels, MP_REFERENCE_KERNELS)
// and how many threads they use.
//
//===----------------------------------------------------------------------===//

#include "Parallel.h"
#include "Vector.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace {
// MP_REFERENCE_KERNELS=1 in the environment starts with the fast kernels off
// (benchmarks compare the two paths through mp-runner that way).
std::atomic<bool> useLibraries{[] {
  const char *env = std::getenv("MP_REFERENCE_KERNELS");
  return !env || !*env || std::strcmp(env, "0") == 0;
}()};
} // namespace

extern "C" void mpUseLibraryKernels(int32_t enable) {
  useLibraries = enable != 0;
}

bool mp::rt::libraryKernelsEnabled() { return useLibraries; }

int mp::rt::kernelThreads() {
#ifdef _OPENMP
  static const int threads = omp_get_max_threads();
  return threads;
#else
  return 1;
#endif
}
