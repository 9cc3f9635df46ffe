//===- cpu_bench.h - helpers of the CPU runtime benchmarks ------*- C++ -*-===//
//
// What the benchmarks that call the runtime library directly share: a tensor
// with its own bytes, a clock, and a check that stops on a failed call.
// Header-only, so each benchmark stays one g++ command.
//
//===----------------------------------------------------------------------===//

#ifndef MP_BENCHMARKS_CPU_BENCH_H
#define MP_BENCHMARKS_CPU_BENCH_H

#include "mp/Runtime/MPRuntime.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace bench {

/// A tensor with its own bytes, filled with a small repeating pattern.
struct Buffer {
  std::vector<char> bytes;
  mpTensor t{};
  Buffer(mpElementType type, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    bytes.assign(size_t(n) * mpElementSize(type), 0);
    std::vector<float> values(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
      values[size_t(i)] = float(i % 7) * 0.1f - 0.3f;
    mpConvert(values.data(), MP_F32, bytes.data(), type, n);
    t.data = bytes.data();
    t.elementType = type;
    t.rank = int32_t(shape.size());
    for (size_t d = 0; d < shape.size(); ++d)
      t.shape[d] = shape[d];
  }
  int64_t count() const { return mpNumElements(&t); }
};

inline double nowMs() {
  return std::chrono::duration<double, std::milli>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

/// Exits with `tool`'s name when a runtime call failed.
inline void check(const char *tool, mpStatus s) {
  if (s != MP_OK) {
    std::fprintf(stderr, "%s: a runtime call failed (%d)\n", tool, s);
    std::exit(1);
  }
}

} // namespace bench

#endif // MP_BENCHMARKS_CPU_BENCH_H
