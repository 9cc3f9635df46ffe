//===- Dnnl.cpp - convolutions through oneDNN -----------------------------===//
//
// oneDNN's C API: one engine and stream for the process, a primitive per
// distinct call (shapes, geometry, types, pass), kept for the process's
// lifetime, and memory objects wrapping the caller's buffers (plain NCHW or
// NHWC activations, OIHW or GOIHW filters, row-major matrices whose
// transposes are strides).
//
// Convolutions on NCHW activations take the filter as it is and run as
// im2col GEMMs ("gemm:jit"). On NHWC activations oneDNN's direct kernels
// (brgconv on AVX-512, jit:avx2 otherwise) want the filter in a blocked
// layout of their own choosing: the primitive is created with the filter's
// layout left open, and a reorder primitive converts the caller's OIHW
// filter into a staging buffer before the forward and data passes, or the
// weight gradient out of it after the weights pass. The filter is small
// next to the activations, and with a plain OIHW filter oneDNN has only its
// reference loops for NHWC.
//
// Matmuls: bf16 and f32 operands come here. benchmarks/gemm_cpu.cpp
// measured oneDNN's bf16 matmul (AVX512_BF16 dot products) at 2.0x to 2.8x
// OpenBLAS's sgemm at the benchmark shapes, and its f32 matmul at 1.02x to
// 1.4x (benchmarks/README.md). f32 GEMMs run on oneDNN too so that every kernel
// shares libgomp's threads: Debian's default OpenBLAS has a pthread pool of its
// own, whose threads spin (sched_yield) against the OpenMP ones on a small
// machine. OpenBLAS's own bf16 GEMM, cblas_sbgemm, is not exported by Debian's
// build; OpenBLAS keeps f64.
//
//===----------------------------------------------------------------------===//

#include "Dnnl.h"

#include "Vector.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef MP_RUNTIME_HAS_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

#ifndef MP_RUNTIME_HAS_DNNL

bool mp::rt::dnnlConv2d(DnnlConv, const mpTensor *, const mpTensor *,
                        const mpTensor *, const mpWindow *, mpElementType) {
  return false;
}

bool mp::rt::dnnlMatmul(const mpTensor *, const mpTensor *, mpTensor *, bool,
                        bool, int64_t, int64_t, int64_t, int64_t, bool, bool,
                        const DnnlEpilogue *, int64_t, int64_t) {
  return false;
}

bool mp::rt::dnnlWantsPaddedRows(int64_t, int64_t) { return false; }

bool mp::rt::dnnlMatmulAvailable(mpElementType, mpElementType, bool, bool,
                                 int64_t, int64_t, int64_t) {
  return false;
}

bool mp::rt::dnnlTakesBf16() { return false; }

#else

namespace {

using mp::rt::DnnlConv;

struct Engine {
  dnnl_engine_t engine = nullptr;
  dnnl_stream_t stream = nullptr;
  bool ok = false;
};

Engine &engine() {
  static Engine e = [] {
    Engine e;
    e.ok = dnnl_engine_create(&e.engine, dnnl_cpu, 0) == dnnl_success &&
           dnnl_stream_create(&e.stream, e.engine,
                              dnnl_stream_default_flags) == dnnl_success;
    return e;
  }();
  return e;
}

/// oneDNN's type for `t`: f32, or bf16 where dnnlTakesBf16. On other
/// AVX-512 CPUs oneDNN emulates bf16 in its jit kernels ("gemm:jit",
/// "jit_bf16:avx512_core"), where it has only reference loops on AVX2 (which
/// optimisedImpl refuses): on a Xeon with AVX-512 but not AVX512_BF16 that
/// ran ResNet-50's bf16 convolutions at 3.4x their f32 time, where widening
/// to f32 and running the f32 kernel (the callers' fallback) takes 1.0-1.2x.
bool dataType(mpElementType t, dnnl_data_type_t &out) {
  if (t == MP_F32)
    out = dnnl_f32;
  else if (t == MP_BF16 && mp::rt::dnnlTakesBf16())
    out = dnnl_bf16;
  else
    return false;
  return true;
}

/// What identifies a primitive.
using Key = std::tuple<int, std::vector<int64_t>>;

struct Cached {
  dnnl_primitive_t primitive = nullptr; // null: oneDNN refused the call
  dnnl_memory_desc_t src, weights, dst;
  /// Set when the primitive's filter layout (`weights`) is not the
  /// caller's (`userWeights`): converts the caller's filter into it before
  /// the primitive runs, or the primitive's weight gradient back to the
  /// caller's layout after it (`reorderAfter`).
  dnnl_primitive_t reorder = nullptr;
  dnnl_memory_desc_t userWeights;
  bool reorderAfter = false;
  /// A matmul's bias (f32, one row broadcast), when it has one.
  dnnl_memory_desc_t bias;
  bool hasBias = false;
};

std::mutex cacheMutex;
std::map<Key, Cached> cache;

/// Whether oneDNN chose a real kernel for `pd`: on a CPU without the
/// instructions (bf16 before AVX512_BF16, say) it may fall back to its
/// reference loops, slower than the runtime's own f32 paths, which the
/// callers then take instead. `name` receives the implementation's name
/// when the caller wants it.
bool optimisedImpl(const_dnnl_primitive_desc_t pd,
                   const char **name = nullptr) {
  const char *impl = nullptr;
  bool ok = dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0,
                                      &impl) == dnnl_success &&
            impl && std::strncmp(impl, "ref", 3) != 0;
  if (name)
    *name = impl;
  return ok;
}

/// Whether oneDNN 2.6's implementation `impl` is known to be wrong for this
/// call. Its 1x1 weight-gradient kernels (jit_1x1, AVX2 and AVX-512) first
/// copy a strided NHWC source into a unit-stride workspace ("rtus"), and
/// index that workspace by the channel block where the NHWC copy has only
/// the input channels: with fewer channels per group than a block (8 or
/// 16), threads write past their share and past the buffer. That corrupted
/// the heap here (seed 2816026996 of `mp-runtime-tests conv` with four
/// threads), and upstream reports hangs and wrong gradients too
/// (uxlfoundation/oneDNN#6035, open).
bool knownBroken(const char *impl, DnnlConv kind, const mpWindow *w,
                 int64_t inputChannels) {
  bool strided = w->strides[0] != 1 || w->strides[1] != 1;
  return kind == DnnlConv::BackwardWeights && w->channelsLast && strided &&
         (inputChannels / w->groups) % 16 != 0 &&
         std::strncmp(impl, "jit_1x1", 7) == 0;
}

/// The first implementation oneDNN offers for `desc` that is neither its
/// reference loops nor knownBroken, or null.
dnnl_primitive_desc_t
firstUsableImpl(const_dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint,
                DnnlConv kind, const mpWindow *w, int64_t inputChannels) {
  dnnl_primitive_desc_iterator_t it = nullptr;
  if (dnnl_primitive_desc_iterator_create(&it, desc, nullptr, engine().engine,
                                          hint) != dnnl_success)
    return nullptr;
  dnnl_primitive_desc_t chosen = nullptr;
  do {
    dnnl_primitive_desc_t pd = dnnl_primitive_desc_iterator_fetch(it);
    const char *impl = nullptr;
    if (pd && optimisedImpl(pd, &impl) &&
        !knownBroken(impl, kind, w, inputChannels)) {
      chosen = pd;
      break;
    }
    if (pd)
      dnnl_primitive_desc_destroy(pd);
  } while (dnnl_primitive_desc_iterator_next(it) == dnnl_success);
  dnnl_primitive_desc_iterator_destroy(it);
  return chosen;
}

/// A 64-byte aligned buffer of this thread's, reused across calls: the
/// staging filter of a reordered convolution.
void *stagingBuffer(size_t bytes) {
  struct Staging {
    void *data = nullptr;
    size_t size = 0;
    ~Staging() { std::free(data); }
  };
  thread_local Staging staging;
  if (staging.size < bytes) {
    std::free(staging.data);
    staging.size = (bytes + 63) / 64 * 64;
    staging.data = std::aligned_alloc(64, staging.size);
    if (!staging.data)
      staging.size = 0;
  }
  return staging.data;
}

/// Runs `c` on the caller's buffers, bound to the arguments `args` in the
/// order src, weights, dst (and `bias` where `c` has one), through the
/// staging filter where `c` reorders.
bool execute(const Cached &c, std::array<int, 3> args,
             std::array<void *, 3> data, const void *bias = nullptr) {
  Engine &e = engine();
  void *userWeights = data[1];
  if (c.reorder &&
      !(data[1] = stagingBuffer(dnnl_memory_desc_get_size(&c.weights))))
    return false;
  dnnl_memory_t mem[5] = {nullptr, nullptr, nullptr, nullptr, nullptr};
  const dnnl_memory_desc_t *mds[3] = {&c.src, &c.weights, &c.dst};
  bool ok = true;
  for (int i = 0; i < 3 && ok; ++i)
    ok = dnnl_memory_create(&mem[i], mds[i], e.engine, data[i]) == dnnl_success;
  if (ok && c.reorder)
    ok = dnnl_memory_create(&mem[3], &c.userWeights, e.engine, userWeights) ==
         dnnl_success;
  if (ok && c.hasBias)
    ok = dnnl_memory_create(&mem[4], &c.bias, e.engine,
                            const_cast<void *>(bias)) == dnnl_success;
  auto reorder = [&] {
    dnnl_exec_arg_t bound[2] = {
        {DNNL_ARG_FROM, c.reorderAfter ? mem[1] : mem[3]},
        {DNNL_ARG_TO, c.reorderAfter ? mem[3] : mem[1]}};
    return dnnl_primitive_execute(c.reorder, e.stream, 2, bound) ==
           dnnl_success;
  };
  if (ok && c.reorder && !c.reorderAfter)
    ok = reorder();
  if (ok) {
    dnnl_exec_arg_t bound[4] = {{args[0], mem[0]},
                                {args[1], mem[1]},
                                {args[2], mem[2]},
                                {DNNL_ARG_BIAS, mem[4]}};
    ok = dnnl_primitive_execute(c.primitive, e.stream, c.hasBias ? 4 : 3,
                                bound) == dnnl_success;
  }
  if (ok && c.reorder && c.reorderAfter)
    ok = reorder();
  ok = ok && dnnl_stream_wait(e.stream) == dnnl_success;
  for (dnnl_memory_t m : mem)
    if (m)
      dnnl_memory_destroy(m);
  return ok;
}

bool activationDesc(const mpTensor *t, bool last, dnnl_memory_desc_t &md) {
  dnnl_data_type_t dt;
  if (!dataType(t->elementType, dt))
    return false;
  dnnl_dims_t dims = {t->shape[0], last ? t->shape[3] : t->shape[1],
                      last ? t->shape[1] : t->shape[2],
                      last ? t->shape[2] : t->shape[3]};
  return dnnl_memory_desc_init_by_tag(&md, 4, dims, dt,
                                      last ? dnnl_nhwc : dnnl_nchw) ==
         dnnl_success;
}

bool filterDesc(const mpTensor *t, int64_t groups, dnnl_memory_desc_t &md) {
  dnnl_data_type_t dt;
  if (!dataType(t->elementType, dt))
    return false;
  const int64_t *s = t->shape;
  if (groups == 1) {
    dnnl_dims_t dims = {s[0], s[1], s[2], s[3]};
    return dnnl_memory_desc_init_by_tag(&md, 4, dims, dt, dnnl_oihw) ==
           dnnl_success;
  }
  dnnl_dims_t dims = {groups, s[0] / groups, s[1], s[2], s[3]};
  return dnnl_memory_desc_init_by_tag(&md, 5, dims, dt, dnnl_goihw) ==
         dnnl_success;
}

/// Creates `c.reorder` between the caller's filter layout and the
/// primitive's, in the direction `c.reorderAfter` says.
bool createReorder(Cached &c) {
  Engine &e = engine();
  const dnnl_memory_desc_t &from = c.reorderAfter ? c.weights : c.userWeights;
  const dnnl_memory_desc_t &to = c.reorderAfter ? c.userWeights : c.weights;
  dnnl_primitive_desc_t pd = nullptr;
  bool ok = dnnl_reorder_primitive_desc_create(&pd, &from, e.engine, &to,
                                               e.engine, nullptr) ==
                dnnl_success &&
            dnnl_primitive_create(&c.reorder, pd) == dnnl_success;
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  return ok;
}

/// Creates the primitive of one call, or leaves it null.
Cached create(DnnlConv kind, const mpTensor *src, const mpTensor *weights,
              const mpTensor *dst, const mpWindow *w) {
  Cached c;
  bool last = w->channelsLast != 0;
  if (!activationDesc(src, last, c.src) || !activationDesc(dst, last, c.dst) ||
      !filterDesc(weights, w->groups, c.userWeights))
    return c;
  c.weights = c.userWeights;
  if (last && dnnl_memory_desc_init_by_tag(
                  &c.weights, c.userWeights.ndims, c.userWeights.dims,
                  c.userWeights.data_type, dnnl_format_tag_any) != dnnl_success)
    return c;
  dnnl_dims_t strides = {w->strides[0], w->strides[1]};
  dnnl_dims_t dilates = {w->dilations[0] - 1, w->dilations[1] - 1};
  dnnl_dims_t padL = {w->padding[0], w->padding[1]};
  dnnl_dims_t padR = {w->padding[2], w->padding[3]};
  Engine &e = engine();
  // The backward passes need the forward primitive descriptor as a hint.
  // A weight gradient may be f32 under bf16 activations (mixed precision's
  // f32 master weights); the forward pass it stands for had bf16 weights.
  dnnl_memory_desc_t forwardWeights = c.weights;
  forwardWeights.data_type = c.src.data_type;
  if (forwardWeights.format_kind != dnnl_format_kind_any &&
      dnnl_memory_desc_init_by_tag(
          &forwardWeights, forwardWeights.ndims, forwardWeights.dims,
          forwardWeights.data_type,
          w->groups == 1 ? dnnl_oihw : dnnl_goihw) != dnnl_success)
    return c;
  dnnl_convolution_desc_t forward;
  if (dnnl_dilated_convolution_forward_desc_init(
          &forward, dnnl_forward_training, dnnl_convolution_direct, &c.src,
          &forwardWeights, nullptr, &c.dst, strides, dilates, padL, padR) !=
      dnnl_success)
    return c;
  dnnl_primitive_desc_t forwardPd = nullptr, pd = nullptr;
  int64_t inputChannels = c.src.dims[1];
  if (kind == DnnlConv::Forward) {
    pd = firstUsableImpl(&forward, nullptr, kind, w, inputChannels);
  } else if (dnnl_primitive_desc_create(&forwardPd, &forward, nullptr,
                                        e.engine, nullptr) == dnnl_success) {
    dnnl_convolution_desc_t desc;
    dnnl_status_t status =
        kind == DnnlConv::BackwardData
            ? dnnl_dilated_convolution_backward_data_desc_init(
                  &desc, dnnl_convolution_direct, &c.src, &c.weights, &c.dst,
                  strides, dilates, padL, padR)
            : dnnl_dilated_convolution_backward_weights_desc_init(
                  &desc, dnnl_convolution_direct, &c.src, &c.weights, nullptr,
                  &c.dst, strides, dilates, padL, padR);
    if (status == dnnl_success)
      pd = firstUsableImpl(&desc, forwardPd, kind, w, inputChannels);
  }
  if (pd && dnnl_primitive_create(&c.primitive, pd) == dnnl_success && last) {
    c.reorderAfter = kind == DnnlConv::BackwardWeights;
    c.weights = *dnnl_primitive_desc_query_md(
        pd, c.reorderAfter ? dnnl_query_diff_weights_md : dnnl_query_weights_md,
        0);
    if (!dnnl_memory_desc_equal(&c.weights, &c.userWeights) &&
        !createReorder(c)) {
      dnnl_primitive_destroy(c.primitive);
      c.primitive = nullptr;
    }
  }
  if (pd)
    dnnl_primitive_desc_destroy(pd);
  if (forwardPd)
    dnnl_primitive_desc_destroy(forwardPd);
  return c;
}

} // namespace

bool mp::rt::dnnlConv2d(DnnlConv kind, const mpTensor *src,
                        const mpTensor *weights, const mpTensor *dst,
                        const mpWindow *w, mpElementType compute) {
  if (!libraryKernelsEnabled() || compute != MP_F32 || !engine().ok)
    return false;
  std::vector<int64_t> id;
  for (const mpTensor *t : {src, weights, dst}) {
    id.push_back(t->elementType);
    id.insert(id.end(), t->shape, t->shape + t->rank);
  }
  id.insert(id.end(), w->strides, w->strides + 2);
  id.insert(id.end(), w->padding, w->padding + 4);
  id.insert(id.end(), w->dilations, w->dilations + 2);
  id.push_back(w->groups);
  id.push_back(w->channelsLast);
  Cached c;
  {
    std::lock_guard<std::mutex> lock(cacheMutex);
    Key key{int(kind), id};
    auto it = cache.find(key);
    if (it == cache.end())
      it = cache.emplace(key, create(kind, src, weights, dst, w)).first;
    c = it->second;
  }
  if (!c.primitive)
    return false;
  int srcArg =
      kind == DnnlConv::BackwardData ? DNNL_ARG_DIFF_SRC : DNNL_ARG_SRC;
  int weightsArg = kind == DnnlConv::BackwardWeights ? DNNL_ARG_DIFF_WEIGHTS
                                                     : DNNL_ARG_WEIGHTS;
  int dstArg = kind == DnnlConv::Forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
  return execute(c, {srcArg, weightsArg, dstArg},
                 {src->data, weights->data, dst->data});
}

namespace {

/// A matrix operand [batch, rows, cols] stored row-major as [rows, cols], or
/// as [cols, rows] when `transposed`, its stored rows `ld` elements apart
/// (0: dense).
bool matrixDesc(dnnl_data_type_t dt, int64_t batch, int64_t rows, int64_t cols,
                bool transposed, int64_t ld, dnnl_memory_desc_t &md) {
  int64_t storedRows = transposed ? cols : rows;
  if (ld == 0)
    ld = transposed ? rows : cols;
  dnnl_dims_t dims = {batch, rows, cols};
  dnnl_dims_t strides = {storedRows * ld, transposed ? 1 : ld,
                         transposed ? ld : 1};
  return dnnl_memory_desc_init_by_strides(&md, 3, dims, dt, strides) ==
         dnnl_success;
}

} // namespace

/// The post-ops of `epilogue` in `attr` (the scale as a linear eltwise op
/// first, then the sum, then the activation: oneDNN adds the bias before
/// any, which is why a scaled product has none).
bool setPostOps(const mp::rt::DnnlEpilogue &epilogue,
                dnnl_primitive_attr_t attr) {
  dnnl_post_ops_t ops = nullptr;
  if (dnnl_post_ops_create(&ops) != dnnl_success)
    return false;
  bool ok = epilogue.alpha == 1.0f ||
            (!epilogue.bias && dnnl_post_ops_append_eltwise(
                                   ops, 1.0f, dnnl_eltwise_linear,
                                   epilogue.alpha, 0.0f) == dnnl_success);
  ok = ok &&
       (!epilogue.sum || dnnl_post_ops_append_sum(ops, 1.0f) == dnnl_success);
  dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
  switch (epilogue.activation) {
  case MP_ACTIVATION_RELU: alg = dnnl_eltwise_relu; break;
  case MP_ACTIVATION_GELU: alg = dnnl_eltwise_gelu_erf; break;
  case MP_ACTIVATION_GELU_TANH: alg = dnnl_eltwise_gelu_tanh; break;
  default: break;
  }
  if (ok && alg != dnnl_alg_kind_undef)
    ok = dnnl_post_ops_append_eltwise(ops, 1.0f, alg, 0.0f, 0.0f) ==
         dnnl_success;
  ok = ok && dnnl_primitive_attr_set_post_ops(attr, ops) == dnnl_success;
  dnnl_post_ops_destroy(ops);
  return ok;
}

namespace {

/// The cached matmul primitive of one call's types and geometry (created on
/// first use); false when oneDNN does not take the call.
bool lookupMatmul(mpElementType lhsType, mpElementType rhsType,
                  mpElementType resultType, bool ta, bool tb, int64_t &m,
                  int64_t n, int64_t k, int64_t &batches, bool &lhsShared,
                  bool rhsShared, const mp::rt::DnnlEpilogue &epi,
                  int64_t lhsRows, int64_t rhsRows, Cached &c) {
  dnnl_data_type_t inType, outType;
  if (!mp::rt::libraryKernelsEnabled() || !engine().ok ||
      lhsType != rhsType || !dataType(lhsType, inType) ||
      !dataType(resultType, outType) ||
      (inType == dnnl_f32 && outType != dnnl_f32))
    return false;
  // An unbatched weight under a batched lhs is one taller matrix.
  if (rhsShared && !lhsShared && !ta && batches > 1) {
    m *= batches;
    batches = 1;
    lhsShared = true;
  }
  uint32_t alphaBits;
  std::memcpy(&alphaBits, &epi.alpha, sizeof alphaBits);
  // clang-format off
  std::vector<int64_t> id = {
      lhsType,          resultType,       m,         n,
      k,                batches,          ta,        tb,
      lhsShared,        rhsShared,        epi.bias != nullptr,
      epi.activation,   epi.sum,          lhsRows,   rhsRows,
      alphaBits};
  // clang-format on
  std::lock_guard<std::mutex> lock(cacheMutex);
  Key key{-1, id};
  auto it = cache.find(key);
  if (it == cache.end()) {
    Cached created;
    dnnl_matmul_desc_t desc;
    dnnl_primitive_desc_t pd = nullptr;
    dnnl_primitive_attr_t attr = nullptr;
    created.hasBias = epi.bias != nullptr;
    if (matrixDesc(inType, lhsShared ? 1 : batches, m, k, ta, lhsRows,
                   created.src) &&
        matrixDesc(inType, rhsShared ? 1 : batches, k, n, tb, rhsRows,
                   created.weights) &&
        matrixDesc(outType, batches, m, n, false, 0, created.dst) &&
        (!created.hasBias ||
         matrixDesc(dnnl_f32, 1, 1, n, false, 0, created.bias)) &&
        dnnl_matmul_desc_init(&desc, &created.src, &created.weights,
                              created.hasBias ? &created.bias : nullptr,
                              &created.dst) == dnnl_success &&
        dnnl_primitive_attr_create(&attr) == dnnl_success &&
        setPostOps(epi, attr) &&
        dnnl_primitive_desc_create(&pd, &desc, attr, engine().engine,
                                   nullptr) == dnnl_success) {
      if (!optimisedImpl(pd) ||
          dnnl_primitive_create(&created.primitive, pd) != dnnl_success)
        created.primitive = nullptr;
    }
    if (pd)
      dnnl_primitive_desc_destroy(pd);
    if (attr)
      dnnl_primitive_attr_destroy(attr);
    it = cache.emplace(key, created).first;
  }
  c = it->second;
  return c.primitive != nullptr;
}

} // namespace

bool mp::rt::dnnlTakesBf16() {
  const CpuFeatures &cpu = cpuFeatures();
  return cpu.avx512bf16 || cpu.amx;
}

bool mp::rt::dnnlWantsPaddedRows(int64_t rowBytes, int64_t across) {
  static const bool jitGemm =
      dnnl_get_effective_cpu_isa() < dnnl_cpu_isa_avx512_core;
  return jitGemm && rowBytes > 0 && rowBytes % 2048 == 0 && across <= 512;
}

bool mp::rt::dnnlMatmulAvailable(mpElementType in, mpElementType out,
                                 bool transposeLhs, bool transposeRhs,
                                 int64_t m, int64_t n, int64_t k) {
  Cached c;
  int64_t batches = 1;
  bool lhsShared = true;
  return lookupMatmul(in, in, out, transposeLhs, transposeRhs, m, n, k,
                      batches, lhsShared, true, DnnlEpilogue{}, 0, 0, c);
}

bool mp::rt::dnnlMatmul(const mpTensor *lhs, const mpTensor *rhs, mpTensor *out,
                        bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        int64_t batches, bool lhsShared, bool rhsShared,
                        const DnnlEpilogue *epilogue, int64_t lhsRows,
                        int64_t rhsRows) {
  DnnlEpilogue none;
  const DnnlEpilogue &epi = epilogue ? *epilogue : none;
  Cached c;
  if (!lookupMatmul(lhs->elementType, rhs->elementType, out->elementType, ta,
                    tb, m, n, k, batches, lhsShared, rhsShared, epi, lhsRows,
                    rhsRows, c))
    return false;
  return execute(c, {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST},
                 {lhs->data, rhs->data, out->data}, epi.bias);
}

#endif // MP_RUNTIME_HAS_DNNL
