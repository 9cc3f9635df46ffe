//===- optimizer_cpu.cpp - optimizer updates over ResNet-50's parameters --===//
//
// mpSgdUpdate (momentum 0.9, weight decay 1e-4) and mpAdamUpdate (AdamW,
// weight decay 0.01) over ResNet-50's 161 parameters (23.5M elements) with
// f32 gradients, each alone, with the bf16 copy that weight shadows keep
// (mpSgdUpdateWithCopy, mpAdamUpdateWithCopy), and, for SGD, with bf16
// gradients (an AMP-bf16 step's) and followed by a separate mpConvert of
// each parameter (what the step did before shadows); mpConvert alone last.
// Then the order of a training step, where the backward pass has just read
// each parameter's weights (dX = dY W) and its gradient when the update
// comes: the f32 weights in an FP32 step, the bf16 copy in an AMP-bf16
// one. Each parameter's weights and gradient are read (a load per cache
// line, on the kernels' threads) right before its update, and that read is
// timed alone too: the difference is the update's cost in that order.
// The variants alternate in one process, 14 rounds; each entry is the
// minimum of the last 12, in ms. SGD with momentum moves
// 20 bytes per element, Adam 28: their memory floors at the machine's
// bandwidth. Build against the runtime library of a Release build:
//
//   g++ -O2 -I runtime/include benchmarks/optimizer_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -fopenmp
//       -o optimizer_cpu && ./optimizer_cpu
//
// MP_CPU_ISA=avx2 (or scalar) runs the AVX2 (or baseline) loops on an
// AVX-512 machine.
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

using bench::Buffer;
using bench::nowMs;

static void check(mpStatus s) { bench::check("optimizer_cpu", s); }

int main() {
  std::vector<std::vector<int64_t>> shapes = bench::resnet50ParameterShapes();
  std::vector<std::unique_ptr<Buffer>> p, g, gb, m, v, c;
  Buffer step(MP_I64, {});
  for (const auto &s : shapes) {
    p.push_back(std::make_unique<Buffer>(MP_F32, s));
    g.push_back(std::make_unique<Buffer>(MP_F32, s));
    gb.push_back(std::make_unique<Buffer>(MP_BF16, s));
    m.push_back(std::make_unique<Buffer>(MP_F32, s));
    v.push_back(std::make_unique<Buffer>(MP_F32, s));
    c.push_back(std::make_unique<Buffer>(MP_BF16, s));
  }
  size_t n = shapes.size();
  auto sgd = [&](size_t i, mpTensor *copy) {
    check(mpSgdUpdateWithCopy(&p[i]->t, &g[i]->t, &m[i]->t, nullptr, copy,
                              1e-3f, 0.9f, 1e-4f, 0));
  };
  auto sgdBf16 = [&](size_t i, mpTensor *copy) {
    check(mpSgdUpdateWithCopy(&p[i]->t, &gb[i]->t, &m[i]->t, nullptr, copy,
                              1e-3f, 0.9f, 1e-4f, 0));
  };
  auto adam = [&](size_t i, mpTensor *copy) {
    check(mpAdamUpdateWithCopy(&p[i]->t, &g[i]->t, &m[i]->t, &v[i]->t, &step.t,
                               nullptr, copy, 1e-3f, 0.9f, 0.999f, 1e-8f,
                               1e-2f));
  };
  // A read of every cache line of `b`, on all threads, as a GEMM reading
  // it would leave it in cache.
  volatile float sink = 0;
  auto touch = [&](const Buffer &b) {
    const char *bytes = b.bytes.data();
    int64_t lines = int64_t(b.bytes.size() + 63) / 64;
    float sum = 0;
#pragma omp parallel for reduction(+ : sum) schedule(static)
    for (int64_t k = 0; k < lines; ++k)
      sum += float(bytes[k * 64]);
    sink = sink + sum;
  };
  // What the backward pass has read when parameter i's update comes: its
  // weights (f32 in an FP32 step, the bf16 copy in an AMP one) and gradient.
  auto readF32 = [&](size_t i) {
    touch(*p[i]);
    touch(*g[i]);
  };
  auto readCopy = [&](size_t i) {
    touch(*c[i]);
    touch(*g[i]);
  };
  auto convert = [&](size_t i) {
    check(mpConvert(p[i]->t.data, MP_F32, c[i]->t.data, MP_BF16,
                    mpNumElements(&p[i]->t)));
  };
  // Each variant: a name and what it does to parameter i.
  const std::vector<std::pair<const char *, std::function<void(size_t)>>>
      variants = {
          {"sgd", [&](size_t i) { sgd(i, nullptr); }},
          {"sgd + copy", [&](size_t i) { sgd(i, &c[i]->t); }},
          {"sgd, bf16 grads", [&](size_t i) { sgdBf16(i, nullptr); }},
          {"sgd + copy, bf16 grads", [&](size_t i) { sgdBf16(i, &c[i]->t); }},
          {"sgd, convert",
           [&](size_t i) {
             sgd(i, nullptr);
             convert(i);
           }},
          {"adam", [&](size_t i) { adam(i, nullptr); }},
          {"adam + copy", [&](size_t i) { adam(i, &c[i]->t); }},
          {"convert", convert},
          {"read f32 weights + grads", readF32},
          {"  then sgd",
           [&](size_t i) {
             readF32(i);
             sgd(i, nullptr);
           }},
          {"read bf16 copy + grads", readCopy},
          {"  then sgd + copy",
           [&](size_t i) {
             readCopy(i);
             sgd(i, &c[i]->t);
           }},
      };
  std::vector<double> best(variants.size(), 1e30);
  for (int round = 0; round < 14; ++round)
    for (size_t k = 0; k < variants.size(); ++k) {
      double t0 = nowMs();
      for (size_t i = 0; i < n; ++i)
        variants[k].second(i);
      if (round >= 2)
        best[k] = std::min(best[k], nowMs() - t0);
    }
  std::printf("ResNet-50 parameters (%zu tensors); ms\n", n);
  for (size_t k = 0; k < variants.size(); ++k)
    std::printf("%-26s %8.2f\n", variants[k].first, best[k]);
  size_t f32 = variants.size() - 4;
  double plain = best[f32 + 1] - best[f32], shadowed = best[f32 + 3] -
                                                       best[f32 + 2];
  std::printf("in a step's order: sgd %.2f, sgd + copy %.2f (%.2fx)\n", plain,
              shadowed, shadowed / plain);
  return 0;
}
