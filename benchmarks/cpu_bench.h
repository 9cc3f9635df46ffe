//===- cpu_bench.h - helpers of the CPU runtime benchmarks ------*- C++ -*-===//
//
// What the benchmarks that call the runtime library directly share: a tensor
// with its own bytes, a clock, a check that stops on a failed call, and ResNet-50's parameter
// shapes.
// Header-only, so each benchmark stays one g++ command.
//
//===----------------------------------------------------------------------===//

#ifndef MP_BENCHMARKS_CPU_BENCH_H
#define MP_BENCHMARKS_CPU_BENCH_H

#include "mp/Runtime/MPRuntime.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <vector>

namespace bench {

/// Bytes on a 64-byte boundary, as the runtime allocates tensors
/// (Compiled.cpp): a kernel whose threads split rows at cache lines shares
/// none between them there, and would in a vector's 16-byte-aligned bytes.
template <typename T> struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U> AlignedAllocator(const AlignedAllocator<U> &) {}
  T *allocate(size_t n) {
    size_t bytes = (n * sizeof(T) + 63) / 64 * 64;
    if (void *p = std::aligned_alloc(64, bytes ? bytes : 64))
      return static_cast<T *>(p);
    throw std::bad_alloc();
  }
  void deallocate(T *p, size_t) { std::free(p); }
  template <typename U> bool operator==(const AlignedAllocator<U> &) const {
    return true;
  }
  template <typename U> bool operator!=(const AlignedAllocator<U> &) const {
    return false;
  }
};

/// A tensor with its own bytes, filled with a small repeating pattern.
struct Buffer {
  std::vector<char, AlignedAllocator<char>> bytes;
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

/// The parameter shapes of torchvision's resnet50(num_classes=10), 161
/// tensors of 23.5M elements: the stem, four stages of bottlenecks (1x1,
/// 3x3, 1x1 convolutions, a projection in each stage's first block), a
/// batch norm after every convolution, the classifier.
inline std::vector<std::vector<int64_t>> resnet50ParameterShapes() {
  std::vector<std::vector<int64_t>> shapes;
  auto conv = [&](int64_t out, int64_t in, int64_t k) {
    shapes.push_back({out, in, k, k});
    shapes.push_back({out});
    shapes.push_back({out});
  };
  conv(64, 3, 7);
  int64_t in = 64;
  const int64_t widths[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
  for (int s = 0; s < 4; ++s)
    for (int64_t b = 0; b < blocks[s]; ++b) {
      int64_t w = widths[s];
      conv(w, in, 1);
      conv(w, w, 3);
      conv(4 * w, w, 1);
      if (b == 0)
        conv(4 * w, in, 1);
      in = 4 * w;
    }
  shapes.push_back({10, 2048});
  shapes.push_back({10});
  return shapes;
}

} // namespace bench

#endif // MP_BENCHMARKS_CPU_BENCH_H
