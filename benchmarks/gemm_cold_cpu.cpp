//===- gemm_cold_cpu.cpp - f32 products with operands warm and cold -------===//
//
// In a training step a projection's operands arrive cold: the activations
// were just written by the op before it (half of them by the other core),
// the weights were last touched a whole step ago. A benchmark that calls
// the same product on the same buffers measures it with everything in L2.
// This one times mpMatmul at the ViT's and BERT's projection shapes (the
// benchmark steps of torch_cpu_steps.py: 520 and 1024 tokens, width 256,
// MLP 1024) and at their attention's batched ones (8 sequences of 65 and
// 128 tokens, 4 heads of 64) both ways, in turn, round after round:
//  - warm: one set of operands, called again and again;
//  - cold: the call cycles through enough sets of operands (and outputs)
//    that each call's were evicted from L2 by the calls between.
// Each line has the medians, GFLOP/s and the cold call's time over the
// warm one's. gemm_cold_torch.py
// prints the same table for PyTorch's torch.mm (MKL on an Intel CPU), so
// the two ratios say how much each GEMM loses to cold operands. Run it
// under MP_CPU_ISA=avx2 DNNL_MAX_CPU_ISA=AVX2 for the runtime's packed
// GEMM where the CPU has AVX-512 (benchmarks/README.md).
//
//   g++ -O2 -fopenmp -I runtime/include benchmarks/gemm_cold_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -o gemm_cold_cpu
//   ./gemm_cold_cpu [rounds]
//
//===----------------------------------------------------------------------===//

#include "cpu_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

namespace {

/// One product: `batch` times [m, k] x [k, n] with lhs or rhs stored
/// transposed.
struct Product {
  const char *name;
  int64_t batch, m, n, k;
  bool ta, tb;
};

/// [batch, rows, columns], or [rows, columns] for a single matrix.
std::vector<int64_t> shapeOf(int64_t batch, int64_t rows, int64_t columns) {
  if (batch == 1)
    return {rows, columns};
  return {batch, rows, columns};
}

/// Bytes of operands the cold calls cycle through: past both cores' L2
/// (2 MB each on the machines of benchmarks/README.md) many times over.
constexpr int64_t kColdBytes = int64_t(64) << 20;

struct Operands {
  bench::Buffer lhs, rhs, out;
  Operands(const Product &p)
      : lhs(MP_F32,
            p.ta ? shapeOf(p.batch, p.k, p.m) : shapeOf(p.batch, p.m, p.k)),
        rhs(MP_F32,
            p.tb ? shapeOf(p.batch, p.n, p.k) : shapeOf(p.batch, p.k, p.n)),
        out(MP_F32, shapeOf(p.batch, p.m, p.n)) {}
  void run(const Product &p) {
    bench::check("gemm_cold_cpu",
                 mpMatmul(&lhs.t, &rhs.t, &out.t, p.ta, p.tb, MP_F32));
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  if (rounds < 1) {
    std::fprintf(stderr, "gemm_cold_cpu: rounds must be positive\n");
    return 1;
  }
  const Product products[] = {
      {"vit qkv forward", 1, 520, 768, 256, false, true},
      {"vit fc1 forward", 1, 520, 1024, 256, false, true},
      {"vit fc2 forward", 1, 520, 256, 1024, false, true},
      {"vit fc1 input gradient", 1, 520, 256, 1024, false, false},
      {"vit fc1 weight gradient", 1, 1024, 256, 520, true, false},
      {"vit attention scores", 32, 65, 65, 64, false, true},
      {"vit attention output", 32, 65, 64, 65, false, false},
      {"vit attention value gradient", 32, 65, 64, 65, true, false},
      {"bert qkv forward", 1, 1024, 256, 256, false, true},
      {"bert fc1 forward", 1, 1024, 1024, 256, false, true},
      {"bert fc2 forward", 1, 1024, 256, 1024, false, true},
      {"bert fc2 input gradient", 1, 1024, 1024, 256, false, false},
      {"bert fc2 weight gradient", 1, 256, 1024, 1024, true, false},
      {"bert attention scores", 32, 128, 128, 64, false, true},
      {"bert attention output", 32, 128, 64, 128, false, false},
      {"bert attention value gradient", 32, 128, 64, 128, true, false},
  };
  std::printf("| product | m x n x k | warm us | GFLOP/s | cold us | GFLOP/s "
              "| cold / warm |\n|---|---|---:|---:|---:|---:|---:|\n");
  for (const Product &p : products) {
    int64_t bytes = 4 * p.batch * (p.m * p.k + p.k * p.n + p.m * p.n);
    int64_t sets = std::max<int64_t>(2, kColdBytes / bytes);
    std::vector<std::unique_ptr<Operands>> cold;
    for (int64_t s = 0; s < sets; ++s)
      cold.push_back(std::make_unique<Operands>(p));
    Operands warm(p);
    for (int i = 0; i < 3; ++i) // first touches, the runtime's buffers
      warm.run(p), cold[i % sets]->run(p);
    std::vector<double> warmMs, coldMs;
    int64_t next = 0;
    for (int r = 0; r < rounds; ++r) {
      warm.run(p); // back into L2 after the cold call before; not timed
      double t0 = bench::nowMs();
      warm.run(p);
      double t1 = bench::nowMs();
      cold[next]->run(p);
      double t2 = bench::nowMs();
      next = (next + 1) % sets;
      warmMs.push_back(t1 - t0);
      coldMs.push_back(t2 - t1);
    }
    double flops = 2.0 * p.batch * p.m * p.n * p.k, w = median(warmMs),
           c = median(coldMs);
    char batch[32] = "";
    if (p.batch != 1)
      std::snprintf(batch, sizeof(batch), "%lld x ", (long long)p.batch);
    std::printf("| %s | %s%lldx%lldx%lld | %.1f | %.0f | %.1f | %.0f | %.2f "
                "|\n",
                p.name, batch, (long long)p.m, (long long)p.n, (long long)p.k,
                1e3 * w, flops / w / 1e6, 1e3 * c, flops / c / 1e6, c / w);
  }
  return 0;
}
