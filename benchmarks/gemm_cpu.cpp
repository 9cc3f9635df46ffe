//===- gemm_cpu.cpp - bf16 and f32 GEMM libraries on the CPU --------------===//
//
// Measures the GEMM candidates for the CPU backend at the shapes of the
// benchmark steps (benchmarks/cpu_step_times.py): OpenBLAS sgemm (f32, the
// FP32 path) and oneDNN's matmul primitive in f32 and bf16 (bf16 x bf16 ->
// bf16 and -> f32, f32 accumulation). OpenBLAS's bf16 GEMM, cblas_sbgemm,
// is declared in Debian's cblas.h but not exported: Debian's OpenBLAS
// 0.3.21 is built without BUILD_BFLOAT16, so it cannot be measured here. Prints
// min and median milliseconds and TFLOP/s per shape and the ratio of each
// variant to OpenBLAS sgemm; the runtime uses the fastest bf16 variant
// (runtime/lib/CPU/Dnnl.cpp explains the choice).
//
// Built by benchmarks/cpu_step_times.py --gemm (or by hand):
//   g++ -O2 benchmarks/gemm_cpu.cpp -o gemm_cpu -ldnnl -lopenblas
//
//===----------------------------------------------------------------------===//

#include <cblas.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

namespace {

uint16_t toBF16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

struct Timing {
  double min, median;
};

Timing measure(const std::function<void()> &f, int reps) {
  f(); // warm up (primitive creation, page faults)
  std::vector<double> ms;
  for (int i = 0; i < reps; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return {ms.front(), ms[ms.size() / 2]};
}

#define CHECK(x)                                                               \
  do {                                                                         \
    if ((x) != dnnl_success) {                                                 \
      std::fprintf(stderr, "oneDNN call failed: %s\n", #x);                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

/// A oneDNN matmul C[m,n] = A[m,k] * B[k,n] (or B^T when `tb`).
struct DnnlMatmul {
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  dnnl_primitive_t prim;
  dnnl_memory_desc_t a, b, c;
  DnnlMatmul(int64_t m, int64_t n, int64_t k, bool tb, dnnl_data_type_t in,
             dnnl_data_type_t out) {
    CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
    CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
    dnnl_dims_t ad = {m, k}, bd = {k, n}, cd = {m, n};
    dnnl_dims_t as = {k, 1}, bs = {tb ? 1 : n, tb ? k : 1}, cs = {n, 1};
    CHECK(dnnl_memory_desc_init_by_strides(&a, 2, ad, in, as));
    CHECK(dnnl_memory_desc_init_by_strides(&b, 2, bd, in, bs));
    CHECK(dnnl_memory_desc_init_by_strides(&c, 2, cd, out, cs));
    dnnl_matmul_desc_t desc;
    CHECK(dnnl_matmul_desc_init(&desc, &a, &b, nullptr, &c));
    dnnl_primitive_desc_t pd;
    CHECK(dnnl_primitive_desc_create(&pd, &desc, nullptr, engine, nullptr));
    const char *impl = nullptr;
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    std::fprintf(stderr, "    oneDNN %d -> %d: %s\n", int(in), int(out),
                 impl ? impl : "?");
    CHECK(dnnl_primitive_create(&prim, pd));
    dnnl_primitive_desc_destroy(pd);
  }
  void run(void *pa, void *pb, void *pc) {
    dnnl_memory_t ma, mb, mc;
    CHECK(dnnl_memory_create(&ma, &a, engine, pa));
    CHECK(dnnl_memory_create(&mb, &b, engine, pb));
    CHECK(dnnl_memory_create(&mc, &c, engine, pc));
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}};
    CHECK(dnnl_primitive_execute(prim, stream, 3, args));
    CHECK(dnnl_stream_wait(stream));
    dnnl_memory_destroy(ma);
    dnnl_memory_destroy(mb);
    dnnl_memory_destroy(mc);
  }
};

} // namespace

int main(int argc, char **argv) {
  int reps = argc > 1 ? std::atoi(argv[1]) : 10;
  // m, n, k, transpose_rhs: the MLP (batch 512, 1024-4096-4096-1024), its
  // weight gradient, and the transformer's projections (seq 256 x batch 8).
  struct Shape {
    int64_t m, n, k;
    bool tb;
    const char *what;
  } shapes[] = {
      {512, 4096, 1024, false, "mlp fc1 forward"},
      {512, 4096, 4096, false, "mlp fc2 forward"},
      {512, 4096, 4096, true, "mlp fc2 dx (B^T)"},
      {2048, 2048, 512, false, "transformer ffn1"},
      {2048, 512, 512, false, "transformer qkv/out"},
      // The ViT of torch_cpu_steps.py (8 images of 65 tokens, hidden 256,
      // MLP 1024): its MLP and attention projections, forward and dx.
      {520, 1024, 256, false, "vit fc1"},
      {520, 256, 1024, false, "vit fc2"},
      {520, 768, 256, false, "vit qkv"},
      {520, 256, 256, false, "vit out"},
      {520, 256, 1024, true, "vit fc1 dx (B^T)"},
      {520, 1024, 256, true, "vit fc2 dx (B^T)"},
  };
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  std::printf(
      "| shape | variant | min ms | median ms | TFLOP/s | vs sgemm |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (const Shape &s : shapes) {
    std::vector<float> a(s.m * s.k), b(s.k * s.n), c(s.m * s.n);
    for (float &x : a)
      x = dist(rng);
    for (float &x : b)
      x = dist(rng);
    std::vector<uint16_t> a16(a.size()), b16(b.size()), c16(c.size());
    std::transform(a.begin(), a.end(), a16.begin(), toBF16);
    std::transform(b.begin(), b.end(), b16.begin(), toBF16);
    double flop = 2.0 * s.m * s.n * s.k;
    auto tb = s.tb ? CblasTrans : CblasNoTrans;
    int64_t ldb = s.tb ? s.k : s.n;
    DnnlMatmul f32(s.m, s.n, s.k, s.tb, dnnl_f32, dnnl_f32);
    DnnlMatmul bf(s.m, s.n, s.k, s.tb, dnnl_bf16, dnnl_bf16);
    DnnlMatmul bfOut32(s.m, s.n, s.k, s.tb, dnnl_bf16, dnnl_f32);
    struct Variant {
      const char *name;
      std::function<void()> run;
    } variants[] = {
        {"openblas sgemm f32",
         [&] {
           cblas_sgemm(CblasRowMajor, CblasNoTrans, tb, s.m, s.n, s.k, 1.0f,
                       a.data(), s.k, b.data(), ldb, 0.0f, c.data(), s.n);
         }},
        {"onednn f32", [&] { f32.run(a.data(), b.data(), c.data()); }},
        {"onednn bf16->bf16",
         [&] { bf.run(a16.data(), b16.data(), c16.data()); }},
        {"onednn bf16->f32",
         [&] { bfOut32.run(a16.data(), b16.data(), c.data()); }},
    };
    double base = 0;
    for (const Variant &v : variants) {
      Timing t = measure(v.run, reps);
      if (base == 0)
        base = t.median;
      std::printf("| %s %ldx%ldx%ld | %s | %.3f | %.3f | %.2f | %.2fx |\n",
                  s.what, long(s.m), long(s.n), long(s.k), v.name, t.min,
                  t.median, flop / t.median / 1e9, base / t.median);
    }
  }
  return 0;
}
