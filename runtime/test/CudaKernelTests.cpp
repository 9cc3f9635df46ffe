//===- CudaKernelTests.cpp - CUDA entry points against the CPU backend ----===//
//
// usage: mp-cuda-kernel-tests [--cpu-only] [seed]
//
// Runs every entry point of MPCompiled.h on both backends with the same
// argument block contents (the CPU backend on host copies, the CUDA backend
// on device copies of the same random inputs) and compares the outputs.
// The CPU backend is itself checked against float64 references by
// mp-runtime-tests, so agreement here carries that check over to the GPU.
//
// Tolerances come from the output's storage type, or from the compute type
// a case asks for where that is coarser (a GEMM of f64 operands that
// accumulates in f32): a few units of its rounding (f32 2^-24, f16 2^-11,
// bf16 2^-8) relative to the magnitude of the values, widened by the length
// of the sums where the backends add in different orders (reductions,
// GEMMs). Integer and boolean outputs (the
// found-inf flag, step counters) must match exactly.
//
// Prints one line per case and "N passed, M failed"; exits non-zero on a
// failure, and with status 2 (nothing run) when there is no CUDA device.
// --cpu-only runs the CPU half of every case alone: it checks, without a
// GPU, that every case is a valid call (the CPU backend validates each
// block as the CUDA backend does).
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPCuda.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace {

using EntryFn = void (*)(const int64_t *);

std::mt19937_64 rng;

/// One tensor of a case: its host contents, the CPU backend's copy and the
/// device copy.
struct Buffer {
  mpElementType type;
  std::vector<int64_t> shape;
  bool output;
  std::vector<uint8_t> initial, cpu, gpu;
  void *device = nullptr;

  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t bytes() const { return size_t(count()) * mpElementSize(type); }
};

double load(const std::vector<uint8_t> &data, mpElementType type, int64_t i) {
  const uint8_t *p = data.data();
  switch (type) {
  case MP_F32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
  case MP_F64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
  case MP_F16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return mpF16ToF32(v); }
  case MP_BF16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return mpBF16ToF32(v); }
  case MP_I32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
  case MP_I64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return double(v); }
  case MP_I1: return p[i];
  }
  return 0;
}

void store(std::vector<uint8_t> &data, mpElementType type, int64_t i,
           double v) {
  uint8_t *p = data.data();
  switch (type) {
  case MP_F32: { float f = float(v); std::memcpy(p + 4 * i, &f, 4); return; }
  case MP_F64: std::memcpy(p + 8 * i, &v, 8); return;
  case MP_F16: { uint16_t h = mpF32ToF16(float(v)); std::memcpy(p + 2 * i, &h, 2); return; }
  case MP_BF16: { uint16_t h = mpF32ToBF16(float(v)); std::memcpy(p + 2 * i, &h, 2); return; }
  case MP_I32: { int32_t x = int32_t(v); std::memcpy(p + 4 * i, &x, 4); return; }
  case MP_I64: { int64_t x = int64_t(v); std::memcpy(p + 8 * i, &x, 8); return; }
  case MP_I1: p[i] = v != 0; return;
  }
}

/// A case: buffers, then a function that writes the block's fields given a
/// way to emit a tensor by buffer index.
struct Case {
  std::string name;
  EntryFn cpu, gpu;
  std::vector<Buffer> buffers;
  /// Sum length for the tolerance (1 for element-wise results).
  double depth = 1;
  std::function<void(std::vector<int64_t> &, const std::function<void(int)> &)>
      fields;
  /// The accumulation type the case asks for, where it can be coarser than
  /// the output's storage (the backends may accumulate more precisely).
  mpElementType compute = MP_F64;
};

int64_t bits(double d) {
  int64_t v;
  std::memcpy(&v, &d, 8);
  return v;
}

/// Adds a buffer with values from `fill(i)`.
int add(Case &c, mpElementType type, std::vector<int64_t> shape, bool output,
        const std::function<double(int64_t)> &fill) {
  Buffer b{type, std::move(shape), output, {}, {}, {}, nullptr};
  b.initial.resize(b.bytes());
  for (int64_t i = 0; i < b.count(); ++i)
    store(b.initial, type, i, fill(i));
  c.buffers.push_back(std::move(b));
  return int(c.buffers.size()) - 1;
}

int random(Case &c, mpElementType type, std::vector<int64_t> shape,
           double lo = -2, double hi = 2) {
  std::uniform_real_distribution<double> u(lo, hi);
  return add(c, type, std::move(shape), false, [&](int64_t) { return u(rng); });
}

int output(Case &c, mpElementType type, std::vector<int64_t> shape) {
  return add(c, type, std::move(shape), true, [](int64_t) { return 0.0; });
}

int ids(Case &c, mpElementType type, std::vector<int64_t> shape, int64_t lo,
        int64_t hi) {
  std::uniform_int_distribution<int64_t> u(lo, hi - 1);
  return add(c, type, std::move(shape), false,
             [&](int64_t) { return double(u(rng)); });
}

int scalar(Case &c, mpElementType type, double v, bool isOutput = false) {
  return add(c, type, {}, isOutput, [&](int64_t) { return v; });
}

double unitRoundoff(mpElementType type) {
  switch (type) {
  case MP_F16: return std::ldexp(1.0, -11);
  case MP_BF16: return std::ldexp(1.0, -8);
  case MP_F64: return std::ldexp(1.0, -53);
  default: return std::ldexp(1.0, -24);
  }
}

int passed = 0, failed = 0;

bool cpuOnly = false;

bool runCase(Case &c) {
  // CPU: host copies.
  for (Buffer &b : c.buffers)
    b.cpu = b.initial;
  std::vector<int64_t> words{0};
  c.fields(words, [&](int k) {
    Buffer &b = c.buffers[k];
    words.push_back(int64_t(reinterpret_cast<intptr_t>(b.cpu.data())));
    words.push_back(b.type);
    words.push_back(int64_t(b.shape.size()));
    for (int64_t d : b.shape)
      words.push_back(d);
  });
  c.cpu(words.data());
  if (const char *e = mprtTakeError()) {
    std::printf("FAIL: %s: CPU backend: %s\n", c.name.c_str(), e);
    return false;
  }
  if (cpuOnly) {
    std::printf("ok: %s (CPU backend only)\n", c.name.c_str());
    return true;
  }
  // GPU: device copies of the same initial contents.
  for (Buffer &b : c.buffers) {
    b.device = mprtCudaMalloc(b.bytes());
    mprtCudaCopyToDevice(b.device, b.initial.data(), b.bytes());
  }
  words.assign(1, 0);
  c.fields(words, [&](int k) {
    Buffer &b = c.buffers[k];
    words.push_back(int64_t(reinterpret_cast<intptr_t>(b.device)));
    words.push_back(b.type);
    words.push_back(int64_t(b.shape.size()));
    for (int64_t d : b.shape)
      words.push_back(d);
  });
  c.gpu(words.data());
  for (Buffer &b : c.buffers) {
    b.gpu.resize(b.bytes());
    mprtCudaCopyToHost(b.gpu.data(), b.device, b.bytes());
  }
  mprtCudaSynchronize();
  for (Buffer &b : c.buffers)
    mprtCudaFree(b.device);
  if (const char *e = mprtTakeError()) {
    std::printf("FAIL: %s: CUDA backend: %s\n", c.name.c_str(), e);
    return false;
  }
  double worst = 0;
  for (size_t k = 0; k < c.buffers.size(); ++k) {
    Buffer &b = c.buffers[k];
    if (!b.output)
      continue;
    // The magnitude of the finite values (a masked softmax row has -inf).
    double scale = 0;
    for (int64_t i = 0; i < b.count(); ++i) {
      double x = load(b.cpu, b.type, i);
      if (std::isfinite(x))
        scale = std::max(scale, std::fabs(x));
    }
    bool exact = b.type == MP_I1 || b.type == MP_I32 || b.type == MP_I64;
    double tol = exact ? 0
                       : 8 *
                             std::max(unitRoundoff(b.type),
                                      unitRoundoff(c.compute)) *
                             (1 + std::sqrt(c.depth)) *
                             std::max(scale, 1e-30);
    for (int64_t i = 0; i < b.count(); ++i) {
      double x = load(b.cpu, b.type, i), y = load(b.gpu, b.type, i);
      if (std::isnan(x) && std::isnan(y))
        continue;
      double err = x == y ? 0 : std::fabs(x - y);
      if (!(err <= tol)) {
        std::printf("FAIL: %s: output %zu element %lld: cpu %.9g cuda %.9g "
                    "(tolerance %.3g)\n",
                    c.name.c_str(), k, (long long)i, x, y, tol);
        return false;
      }
      worst = std::max(worst, scale > 0 ? err / scale : err);
    }
  }
  std::printf("ok: %s (largest difference %.3g of the output's magnitude)\n",
              c.name.c_str(), worst);
  return true;
}

#define ENTRY(name) mprt_##name, mprtCudaGetEntry(#name)

EntryFn mprtCudaGetEntry(const char *name) {
  int32_t count = 0;
  const mprtSymbol *symbols = mprtCudaGetSymbols(&count);
  std::string wanted = std::string("mprt_") + name;
  for (int32_t k = 0; k < count; ++k)
    if (wanted == symbols[k].name)
      return reinterpret_cast<EntryFn>(symbols[k].address);
  std::fprintf(stderr, "no CUDA entry %s\n", name);
  std::exit(1);
}

std::vector<Case> cases() {
  std::vector<Case> all;
  const mpElementType floats[] = {MP_F32, MP_F16, MP_BF16};
  auto typeName = mpElementTypeName;
  using Words = std::vector<int64_t>;
  using Emit = std::function<void(int)>;

  for (mpElementType t : floats)
    for (int kind = MP_NEG; kind <= MP_COS; ++kind) {
      Case c{std::string("unary ") + std::to_string(kind) + " " + typeName(t),
             ENTRY(unary), {}, 1, nullptr};
      bool positive = kind == MP_LOG || kind == MP_SQRT || kind == MP_RSQRT;
      int in = random(c, t, {37, 19}, positive ? 0.1 : -3, 3);
      int out = output(c, t, {37, 19});
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(kind); w.push_back(MP_F32); e(in); e(out);
      };
      all.push_back(std::move(c));
    }
  for (mpElementType t : floats)
    for (int kind = MP_ADD; kind <= MP_MINIMUM; ++kind)
      for (int form = 0; form < 4; ++form) {
        // Same shapes, a broadcast row, a scalar rhs, a scalar lhs (the
        // last two through the packed scalar kernel).
        const char *forms[] = {"", " broadcast", " scalar rhs", " scalar lhs"};
        Case c{std::string("binary ") + std::to_string(kind) + " " +
                   typeName(t) + forms[form],
               ENTRY(binary), {}, 1, nullptr};
        int lhs = form == 3 ? random(c, t, {}, 0.5, 2) : random(c, t, {33, 65});
        int rhs = form == 1   ? random(c, t, {65}, 0.5, 2)
                  : form == 2 ? random(c, t, {}, 0.5, 2)
                              : random(c, t, {33, 65}, 0.5, 2);
        int out = output(c, t, {33, 65});
        c.fields = [=](Words &w, const Emit &e) {
          w.push_back(kind); w.push_back(MP_F32); e(lhs); e(rhs); e(out);
        };
        all.push_back(std::move(c));
      }
  for (mpElementType t : floats)
    for (int kind = MP_RELU_GRAD; kind <= MP_SIGMOID_GRAD; ++kind) {
      Case c{std::string("activation_grad ") + std::to_string(kind) + " " +
                 typeName(t),
             ENTRY(activation_grad), {}, 1, nullptr};
      int dy = random(c, t, {1031});
      int s = random(c, t, {1031}, -0.99, 0.99);
      int dx = output(c, t, {1031});
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(kind); w.push_back(MP_F32); e(dy); e(s); e(dx);
      };
      all.push_back(std::move(c));
    }
  {
    Case c{"unary gelu, f16 compute", ENTRY(unary), {}, 1, nullptr};
    int in = random(c, MP_F16, {4099});
    int out = output(c, MP_F16, {4099});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(MP_GELU); w.push_back(MP_F16); e(in); e(out);
    };
    all.push_back(std::move(c));
  }
  for (mpElementType t : floats)
    for (int log : {0, 1})
      for (int64_t axis : {1, 2}) {
        Case c{std::string(log ? "log_softmax " : "softmax ") + typeName(t) +
                   " axis " + std::to_string(axis),
               ENTRY(softmax), {}, 300, nullptr};
        int in = random(c, t, {3, 7, 300}, -4, 4);
        std::vector<int64_t> shape{3, 7, 300};
        int out = output(c, t, shape);
        c.fields = [=](Words &w, const Emit &e) {
          w.push_back(log); w.push_back(axis); w.push_back(MP_F32); e(in); e(out);
        };
        all.push_back(std::move(c));
        Case g{std::string(log ? "log_softmax_grad " : "softmax_grad ") +
                   typeName(t) + " axis " + std::to_string(axis),
               ENTRY(softmax_grad), {}, 300, nullptr};
        int dy = random(g, t, shape);
        int y = log ? random(g, t, shape, -6, -0.1) : random(g, t, shape, 0, 0.05);
        int dx = output(g, t, shape);
        g.fields = [=](Words &w, const Emit &e) {
          w.push_back(log); w.push_back(axis); w.push_back(MP_F32); e(dy); e(y); e(dx);
        };
        all.push_back(std::move(g));
      }
  // Contiguous rows of every length class of the warp-per-row kernels
  // (and past the longest, 1024, where the block kernel takes over), 37
  // rows (not a whole number of blocks), f32 and narrow compute types.
  // Forward rows are causally masked: row r keeps its first r % length + 1
  // elements and the others are -inf.
  for (mpElementType t : floats)
    for (mpElementType compute : {MP_F32, MP_BF16, MP_F16})
      for (int64_t length : {1, 33, 128, 129, 512, 1024, 1025})
        for (int log : {0, 1}) {
          std::string name = std::string(typeName(t)) + " rows of " +
                             std::to_string(length) + ", " +
                             typeName(compute) + " compute";
          std::vector<int64_t> shape{37, length};
          Case c{std::string(log ? "log_softmax " : "softmax ") + name,
                 ENTRY(softmax), {}, double(length), nullptr};
          c.compute = compute;
          std::uniform_real_distribution<double> u(-4, 4);
          int in = add(c, t, shape, false, [&](int64_t i) {
            return i % length > (i / length) % length
                       ? -std::numeric_limits<double>::infinity()
                       : u(rng);
          });
          int out = output(c, t, shape);
          c.fields = [=](Words &w, const Emit &e) {
            w.push_back(log); w.push_back(1); w.push_back(compute);
            e(in); e(out);
          };
          all.push_back(std::move(c));
          Case g{std::string(log ? "log_softmax_grad " : "softmax_grad ") +
                     name,
                 ENTRY(softmax_grad), {}, double(length), nullptr};
          g.compute = compute;
          int dy = random(g, t, shape);
          int y = log ? random(g, t, shape, -6, -0.1)
                      : random(g, t, shape, 0, 2.0 / double(length));
          int dx = output(g, t, shape);
          g.fields = [=](Words &w, const Emit &e) {
            w.push_back(log); w.push_back(1); w.push_back(compute);
            e(dy); e(y); e(dx);
          };
          all.push_back(std::move(g));
        }
  // Running sums of positive terms (no cancellation to hide the rounding).
  for (mpElementType t : floats)
    for (int64_t axis : {1, 2})
      for (int flags : {0, 1, 2, 3}) {
        int exclusive = flags & 1, reverse = flags >> 1;
        Case c{std::string("cumsum ") + typeName(t) + " axis " +
                   std::to_string(axis) + (exclusive ? " exclusive" : "") +
                   (reverse ? " reverse" : ""),
               ENTRY(cumsum), {}, axis == 1 ? 7.0 : 300.0, nullptr};
        int in = random(c, t, {3, 7, 300}, 0, 1);
        int out = output(c, t, {3, 7, 300});
        c.fields = [=](Words &w, const Emit &e) {
          w.push_back(axis); w.push_back(exclusive); w.push_back(reverse);
          w.push_back(MP_F32); e(in); e(out);
        };
        all.push_back(std::move(c));
      }
  struct ReduceCase { int kind; std::vector<int64_t> axes; std::vector<int64_t> out; };
  for (mpElementType t : floats)
    for (const ReduceCase &r :
         {ReduceCase{MP_REDUCE_SUM, {0}, {96, 17}},
          ReduceCase{MP_REDUCE_MEAN, {2}, {513, 96}},
          ReduceCase{MP_REDUCE_MAX, {1}, {513, 17}},
          ReduceCase{MP_REDUCE_SUM, {0, 2}, {96}},
          ReduceCase{MP_REDUCE_MEAN, {0, 1, 2}, {}}}) {
      std::string axes;
      for (int64_t a : r.axes)
        axes += std::to_string(a);
      Case c{std::string("reduce ") + std::to_string(r.kind) + " axes " + axes +
                 " " + typeName(t),
             ENTRY(reduce), {}, 513.0 * 96, nullptr};
      int in = random(c, t, {513, 96, 17});
      int out = output(c, t, r.out);
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(r.kind); w.push_back(MP_F32); w.push_back(int64_t(r.axes.size()));
        for (int64_t a : r.axes) w.push_back(a);
        e(in); e(out);
      };
      all.push_back(std::move(c));
    }
  // Reductions over leading axes (the column-sum kernel without index
  // arithmetic): a bias gradient's [rows, columns], two leading axes, one
  // column, and fewer rows than a group holds.
  struct LeadingCase {
    int kind;
    std::vector<int64_t> in, axes, out;
  };
  for (mpElementType t : floats)
    for (const LeadingCase &r :
         {LeadingCase{MP_REDUCE_SUM, {1000, 96}, {0}, {96}},
          LeadingCase{MP_REDUCE_MEAN, {40, 25, 33}, {0, 1}, {33}},
          LeadingCase{MP_REDUCE_MAX, {300, 2, 65}, {0}, {2, 65}},
          LeadingCase{MP_REDUCE_SUM, {4099, 1}, {0}, {1}},
          LeadingCase{MP_REDUCE_SUM, {5, 40}, {0}, {40}}}) {
      std::string name = "reduce " + std::to_string(r.kind) + " leading [";
      for (size_t d = 0; d < r.in.size(); ++d)
        name += (d ? ", " : "") + std::to_string(r.in[d]);
      name += "]";
      int64_t count = 1;
      for (int64_t a : r.axes)
        count *= r.in[a];
      Case c{name + " " + typeName(t), ENTRY(reduce), {}, double(count),
             nullptr};
      int in = random(c, t, r.in);
      int out = output(c, t, r.out);
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(r.kind); w.push_back(MP_F32);
        w.push_back(int64_t(r.axes.size()));
        for (int64_t a : r.axes) w.push_back(a);
        e(in); e(out);
      };
      all.push_back(std::move(c));
    }
  for (mpElementType t : floats) {
    Case c{std::string("softmax_cross_entropy ") + typeName(t),
           ENTRY(softmax_cross_entropy), {}, 1000, nullptr};
    int logits = random(c, t, {4, 250, 1000}, -5, 5);
    int labels = ids(c, MP_I32, {4, 250}, -1, 1001); // some out of range
    int loss = output(c, MP_F32, {});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(MP_F32); e(logits); e(labels); e(loss);
    };
    all.push_back(std::move(c));
    Case g{std::string("softmax_cross_entropy_grad ") + typeName(t),
           ENTRY(softmax_cross_entropy_grad), {}, 1000, nullptr};
    int dloss = scalar(g, MP_F32, 1024.0);
    int glogits = random(g, t, {1000, 64}, -5, 5);
    int glabels = ids(g, MP_I64, {1000}, -1, 65); // some ignored
    int dlogits = output(g, t, {1000, 64});
    g.fields = [=](Words &w, const Emit &e) {
      w.push_back(MP_F32); e(dloss); e(glogits); e(glabels); e(dlogits);
    };
    all.push_back(std::move(g));
    Case m{std::string("mse_loss ") + typeName(t), ENTRY(mse_loss), {}, 20000, nullptr};
    int p = random(m, t, {200, 100}), tt = random(m, t, {200, 100});
    int mloss = output(m, MP_F32, {});
    m.fields = [=](Words &w, const Emit &e) { w.push_back(MP_F32); e(p); e(tt); e(mloss); };
    all.push_back(std::move(m));
    Case mg{std::string("mse_loss_grad ") + typeName(t), ENTRY(mse_loss_grad), {}, 1, nullptr};
    int seed = scalar(mg, MP_F32, 65536.0);
    int p2 = random(mg, t, {200, 100}), t2 = random(mg, t, {200, 100});
    int dp = output(mg, t, {200, 100});
    mg.fields = [=](Words &w, const Emit &e) { w.push_back(MP_F32); e(seed); e(p2); e(t2); e(dp); };
    all.push_back(std::move(mg));
  }
  for (mpElementType t : floats) {
    Case c{std::string("layer_norm ") + typeName(t), ENTRY(layer_norm), {}, 768, nullptr};
    int x = random(c, t, {6, 50, 768}, -3, 5);
    int scale = random(c, MP_F32, {768}, 0.5, 1.5), bias = random(c, MP_F32, {768});
    int y = output(c, t, {6, 50, 768});
    int mean = output(c, MP_F32, {6, 50}), rstd = output(c, MP_F32, {6, 50});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(2); w.push_back(bits(1e-5)); w.push_back(MP_F32);
      e(x); e(scale); e(bias); e(y); e(mean); e(rstd);
    };
    all.push_back(std::move(c));
    Case g{std::string("layer_norm_grad ") + typeName(t), ENTRY(layer_norm_grad), {}, 768, nullptr};
    int dy = random(g, t, {300, 768});
    int gx = random(g, t, {300, 768});
    int gs = random(g, MP_F32, {768}, 0.5, 1.5);
    int gm = random(g, MP_F32, {300}, -0.1, 0.1), gr = random(g, MP_F32, {300}, 0.5, 1.5);
    int dx = output(g, t, {300, 768});
    int ds = output(g, MP_F32, {768}), db = output(g, MP_F32, {768});
    g.fields = [=](Words &w, const Emit &e) {
      w.push_back(1); w.push_back(MP_F32);
      e(dy); e(gx); e(gs); e(gm); e(gr); e(dx); e(ds); e(db);
    };
    all.push_back(std::move(g));
  }
  // Dropout: the same Philox mask on both backends (values in [0.5, 2], so
  // one element masked differently is far outside the tolerance), at an
  // odd size that ends inside a block of four.
  for (mpElementType t : floats) {
    for (mpElementType compute : {MP_F32, MP_F64}) {
      Case c{std::string("dropout ") + typeName(t) + " compute " + typeName(compute),
             ENTRY(dropout), {}, 1, nullptr};
      int x = random(c, t, {37, 1001}, 0.5, 2);
      int seed = scalar(c, MP_I64, 4503599627370497.0);
      int y = output(c, t, {37, 1001});
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(bits(0.3)); w.push_back(5); w.push_back(compute);
        e(x); e(seed); e(y);
      };
      all.push_back(std::move(c));
    }
  }
  for (mpElementType t : floats) {
    Case c{std::string("random_uniform ") + typeName(t),
           ENTRY(random_uniform), {}, 1, nullptr};
    int seed = scalar(c, MP_I64, 4503599627370497.0);
    int y = output(c, t, {37, 1001});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(bits(-0.5)); w.push_back(bits(2.0)); w.push_back(9);
      e(seed); e(y);
    };
    all.push_back(std::move(c));
  }
  {
    Case c{"next_seed", ENTRY(next_seed), {}, 1, nullptr};
    int seed = scalar(c, MP_I64, 41), next = scalar(c, MP_I64, 0, true);
    c.fields = [=](Words &, const Emit &e) { e(seed); e(next); };
    all.push_back(std::move(c));
  }
  // Convolutions (strides, dilation, asymmetric padding, groups, both
  // layouts), pooling and batch norm against the CPU's reference loops.
  for (mpElementType t : floats) {
    for (int last = 0; last < 2; ++last) {
      auto act = [&](int64_t c, int64_t h, int64_t w) {
        return last ? std::vector<int64_t>{4, h, w, c}
                    : std::vector<int64_t>{4, c, h, w};
      };
      // 12 -> 16 channels in 2 groups, 3x3 kernel, stride (2, 1), dilation
      // (1, 2), padding (1, 0, 2, 1): 17x15 -> 9x12.
      auto geometry = [=](Words &w, int64_t pass) {
        w.push_back(pass); w.push_back(MP_F32);
        for (int64_t v : {2, 1, 1, 0, 2, 1, 1, 2, 2})
          w.push_back(v);
        w.push_back(last);
      };
      std::string layout = last ? " nhwc " : " nchw ";
      Case c{"conv2d" + layout + typeName(t), ENTRY(conv2d), {}, 54, nullptr};
      int x = random(c, t, act(12, 17, 15)), f = random(c, t, {16, 6, 3, 3});
      int y = output(c, t, act(16, 9, 12));
      c.fields = [=](Words &w, const Emit &e) { geometry(w, 0); e(x); e(f); e(y); };
      all.push_back(std::move(c));
      Case gi{"conv2d_grad_input" + layout + typeName(t), ENTRY(conv2d), {}, 72, nullptr};
      int dy = random(gi, t, act(16, 9, 12)), gf = random(gi, t, {16, 6, 3, 3});
      int dx = output(gi, t, act(12, 17, 15));
      gi.fields = [=](Words &w, const Emit &e) { geometry(w, 1); e(dy); e(gf); e(dx); };
      all.push_back(std::move(gi));
      Case gw{"conv2d_grad_filter" + layout + typeName(t), ENTRY(conv2d), {}, 432, nullptr};
      int dy2 = random(gw, t, act(16, 9, 12)), gx = random(gw, t, act(12, 17, 15));
      int df = output(gw, MP_F32, {16, 6, 3, 3});
      gw.fields = [=](Words &w, const Emit &e) { geometry(w, 2); e(dy2); e(gx); e(df); };
      all.push_back(std::move(gw));
      for (int kind : {MP_POOL_MAX, MP_POOL_AVG, MP_POOL_AVG_INCLUDE_PAD}) {
        auto pool = [=](Words &w) {
          w.push_back(kind); w.push_back(MP_F32);
          for (int64_t v : {3, 2, 2, 2, 1, 0, 2, 1}) // window, strides, padding
            w.push_back(v);
          w.push_back(last);
        };
        std::string name = kind == MP_POOL_MAX ? "max_pool" : kind == MP_POOL_AVG ? "avg_pool" : "avg_pool_pad";
        Case p{name + layout + typeName(t), ENTRY(pool2d), {}, 6, nullptr};
        int px = random(p, t, act(5, 17, 15)), py = output(p, t, act(5, 9, 8));
        p.fields = [=](Words &w, const Emit &e) { pool(w); e(px); e(py); };
        all.push_back(std::move(p));
        Case pg{name + "_grad" + layout + typeName(t), ENTRY(pool2d_grad), {}, 6, nullptr};
        int pdy = random(pg, t, act(5, 9, 8)), pin = random(pg, t, act(5, 17, 15));
        int pdx = output(pg, t, act(5, 17, 15));
        pg.fields = [=](Words &w, const Emit &e) {
          pool(w); w.push_back(kind == MP_POOL_MAX);
          e(pdy); if (kind == MP_POOL_MAX) e(pin); e(pdx);
        };
        all.push_back(std::move(pg));
      }
      Case bn{"batch_norm" + layout + typeName(t), ENTRY(batch_norm), {}, 600, nullptr};
      int bx = random(bn, t, act(6, 10, 15), -3, 5);
      int bs = random(bn, MP_F32, {6}, 0.5, 1.5), bb = random(bn, MP_F32, {6});
      int rm = random(bn, MP_F32, {6}), rv = random(bn, MP_F32, {6}, 0.5, 2);
      int by = output(bn, t, act(6, 10, 15));
      int bm = output(bn, MP_F32, {6}), br = output(bn, MP_F32, {6});
      int nm = output(bn, MP_F32, {6}), nv = output(bn, MP_F32, {6});
      bn.fields = [=](Words &w, const Emit &e) {
        w.push_back(bits(1e-5)); w.push_back(bits(0.1)); w.push_back(last);
        w.push_back(MP_F32);
        e(bx); e(bs); e(bb); e(rm); e(rv); e(by); e(bm); e(br); e(nm); e(nv);
      };
      all.push_back(std::move(bn));
      Case bg{"batch_norm_grad" + layout + typeName(t), ENTRY(batch_norm_grad), {}, 600, nullptr};
      int gdy = random(bg, t, act(6, 10, 15)), gbx = random(bg, t, act(6, 10, 15));
      int gsc = random(bg, MP_F32, {6}, 0.5, 1.5);
      int gme = random(bg, MP_F32, {6}, -0.1, 0.1), grs = random(bg, MP_F32, {6}, 0.5, 1.5);
      int gdx = output(bg, t, act(6, 10, 15));
      int gds = output(bg, MP_F32, {6}), gdb = output(bg, t, {6}); // own types
      bg.fields = [=](Words &w, const Emit &e) {
        w.push_back(last); w.push_back(MP_F32);
        e(gdy); e(gbx); e(gsc); e(gme); e(grs); e(gdx); e(gds); e(gdb);
      };
      all.push_back(std::move(bg));
    }
  }
  for (mpElementType t : floats) {
    Case c{std::string("gather ") + typeName(t), ENTRY(gather), {}, 1, nullptr};
    int table = random(c, t, {100, 48});
    int idx = ids(c, MP_I64, {8, 33}, -110, 110); // from the end, clamped
    int out = output(c, t, {8, 33, 48});
    c.fields = [=](Words &, const Emit &e) { e(table); e(idx); e(out); };
    all.push_back(std::move(c));
    Case g{std::string("gather_grad ") + typeName(t), ENTRY(gather_grad), {}, 64, nullptr};
    int grad = random(g, t, {16, 64, 48});
    int gids = ids(g, MP_I32, {16, 64}, -40, 40); // repeats, some dropped
    int gtable = output(g, t, {37, 48});
    g.fields = [=](Words &w, const Emit &e) { w.push_back(MP_F32); e(grad); e(gids); e(gtable); };
    all.push_back(std::move(g));
  }
  for (mpElementType t : {MP_F32, MP_F16, MP_I64}) {
    Case c{std::string("transpose ") + typeName(t), ENTRY(transpose), {}, 1, nullptr};
    int in = t == MP_I64 ? ids(c, t, {2, 5, 3, 7}, -9, 9) : random(c, t, {2, 5, 3, 7});
    int out = output(c, t, {2, 3, 5, 7});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(4); for (int64_t p : {0, 2, 1, 3}) w.push_back(p); e(in); e(out);
    };
    all.push_back(std::move(c));
  }
  for (mpElementType from : floats)
    for (mpElementType to : floats) {
      Case c{std::string("copy ") + typeName(from) + " -> " + typeName(to),
             ENTRY(copy), {}, 1, nullptr};
      int in = random(c, from, {1001}, -70000, 70000);
      int out = output(c, to, {7, 143});
      c.fields = [=](Words &, const Emit &e) { e(in); e(out); };
      all.push_back(std::move(c));
    }
  // Conversions to and from integers and i1: truncation, saturation
  // (values past int32's range), zeros among the values for i1.
  struct IntCopy {
    mpElementType from, to;
    double lo, hi;
    bool integral;
  };
  for (const IntCopy &k : {IntCopy{MP_I64, MP_F32, -70000, 70000, true},
                           IntCopy{MP_F32, MP_I64, -70000, 70000, false},
                           IntCopy{MP_F64, MP_I32, -5e9, 5e9, false},
                           IntCopy{MP_I64, MP_I32, -5e9, 5e9, true},
                           IntCopy{MP_F16, MP_I1, -2, 3, true},
                           IntCopy{MP_I1, MP_BF16, 0, 2, true},
                           IntCopy{MP_I64, MP_I1, -2, 3, true}}) {
    Case c{std::string("copy ") + typeName(k.from) + " -> " + typeName(k.to),
           ENTRY(copy), {}, 1, nullptr};
    int in = k.integral ? ids(c, k.from, {1001}, int64_t(k.lo), int64_t(k.hi))
                        : random(c, k.from, {1001}, k.lo, k.hi);
    int out = output(c, k.to, {7, 143});
    c.fields = [=](Words &, const Emit &e) { e(in); e(out); };
    all.push_back(std::move(c));
  }
  // Comparisons on small integer values (many ties), broadcast both ways.
  for (mpElementType t : {MP_F32, MP_F16, MP_BF16, MP_F64, MP_I64, MP_I1})
    for (int kind = MP_EQ; kind <= MP_GE; ++kind) {
      Case c{std::string("compare ") + std::to_string(kind) + " " +
                 typeName(t),
             ENTRY(compare), {}, 1, nullptr};
      int64_t hi = t == MP_I1 ? 2 : 3, lo = t == MP_I1 ? 0 : -3;
      int lhs = ids(c, t, {6, 1, 17}, lo, hi);
      int rhs = ids(c, t, {5, 17}, lo, hi);
      int out = output(c, MP_I1, {6, 5, 17});
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(kind); e(lhs); e(rhs); e(out);
      };
      all.push_back(std::move(c));
    }
  for (mpElementType t : {MP_F32, MP_F16, MP_BF16, MP_F64, MP_I64, MP_I1}) {
    Case c{std::string("select ") + typeName(t), ENTRY(select), {}, 1,
           nullptr};
    int cond = ids(c, MP_I1, {4, 1, 9}, 0, 2);
    int onTrue = t == MP_I1 ? ids(c, t, {4, 3, 9}, 0, 2)
                            : random(c, t, {4, 3, 9});
    int onFalse = t == MP_I1 ? ids(c, t, {9}, 0, 2) : random(c, t, {9});
    int out = output(c, t, {4, 3, 9});
    c.fields = [=](Words &, const Emit &e) {
      e(cond); e(onTrue); e(onFalse); e(out);
    };
    all.push_back(std::move(c));
  }
  {
    Case c{"broadcast f16", ENTRY(broadcast), {}, 1, nullptr};
    int in = random(c, MP_F16, {5, 1, 9});
    int out = output(c, MP_F16, {3, 5, 4, 9});
    c.fields = [=](Words &, const Emit &e) { e(in); e(out); };
    all.push_back(std::move(c));
    Case k{"concat f32 axis 1", ENTRY(concat), {}, 1, nullptr};
    int a = random(k, MP_F32, {4, 3, 5}), b = random(k, MP_F32, {4, 1, 5}),
        d = random(k, MP_F32, {4, 6, 5});
    int kout = output(k, MP_F32, {4, 10, 5});
    k.fields = [=](Words &w, const Emit &e) {
      w.push_back(1); w.push_back(3); e(a); e(b); e(d); e(kout);
    };
    all.push_back(std::move(k));
    Case s{"slice bf16 strided", ENTRY(slice), {}, 1, nullptr};
    int sin = random(s, MP_BF16, {9, 20});
    int sout = output(s, MP_BF16, {3, 6});
    s.fields = [=](Words &w, const Emit &e) {
      w.push_back(2); w.push_back(1); w.push_back(2); w.push_back(3); w.push_back(3);
      e(sin); e(sout);
    };
    all.push_back(std::move(s));
    Case g{"slice_grad f32 strided", ENTRY(slice_grad), {}, 1, nullptr};
    int gin = random(g, MP_F32, {3, 6});
    int gout = output(g, MP_F32, {9, 20});
    g.fields = [=](Words &w, const Emit &e) {
      w.push_back(2); w.push_back(1); w.push_back(2); w.push_back(3); w.push_back(3);
      e(gin); e(gout);
    };
    all.push_back(std::move(g));
  }
  // The strided copy's plan normalisation (runtime/lib/CUDA/Movement.cu):
  // size-1 dimensions dropped, contiguous ones merged, a run contiguous on
  // both sides moved as 4-, 8- or 16-byte words where every address is
  // aligned to the word, 32-bit indices. Device buffers are 256-byte
  // aligned, so the word each case gets is set by its shapes and offsets
  // (noted per case, for the 256-byte aligned buffers).
  //
  // Head transposes [B, T, H, 64] -> [B, H, T, 64]: rows of 64 elements
  // as 16-byte words (8 to an f16 or bf16 row, 16 to f32, 32 to i64).
  for (mpElementType t : {MP_F32, MP_F16, MP_BF16, MP_I64}) {
    Case c{std::string("transpose heads ") + typeName(t), ENTRY(transpose), {}, 1, nullptr};
    int in = t == MP_I64 ? ids(c, t, {2, 5, 4, 64}, -9, 9) : random(c, t, {2, 5, 4, 64});
    int out = output(c, t, {2, 4, 5, 64});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(4); for (int64_t p : {0, 2, 1, 3}) w.push_back(p); e(in); e(out);
    };
    all.push_back(std::move(c));
  }
  // Inner runs of 7, 6 and 4 f16 elements (14, 12 and 8 bytes): 2-byte
  // elements (no word divides 14), 4-byte words, 8-byte words.
  for (int64_t inner : {7, 6, 4}) {
    Case c{"transpose f16 inner " + std::to_string(inner), ENTRY(transpose), {}, 1, nullptr};
    int in = random(c, MP_F16, {3, 4, inner});
    int out = output(c, MP_F16, {4, 3, inner});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(3); for (int64_t p : {1, 0, 2}) w.push_back(p); e(in); e(out);
    };
    all.push_back(std::move(c));
  }
  {
    // i64 pairs: 16-byte rows, a word wider than the element.
    Case c{"transpose i64 pairs", ENTRY(transpose), {}, 1, nullptr};
    int in = ids(c, MP_I64, {3, 5, 2}, -1000, 1000);
    int out = output(c, MP_I64, {5, 3, 2});
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(3); for (int64_t p : {1, 0, 2}) w.push_back(p); e(in); e(out);
    };
    all.push_back(std::move(c));
  }
  {
    // Rank 0 (one element, no dimensions) and all size 1 (every dimension
    // dropped, rank 0 again).
    Case c{"transpose f32 rank 0", ENTRY(transpose), {}, 1, nullptr};
    int in = random(c, MP_F32, {});
    int out = output(c, MP_F32, {});
    c.fields = [=](Words &w, const Emit &e) { w.push_back(0); e(in); e(out); };
    all.push_back(std::move(c));
    Case u{"transpose bf16 all size 1", ENTRY(transpose), {}, 1, nullptr};
    int uin = random(u, MP_BF16, {1, 1, 1});
    int uout = output(u, MP_BF16, {1, 1, 1});
    u.fields = [=](Words &w, const Emit &e) {
      w.push_back(3); for (int64_t p : {2, 0, 1}) w.push_back(p); e(uin); e(uout);
    };
    all.push_back(std::move(u));
  }
  {
    // Concat f16 along the last axis of [4, 40]: widths 8, 8, 3, 8, 5, 8
    // at offsets 0, 8, 16, 19, 27, 32. The rows are 80 bytes, so the
    // pieces at 0, 8 and 32 move as 16-byte words; those at 16 and 27 are
    // odd widths and the one at 19 an odd offset, so they move elements.
    Case k{"concat f16 axis 1 mixed widths", ENTRY(concat), {}, 1, nullptr};
    std::vector<int> pieces;
    for (int64_t width : {8, 8, 3, 8, 5, 8})
      pieces.push_back(random(k, MP_F16, {4, width}));
    int kout = output(k, MP_F16, {4, 40});
    k.fields = [=](Words &w, const Emit &e) {
      w.push_back(1); w.push_back(int64_t(pieces.size()));
      for (int p : pieces) e(p);
      e(kout);
    };
    all.push_back(std::move(k));
  }
  // Slices [2, 16] of an f16 [4, 32] at column 8 (16-byte words), 4
  // (8-byte words) and 3 (elements), and their gradients.
  for (int64_t col : {8, 4, 3}) {
    Case s{"slice f16 at [1, " + std::to_string(col) + "]", ENTRY(slice), {}, 1, nullptr};
    int sin = random(s, MP_F16, {4, 32});
    int sout = output(s, MP_F16, {2, 16});
    s.fields = [=](Words &w, const Emit &e) {
      w.push_back(2); w.push_back(1); w.push_back(col); w.push_back(1); w.push_back(1);
      e(sin); e(sout);
    };
    all.push_back(std::move(s));
    Case g{"slice_grad f16 at [1, " + std::to_string(col) + "]", ENTRY(slice_grad), {}, 1, nullptr};
    int gin = random(g, MP_F16, {2, 16});
    int gout = output(g, MP_F16, {4, 32});
    g.fields = [=](Words &w, const Emit &e) {
      w.push_back(2); w.push_back(1); w.push_back(col); w.push_back(1); w.push_back(1);
      e(gin); e(gout);
    };
    all.push_back(std::move(g));
  }
  {
    // A one-element slice whose size-1 dimensions step 1000: those steps
    // are never taken (the dimensions are dropped).
    Case s{"slice f32 one element, large steps", ENTRY(slice), {}, 1, nullptr};
    int sin = random(s, MP_F32, {3, 5});
    int sout = output(s, MP_F32, {1, 1});
    s.fields = [=](Words &w, const Emit &e) {
      w.push_back(2); w.push_back(2); w.push_back(4); w.push_back(1000); w.push_back(1000);
      e(sin); e(sout);
    };
    all.push_back(std::move(s));
  }
  {
    // Broadcasts: a size-1 middle dimension, [4, 1, 64] -> [2, 4, 3, 64]
    // (rows of 64 as 16-byte words, source strides 0 in between); a row
    // [64] -> [6, 64] f32; a scalar -> [7, 5] (source stride 0 innermost,
    // no widening).
    Case b{"broadcast bf16 size-1 middle", ENTRY(broadcast), {}, 1, nullptr};
    int bin = random(b, MP_BF16, {4, 1, 64});
    int bout = output(b, MP_BF16, {2, 4, 3, 64});
    b.fields = [=](Words &, const Emit &e) { e(bin); e(bout); };
    all.push_back(std::move(b));
    Case r{"broadcast f32 row", ENTRY(broadcast), {}, 1, nullptr};
    int rin = random(r, MP_F32, {64});
    int rout = output(r, MP_F32, {6, 64});
    r.fields = [=](Words &, const Emit &e) { e(rin); e(rout); };
    all.push_back(std::move(r));
    Case s{"broadcast f16 scalar", ENTRY(broadcast), {}, 1, nullptr};
    int sin = random(s, MP_F16, {});
    int sout = output(s, MP_F16, {7, 5});
    s.fields = [=](Words &, const Emit &e) { e(sin); e(sout); };
    all.push_back(std::move(s));
  }
  struct MatmulCase {
    mpElementType in, out;
    std::vector<int64_t> lhs, rhs, result;
    int tl, tr;
    mpElementType compute = MP_F32;
  };
  for (const MatmulCase &m : {
           MatmulCase{MP_F32, MP_F32, {256, 192}, {192, 320}, {256, 320}, 0, 0},
           MatmulCase{MP_F16, MP_F16, {4, 64, 96}, {96, 128}, {4, 64, 128}, 0, 0},
           MatmulCase{MP_F16, MP_F32, {96, 64}, {128, 96}, {64, 128}, 1, 1},
           MatmulCase{MP_BF16, MP_BF16, {3, 32, 40}, {3, 40, 24}, {3, 32, 24}, 0, 0},
           MatmulCase{MP_BF16, MP_F32, {2, 1, 16, 8}, {1, 3, 16, 12}, {2, 3, 8, 12}, 1, 0},
           MatmulCase{MP_F16, MP_F16, {24, 40}, {5, 40, 16}, {5, 24, 16}, 0, 0},
           MatmulCase{MP_F32, MP_F16, {33, 17}, {17, 9}, {33, 9}, 0, 0},
           MatmulCase{MP_F64, MP_F64, {20, 30}, {30, 10}, {20, 10}, 0, 0},
           MatmulCase{MP_F64, MP_F64, {20, 30}, {10, 30}, {20, 10}, 0, 1,
                      MP_F64}}) {
    Case c{std::string("matmul ") + typeName(m.in) + " -> " + typeName(m.out) +
               (m.tl ? " lhs^T" : "") + (m.tr ? " rhs^T" : "") +
               (m.compute == MP_F32 ? "" : " compute f64"),
           ENTRY(matmul), {}, double(m.tl ? m.lhs[m.lhs.size() - 2] : m.lhs.back()),
           nullptr};
    int lhs = random(c, m.in, m.lhs), rhs = random(c, m.in, m.rhs);
    int out = output(c, m.out, m.result);
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(m.tl); w.push_back(m.tr); w.push_back(m.compute); e(lhs); e(rhs); e(out);
    };
    c.compute = m.compute;
    all.push_back(std::move(c));
  }
  // Fused matmuls: cuBLASLt's epilogues (bias, ReLU, tanh GELU, the
  // residual as C, a scaled product; folded and strided batches) and the
  // fallback kernel (an exact GELU, a bias of another type, a broadcast
  // batch).
  struct FusedCase {
    mpElementType in, out, bias;
    std::vector<int64_t> lhs, rhs, result;
    int tl, tr, activation;
    bool hasBias, hasResidual;
    double alpha = 1;
    int biasGradOf = -1; // an mpMatmulOperand: the sums of that operand
  };
  const char *activationNames[] = {"none", "relu", "gelu", "gelu_tanh"};
  for (const FusedCase &f : {
           FusedCase{MP_F16, MP_F16, MP_F16, {64, 96}, {96, 128}, {64, 128}, 0, 0, 1, true, false},
           FusedCase{MP_BF16, MP_BF16, MP_BF16, {4, 32, 64}, {64, 96}, {4, 32, 96}, 0, 0, 3, true, true},
           FusedCase{MP_BF16, MP_F32, MP_F32, {96, 64}, {128, 96}, {64, 128}, 1, 1, 0, true, true},
           FusedCase{MP_F32, MP_F32, MP_F32, {3, 32, 40}, {3, 40, 24}, {3, 32, 24}, 0, 0, 1, true, false},
           FusedCase{MP_F16, MP_F16, MP_F16, {48, 64}, {64, 32}, {48, 32}, 0, 0, 2, true, false},
           FusedCase{MP_BF16, MP_BF16, MP_F32, {48, 64}, {64, 32}, {48, 32}, 0, 0, 1, true, true},
           FusedCase{MP_F16, MP_F32, MP_F16, {2, 1, 16, 8}, {1, 3, 8, 12}, {2, 3, 16, 12}, 0, 0, 3, true, true},
           FusedCase{MP_F16, MP_F16, MP_F16, {32, 64}, {64, 48}, {32, 48}, 0, 0, 0, false, true},
           // An SGD update folded into a weight gradient, and a scaled
           // attention product with a bias and the exact GELU (fallback).
           FusedCase{MP_F32, MP_F32, MP_F32, {96, 64}, {96, 48}, {64, 48}, 1, 0, 0, false, true, -0.01},
           FusedCase{MP_BF16, MP_BF16, MP_BF16, {4, 32, 64}, {4, 48, 64}, {4, 32, 48}, 0, 1, 2, true, false, 0.125},
           // Weight gradients that give their layer's bias gradient.
           FusedCase{MP_F32, MP_F32, MP_F32, {96, 64}, {96, 48}, {64, 48}, 1, 0, 0, false, true, -0.01, MP_MATMUL_LHS},
           FusedCase{MP_BF16, MP_BF16, MP_F32, {96, 48}, {96, 32}, {48, 32}, 1, 0, 0, false, false, 1, MP_MATMUL_RHS}}) {
    Case c{std::string("fused_matmul ") + typeName(f.in) + " -> " +
               typeName(f.out) + " " + activationNames[f.activation] +
               (f.hasBias ? std::string(" bias ") + typeName(f.bias) : "") +
               (f.hasResidual ? " residual" : "") + (f.tl ? " lhs^T" : "") +
               (f.tr ? " rhs^T" : "") +
               (f.alpha != 1 ? " alpha " + std::to_string(f.alpha) : "") +
               (f.biasGradOf == MP_MATMUL_LHS   ? " bias_grad(lhs)"
                : f.biasGradOf == MP_MATMUL_RHS ? " bias_grad(rhs)"
                                                : ""),
           ENTRY(fused_matmul), {},
           double(f.tl ? f.lhs[f.lhs.size() - 2] : f.lhs.back()), nullptr};
    int lhs = random(c, f.in, f.lhs), rhs = random(c, f.in, f.rhs);
    int bias = f.hasBias ? random(c, f.bias, {f.result.back()}) : -1;
    int residual = f.hasResidual ? random(c, f.out, f.result) : -1;
    int out = output(c, f.out, f.result);
    int64_t sums = f.biasGradOf == MP_MATMUL_LHS ? f.result[0] : f.result[1];
    int biasGrad = f.biasGradOf >= 0 ? output(c, MP_F32, {sums}) : -1;
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(f.tl); w.push_back(f.tr); w.push_back(f.activation);
      w.push_back(f.hasBias); w.push_back(f.hasResidual);
      w.push_back(f.biasGradOf + 1);
      w.push_back(bits(f.alpha)); w.push_back(MP_F32);
      e(lhs); e(rhs);
      if (bias >= 0) e(bias);
      if (residual >= 0) e(residual);
      e(out);
      if (biasGrad >= 0) e(biasGrad);
    };
    c.compute = MP_F32;
    all.push_back(std::move(c));
  }
  // Range statistics: exact, whatever the type; values of many binades with
  // zeros, infinities and NaNs mixed in, over sizes that take one block and
  // many.
  for (mpElementType t : {MP_F16, MP_BF16, MP_F32, MP_F64})
    for (int64_t n : {int64_t(1), int64_t(1000), int64_t(300000)})
      for (bool special : {false, true}) {
        Case c{std::string("tensor_stats ") + typeName(t) + " n=" +
                   std::to_string(n) + (special ? " with inf/NaN/0" : ""),
               ENTRY(tensor_stats),
               {},
               0,
               nullptr};
        std::uniform_real_distribution<double> mant(-1, 1);
        std::uniform_int_distribution<int> exp(-20, 12);
        std::uniform_int_distribution<int> pick(0, 99);
        int in = add(c, t, {n}, false, [&](int64_t) {
          int k = pick(rng);
          if (special && k == 0)
            return double(INFINITY);
          if (special && k == 1)
            return -double(INFINITY);
          if (special && k == 2)
            return double(NAN);
          if (special && k < 6)
            return 0.0;
          return std::ldexp(mant(rng), exp(rng));
        });
        int out = output(c, MP_F32, {1, 6});
        c.fields = [=](Words &w, const Emit &e) {
          e(in);
          e(out);
        };
        all.push_back(std::move(c));
      }
  for (int64_t status : {int64_t(-1), int64_t(3)})
    for (bool bad : {false, true}) {
      Case c{"record_nonfinite status=" + std::to_string(status) +
                 (bad ? " with a non-finite row" : ""),
             ENTRY(record_nonfinite),
             {},
             0,
             nullptr};
      int in = scalar(c, MP_I64, double(status));
      // Rows: min, max, amax, smallest, NaN count, infinity count.
      int clean = add(c, MP_F32, {2, 6}, false,
                      [](int64_t i) { return i % 6 >= 4 ? 0.0 : 1.0; });
      int rows = add(c, MP_F32, {1, 6}, false, [=](int64_t i) {
        return i == 5 && bad ? 2.0 : (i >= 4 ? 0.0 : 1.0);
      });
      int out = scalar(c, MP_I64, 0, true);
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(7);
        w.push_back(2);
        e(in);
        e(clean);
        e(rows);
        e(out);
      };
      all.push_back(std::move(c));
    }
  for (bool overflow : {false, true}) {
    Case c{std::string("unscale_grads") + (overflow ? " with an overflow" : ""),
           ENTRY(unscale_grads), {}, 1, nullptr};
    int scale = scalar(c, MP_F32, overflow ? 1.0 / 65536 : 1024.0);
    int found = scalar(c, MP_I1, 1, true);
    std::vector<int> grads, outs;
    std::vector<std::pair<mpElementType, std::vector<int64_t>>> shapes{
        {MP_F16, {300, 7}}, {MP_F32, {1025}}, {MP_BF16, {3}}, {MP_F16, {64, 64}}};
    for (auto &[t, s] : shapes)
      grads.push_back(random(c, t, s, -4, 4));
    for (auto &[t, s] : shapes)
      outs.push_back(output(c, t, s));
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(int64_t(grads.size())); e(scale); e(found);
      for (int g : grads) e(g);
      for (int o : outs) e(o);
    };
    all.push_back(std::move(c));
  }
  for (bool inf : {false, true})
    for (int64_t good : {0, 2}) {
      Case c{std::string("update_loss_scale found_inf=") + (inf ? "1" : "0") +
                 " good_steps=" + std::to_string(good),
             ENTRY(update_loss_scale), {}, 1, nullptr};
      int scale = scalar(c, MP_F32, 32768, true);
      int steps = scalar(c, MP_I64, double(good), true);
      int found = scalar(c, MP_I1, inf ? 1 : 0);
      c.fields = [=](Words &w, const Emit &e) {
        w.push_back(bits(2.0)); w.push_back(bits(0.5)); w.push_back(3);
        w.push_back(bits(1.0)); w.push_back(bits(0.0));
        e(scale); e(steps); e(found); e(scale); e(steps);
      };
      all.push_back(std::move(c));
    }
  // With a rounded copy of the new parameter (a tg-shadow-weights shadow),
  // bf16 for SGD and f16 for Adam, written on skipped steps too.
  for (bool copy : {false, true})
  for (bool skip : {false, true}) {
    std::string with = copy ? " with a copy" : "";
    Case c{std::string("sgd_update momentum nesterov") + with +
               (skip ? " skipped" : ""),
           ENTRY(sgd_update), {}, 1, nullptr};
    int param = add(c, MP_F32, {97, 33}, true, [&](int64_t) {
      return std::uniform_real_distribution<double>(-1, 1)(rng);
    });
    int grad = random(c, MP_F16, {97, 33});
    int buffer = add(c, MP_F32, {97, 33}, true, [&](int64_t) {
      return std::uniform_real_distribution<double>(-1, 1)(rng);
    });
    int pred = scalar(c, MP_I1, skip ? 1 : 0);
    int shadow = copy ? output(c, MP_BF16, {97, 33}) : -1;
    c.fields = [=](Words &w, const Emit &e) {
      w.push_back(bits(0.1)); w.push_back(bits(0.9)); w.push_back(bits(1e-4));
      w.push_back(1); w.push_back(1); w.push_back(1); w.push_back(copy);
      e(param); e(grad); e(buffer); e(pred); e(param); e(buffer);
      if (copy)
        e(shadow);
    };
    all.push_back(std::move(c));
    Case a{std::string("adam_update") + with + (skip ? " skipped" : ""),
           ENTRY(adam_update), {}, 1, nullptr};
    auto uniform = [&](double lo, double hi) {
      return [lo, hi](int64_t) {
        return std::uniform_real_distribution<double>(lo, hi)(rng);
      };
    };
    int ap = add(a, MP_F32, {513}, true, uniform(-1, 1));
    int ag = random(a, MP_BF16, {513});
    int am = add(a, MP_F32, {513}, true, uniform(-0.1, 0.1));
    int av = add(a, MP_F32, {513}, true, uniform(0, 0.01));
    int astep = scalar(a, MP_I64, 7, true);
    int apred = scalar(a, MP_I1, skip ? 1 : 0);
    int ashadow = copy ? output(a, MP_F16, {513}) : -1;
    a.fields = [=](Words &w, const Emit &e) {
      w.push_back(bits(1e-3)); w.push_back(bits(0.9)); w.push_back(bits(0.999));
      w.push_back(bits(1e-8)); w.push_back(bits(0.01)); w.push_back(1);
      w.push_back(copy);
      e(ap); e(ag); e(am); e(av); e(astep); e(apred); e(ap); e(am); e(av); e(astep);
      if (copy)
        e(ashadow);
    };
    all.push_back(std::move(a));
  }
  return all;
}

} // namespace

int main(int argc, char **argv) {
  int arg = 1;
  if (arg < argc && std::strcmp(argv[arg], "--cpu-only") == 0) {
    cpuOnly = true;
    ++arg;
  }
  uint64_t seed = arg < argc ? std::strtoull(argv[arg], nullptr, 10)
                             : std::random_device{}();
  std::printf("seed %llu\n", (unsigned long long)seed);
  rng.seed(seed);
  if (!cpuOnly && mprtCudaInitialize(0) != MP_OK) {
    const char *e = mprtTakeError();
    std::printf("no CUDA device: %s\n", e ? e : "unknown");
    return 2;
  }
  std::vector<Case> all = cases();
  for (Case &c : all)
    (runCase(c) ? passed : failed)++;
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
