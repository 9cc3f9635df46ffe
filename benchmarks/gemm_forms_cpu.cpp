//===- gemm_forms_cpu.cpp - one product, several GEMM forms, on the CPU ---===//
//
// Times the f32 GEMMs of the ViT benchmark step (torch_cpu_steps.py's vit:
// 8 images of 65 tokens, width 256, MLP 1024, 4 heads of 64) in the form the
// runtime calls oneDNN with (runtime/lib/CPU/Matmul.cpp: transposed operands
// read through strides) against the forms it could use instead:
//  - "no transposes": the same product on operands already laid out as the
//    GEMM wants them, the transposition itself not counted (what keeping a
//    transposed copy of each weight, or of an activation, could gain at
//    most);
//  - "dnnl_sgemm": oneDNN's BLAS-like GEMM (its "gemm:jit" kernels);
//  - for a weight gradient, oneDNN's inner product backward-weights
//    primitive, which computes the bias gradient in the same call, against
//    the matmul plus the runtime's column sum (mpReduce): plain weights
//    ("gemm:jit"), or its preferred blocked layout reordered back to plain;
//  - for the attention's batched products, one oneDNN call per matrix on
//    OpenMP threads, or dnnl_sgemm per matrix, against the batched call;
//  - for the projections, mpMatmul itself: the runtime's call, which on
//    AVX2 (MP_CPU_ISA=avx2) runs its own packed GEMM (runtime/lib/CPU/
//    Gemm.h; with MP_PACKED_GEMM=0, oneDNN's jit GEMM from operands with
//    rows of 2 KB copied into padded rows, DNNL_MAX_CPU_ISA=AVX2 capping
//    oneDNN there) and on AVX-512 oneDNN's brgemm (the packed GEMM with
//    MP_PACKED_GEMM=1).
// The shapes are the ones MP_PROFILE_SHAPES=1 lists for that step. Variants
// of one shape run in turn, round after round, so a drift of the machine's
// speed reaches all of them; each line has the median, GFLOP/s and the
// ratio of the runtime's form to it (above 1: this form is faster).
// Operands stay in cache between calls here, which a step does not give.
//
//   g++ -O2 -fopenmp -I runtime/include benchmarks/gemm_forms_cpu.cpp
//       build/runtime/libmp_runtime.a -ldnnl -lopenblas -o gemm_forms_cpu
//   ./gemm_forms_cpu [rounds]
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace {

#define CHECK(x)                                                               \
  do {                                                                         \
    if ((x) != dnnl_success) {                                                 \
      std::fprintf(stderr, "oneDNN call failed: %s\n", #x);                    \
      std::exit(1);                                                            \
    }                                                                          \
  } while (0)

dnnl_engine_t engine;
dnnl_stream_t stream;

/// Binds `mds` to `data` in the order of `args`, runs `p` and waits.
void execute(dnnl_primitive_t p, std::vector<int> args,
             std::vector<const dnnl_memory_desc_t *> mds,
             std::vector<void *> data) {
  std::vector<dnnl_exec_arg_t> bound;
  for (size_t i = 0; i < args.size(); ++i) {
    dnnl_memory_t m;
    CHECK(dnnl_memory_create(&m, mds[i], engine, data[i]));
    bound.push_back({args[i], m});
  }
  CHECK(dnnl_primitive_execute(p, stream, int(bound.size()), bound.data()));
  CHECK(dnnl_stream_wait(stream));
  for (dnnl_exec_arg_t &a : bound)
    dnnl_memory_destroy(a.memory);
}

/// A [rows, cols] f32 matrix for the runtime's calls.
mpTensor matrix(float *data, int64_t rows, int64_t cols) {
  mpTensor t{};
  t.data = data;
  t.elementType = MP_F32;
  t.rank = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  return t;
}

/// mpMatmul(lhs, rhs, out) with transposes, computing in f32.
void runtimeMatmul(mpTensor lhs, mpTensor rhs, mpTensor out, bool ta,
                   bool tb) {
  if (mpMatmul(&lhs, &rhs, &out, ta, tb, MP_F32) != MP_OK) {
    std::fprintf(stderr, "mpMatmul failed\n");
    std::exit(1);
  }
}

dnnl_primitive_t create(const_dnnl_op_desc_t desc,
                        const_dnnl_primitive_desc_t hint = nullptr,
                        dnnl_primitive_desc_t *keep = nullptr) {
  dnnl_primitive_desc_t pd;
  CHECK(dnnl_primitive_desc_create(&pd, desc, nullptr, engine, hint));
  dnnl_primitive_t p;
  CHECK(dnnl_primitive_create(&p, pd));
  if (keep)
    *keep = pd;
  else
    dnnl_primitive_desc_destroy(pd);
  return p;
}

/// C[b][m,n] = A[b][m,k] B[b][k,n], A stored [k,m] when `ta`, B [n,k] when
/// `tb`, as runtime/lib/CPU/Dnnl.cpp describes them.
struct Matmul {
  dnnl_primitive_t p;
  dnnl_memory_desc_t a, b, c;
  Matmul(int64_t batch, int64_t m, int64_t n, int64_t k, bool ta, bool tb) {
    dnnl_dims_t ad = {batch, m, k}, bd = {batch, k, n}, cd = {batch, m, n};
    dnnl_dims_t as = {m * k, ta ? 1 : k, ta ? m : 1};
    dnnl_dims_t bs = {k * n, tb ? 1 : n, tb ? k : 1};
    dnnl_dims_t cs = {m * n, n, 1};
    CHECK(dnnl_memory_desc_init_by_strides(&a, 3, ad, dnnl_f32, as));
    CHECK(dnnl_memory_desc_init_by_strides(&b, 3, bd, dnnl_f32, bs));
    CHECK(dnnl_memory_desc_init_by_strides(&c, 3, cd, dnnl_f32, cs));
    dnnl_matmul_desc_t desc;
    CHECK(dnnl_matmul_desc_init(&desc, &a, &b, nullptr, &c));
    p = create(&desc);
  }
  void run(float *pa, float *pb, float *pc) {
    execute(p, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST}, {&a, &b, &c},
            {pa, pb, pc});
  }
};

/// diff_weights [oc, ic] and diff_bias [oc] from src [mb, ic] and diff_dst
/// [mb, oc]: with plain weights, or in oneDNN's chosen layout reordered to
/// plain after the call.
struct InnerProductWeights {
  dnnl_primitive_t p, reorder = nullptr;
  dnnl_memory_desc_t src, weights, plain, bias, dst;
  std::vector<float> blocked;
  InnerProductWeights(int64_t mb, int64_t ic, int64_t oc, bool anyLayout) {
    dnnl_dims_t sd = {mb, ic}, wd = {oc, ic}, bd = {oc}, dd = {mb, oc};
    CHECK(dnnl_memory_desc_init_by_tag(&src, 2, sd, dnnl_f32, dnnl_nc));
    CHECK(dnnl_memory_desc_init_by_tag(&plain, 2, wd, dnnl_f32, dnnl_oi));
    CHECK(dnnl_memory_desc_init_by_tag(
        &weights, 2, wd, dnnl_f32, anyLayout ? dnnl_format_tag_any : dnnl_oi));
    CHECK(dnnl_memory_desc_init_by_tag(&bias, 1, bd, dnnl_f32, dnnl_x));
    CHECK(dnnl_memory_desc_init_by_tag(&dst, 2, dd, dnnl_f32, dnnl_nc));
    dnnl_inner_product_desc_t forward, backward;
    CHECK(dnnl_inner_product_forward_desc_init(
        &forward, dnnl_forward_training, &src, &weights, &bias, &dst));
    dnnl_primitive_desc_t forwardPd, pd;
    CHECK(dnnl_primitive_desc_create(&forwardPd, &forward, nullptr, engine,
                                     nullptr));
    CHECK(dnnl_inner_product_backward_weights_desc_init(&backward, &src,
                                                        &weights, &bias, &dst));
    p = create(&backward, forwardPd, &pd);
    weights = *dnnl_primitive_desc_query_md(pd, dnnl_query_diff_weights_md, 0);
    if (!dnnl_memory_desc_equal(&weights, &plain)) {
      dnnl_primitive_desc_t rpd;
      CHECK(dnnl_reorder_primitive_desc_create(&rpd, &weights, engine, &plain,
                                               engine, nullptr));
      CHECK(dnnl_primitive_create(&reorder, rpd));
      dnnl_primitive_desc_destroy(rpd);
      blocked.resize(dnnl_memory_desc_get_size(&weights) / sizeof(float));
    }
    dnnl_primitive_desc_destroy(pd);
    dnnl_primitive_desc_destroy(forwardPd);
  }
  void run(float *x, float *dy, float *dw, float *db) {
    float *into = reorder ? blocked.data() : dw;
    execute(p,
            {DNNL_ARG_SRC, DNNL_ARG_DIFF_DST, DNNL_ARG_DIFF_WEIGHTS,
             DNNL_ARG_DIFF_BIAS},
            {&src, &dst, &weights, &bias}, {x, dy, into, db});
    if (reorder)
      execute(reorder, {DNNL_ARG_FROM, DNNL_ARG_TO}, {&weights, &plain},
              {into, dw});
  }
};

/// out[j] = the sum over the rows of x [rows, cols]: the runtime's reduce,
/// which a step calls for a bias gradient.
void columnSums(float *x, int64_t rows, int64_t cols, float *out) {
  mpTensor in{x, MP_F32, 2, {rows, cols}}, sums{out, MP_F32, 1, {cols}};
  int64_t axis = 0;
  if (mpReduce(MP_REDUCE_SUM, &in, &sums, &axis, 1, MP_F32) != MP_OK) {
    std::fprintf(stderr, "mpReduce failed\n");
    std::exit(1);
  }
}

double nowUs() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Variant {
  std::string name;
  std::function<void()> run;
};

/// Runs the variants in turn for `rounds` rounds (one call each to warm
/// up) and prints a line each; the first is the runtime's form.
void report(const char *shape, double flop, std::vector<Variant> variants,
            int rounds) {
  std::vector<std::vector<double>> us(variants.size());
  for (Variant &v : variants)
    v.run();
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < variants.size(); ++i) {
      double t0 = nowUs();
      variants[i].run();
      us[i].push_back(nowUs() - t0);
    }
  double base = 0;
  for (size_t i = 0; i < variants.size(); ++i) {
    std::sort(us[i].begin(), us[i].end());
    double median = us[i][us[i].size() / 2];
    if (i == 0)
      base = median;
    std::printf("| %s | %s | %.1f | %.0f | %.2f |\n", shape,
                variants[i].name.c_str(), median, flop / median * 1e-3,
                base / median);
  }
}

} // namespace

int main(int argc, char **argv) {
  int rounds = argc > 1 ? std::atoi(argv[1]) : 40;
  CHECK(dnnl_engine_create(&engine, dnnl_cpu, 0));
  CHECK(dnnl_stream_create(&stream, engine, dnnl_stream_default_flags));
  std::mt19937 rng(1);
  std::normal_distribution<float> dist;
  auto fill = [&](std::vector<float> &v) {
    for (float &x : v)
      x = dist(rng);
  };
  std::printf("| product (m x n x k) | form | median us | GFLOP/s | "
              "runtime's / this |\n|---|---|---|---|---|\n");

  // The projections: forward (x W^T, W stored [out, in]), input gradient
  // (dy W) and weight gradient (dy^T x; with the bias gradient).
  struct Linear {
    const char *name;
    int64_t in, out;
  } linears[] = {{"qkv", 256, 768}, {"out", 256, 256}, {"fc1", 256, 1024},
                 {"fc2", 1024, 256}};
  const int64_t tokens = 520;
  for (const Linear &l : linears) {
    std::vector<float> x(tokens * l.in), w(l.out * l.in), y(tokens * l.out);
    std::vector<float> dx(x.size()), dw(w.size()), db(l.out);
    fill(x);
    fill(w);
    fill(y);
    auto sgemm = [](char ta, char tb, int64_t m, int64_t n, int64_t k,
                    const float *a, int64_t lda, const float *b, int64_t ldb,
                    float *c) {
      CHECK(dnnl_sgemm(ta, tb, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, c, n));
    };
    char label[96];
    {
      Matmul runtime(1, tokens, l.out, l.in, false, true);
      Matmul plain(1, tokens, l.out, l.in, false, false);
      std::snprintf(label, sizeof(label), "%s forward %ldx%ldx%ld", l.name,
                    long(tokens), long(l.out), long(l.in));
      report(label, 2.0 * tokens * l.out * l.in,
             {{"oneDNN matmul, W^T through strides",
               [&] { runtime.run(x.data(), w.data(), y.data()); }},
              {"oneDNN matmul, no transposes",
               [&] { plain.run(x.data(), w.data(), y.data()); }},
              {"dnnl_sgemm",
               [&] {
                 sgemm('N', 'T', tokens, l.out, l.in, x.data(), l.in, w.data(),
                       l.in, y.data());
               }},
              {"mpMatmul",
               [&] {
                 runtimeMatmul(matrix(x.data(), tokens, l.in),
                               matrix(w.data(), l.out, l.in),
                               matrix(y.data(), tokens, l.out), false, true);
               }}},
             rounds);
    }
    {
      Matmul runtime(1, tokens, l.in, l.out, false, false);
      std::snprintf(label, sizeof(label), "%s input gradient %ldx%ldx%ld",
                    l.name, long(tokens), long(l.in), long(l.out));
      report(label, 2.0 * tokens * l.out * l.in,
             {{"oneDNN matmul",
               [&] { runtime.run(y.data(), w.data(), dx.data()); }},
              {"dnnl_sgemm",
               [&] {
                 sgemm('N', 'N', tokens, l.in, l.out, y.data(), l.out, w.data(),
                       l.in, dx.data());
               }},
              {"mpMatmul",
               [&] {
                 runtimeMatmul(matrix(y.data(), tokens, l.out),
                               matrix(w.data(), l.out, l.in),
                               matrix(dx.data(), tokens, l.in), false, false);
               }}},
             rounds);
    }
    {
      Matmul runtime(1, l.out, l.in, tokens, true, false);
      Matmul plain(1, l.out, l.in, tokens, false, false);
      InnerProductWeights ipPlain(tokens, l.in, l.out, false);
      InnerProductWeights ipAny(tokens, l.in, l.out, true);
      std::snprintf(label, sizeof(label),
                    "%s weight + bias gradient %ldx%ldx%ld", l.name,
                    long(l.out), long(l.in), long(tokens));
      report(label, 2.0 * tokens * l.out * l.in,
             {{"oneDNN matmul, dy^T through strides; column sum",
               [&] {
                 runtime.run(y.data(), x.data(), dw.data());
                 columnSums(y.data(), tokens, l.out, db.data());
               }},
              {"the same matmul without the column sum",
               [&] { runtime.run(y.data(), x.data(), dw.data()); }},
              {"oneDNN matmul, no transposes, no column sum",
               [&] { plain.run(y.data(), x.data(), dw.data()); }},
              {"oneDNN inner product, plain weights",
               [&] { ipPlain.run(x.data(), y.data(), dw.data(), db.data()); }},
              {"oneDNN inner product, its layout, reordered",
               [&] { ipAny.run(x.data(), y.data(), dw.data(), db.data()); }},
              {"mpMatmul, no column sum",
               [&] {
                 runtimeMatmul(matrix(y.data(), tokens, l.out),
                               matrix(x.data(), tokens, l.in),
                               matrix(dw.data(), l.out, l.in), true, false);
               }}},
             rounds);
    }
  }

  // Attention: 32 (images x heads) products of 65 tokens by 64 features.
  struct Batched {
    const char *name;
    int64_t m, n, k;
    bool ta, tb;
  } batched[] = {{"Q K^T", 65, 65, 64, false, false},
                 {"P V", 65, 64, 65, false, false},
                 {"dP = dO V^T", 65, 65, 64, false, true},
                 {"dV = P^T dO", 65, 64, 65, true, false},
                 {"dQ = dS K", 65, 64, 65, false, true},
                 {"dK^T = Q^T dS", 64, 65, 65, true, false}};
  const int64_t count = 32;
  for (const Batched &s : batched) {
    std::vector<float> a(count * s.m * s.k), b(count * s.k * s.n),
        c(count * s.m * s.n);
    fill(a);
    fill(b);
    Matmul runtime(count, s.m, s.n, s.k, s.ta, s.tb);
    Matmul plain(count, s.m, s.n, s.k, false, false);
    Matmul one(1, s.m, s.n, s.k, s.ta, s.tb);
    int64_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
    char label[96];
    std::snprintf(label, sizeof(label), "%s, %ld x %ldx%ldx%ld", s.name,
                  long(count), long(s.m), long(s.n), long(s.k));
    report(label, 2.0 * count * s.m * s.n * s.k,
           {{"oneDNN batched matmul",
             [&] { runtime.run(a.data(), b.data(), c.data()); }},
            {"oneDNN batched matmul, no transposes",
             [&] { plain.run(a.data(), b.data(), c.data()); }},
            {"oneDNN matmul per matrix, OpenMP over the batch",
             [&] {
#pragma omp parallel for schedule(static)
               for (int64_t i = 0; i < count; ++i)
                 one.run(a.data() + i * s.m * s.k, b.data() + i * s.k * s.n,
                         c.data() + i * s.m * s.n);
             }},
            {"dnnl_sgemm per matrix, OpenMP over the batch",
             [&] {
#pragma omp parallel for schedule(static)
               for (int64_t i = 0; i < count; ++i)
                 dnnl_sgemm(s.ta ? 'T' : 'N', s.tb ? 'T' : 'N', s.m, s.n, s.k,
                            1.0f, a.data() + i * s.m * s.k, lda,
                            b.data() + i * s.k * s.n, ldb, 0.0f,
                            c.data() + i * s.m * s.n, s.n);
             }}},
           rounds);
  }
  return 0;
}
