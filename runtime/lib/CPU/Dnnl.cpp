//===- Dnnl.cpp - convolutions through oneDNN -----------------------------===//
//
// oneDNN's C API: one engine and stream for the process, a primitive per
// distinct call (shapes, geometry, types, pass), kept for the process's
// lifetime, and memory objects wrapping the caller's buffers (plain NCHW or
// NHWC activations, OIHW or GOIHW filters; no reorders).
//
//===----------------------------------------------------------------------===//

#include "Dnnl.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <vector>

#ifdef MP_RUNTIME_HAS_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

namespace {
// MP_REFERENCE_KERNELS=1 in the environment starts with the libraries off
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

#ifndef MP_RUNTIME_HAS_DNNL

bool mp::rt::dnnlConv2d(DnnlConv, const mpTensor *, const mpTensor *,
                        const mpTensor *, const mpWindow *, mpElementType) {
  return false;
}

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

bool dataType(mpElementType t, dnnl_data_type_t &out) {
  if (t == MP_F32)
    out = dnnl_f32;
  else if (t == MP_BF16)
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
};

std::mutex cacheMutex;
std::map<Key, Cached> cache;

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

/// Creates the primitive of one call, or leaves it null.
Cached create(DnnlConv kind, const mpTensor *src, const mpTensor *weights,
              const mpTensor *dst, const mpWindow *w) {
  Cached c;
  bool last = w->channelsLast != 0;
  if (!activationDesc(src, last, c.src) || !activationDesc(dst, last, c.dst) ||
      !filterDesc(weights, w->groups, c.weights))
    return c;
  dnnl_dims_t strides = {w->strides[0], w->strides[1]};
  dnnl_dims_t dilates = {w->dilations[0] - 1, w->dilations[1] - 1};
  dnnl_dims_t padL = {w->padding[0], w->padding[1]};
  dnnl_dims_t padR = {w->padding[2], w->padding[3]};
  Engine &e = engine();
  // The backward passes need the forward primitive descriptor as a hint.
  dnnl_convolution_desc_t forward;
  if (dnnl_dilated_convolution_forward_desc_init(
          &forward, dnnl_forward_training, dnnl_convolution_direct, &c.src,
          &c.weights, nullptr, &c.dst, strides, dilates, padL, padR) !=
      dnnl_success)
    return c;
  dnnl_primitive_desc_t forwardPd = nullptr, pd = nullptr;
  if (dnnl_primitive_desc_create(&forwardPd, &forward, nullptr, e.engine,
                                 nullptr) != dnnl_success)
    return c;
  dnnl_status_t status = dnnl_success;
  if (kind == DnnlConv::Forward) {
    pd = forwardPd;
    forwardPd = nullptr;
  } else {
    dnnl_convolution_desc_t desc;
    status =
        kind == DnnlConv::BackwardData
            ? dnnl_dilated_convolution_backward_data_desc_init(
                  &desc, dnnl_convolution_direct, &c.src, &c.weights, &c.dst,
                  strides, dilates, padL, padR)
            : dnnl_dilated_convolution_backward_weights_desc_init(
                  &desc, dnnl_convolution_direct, &c.src, &c.weights, nullptr,
                  &c.dst, strides, dilates, padL, padR);
    if (status == dnnl_success)
      status = dnnl_primitive_desc_create(&pd, &desc, nullptr, e.engine,
                                          forwardPd);
  }
  if (status == dnnl_success && pd)
    if (dnnl_primitive_create(&c.primitive, pd) != dnnl_success)
      c.primitive = nullptr;
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
  if (!useLibraries || compute != MP_F32 || !engine().ok)
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
  Engine &e = engine();
  dnnl_memory_t mem[3] = {nullptr, nullptr, nullptr};
  const dnnl_memory_desc_t *mds[3] = {&c.src, &c.weights, &c.dst};
  void *data[3] = {src->data, weights->data, dst->data};
  bool ok = true;
  for (int k = 0; k < 3 && ok; ++k)
    ok = dnnl_memory_create(&mem[k], mds[k], e.engine, data[k]) ==
         dnnl_success;
  if (ok) {
    int srcArg = kind == DnnlConv::BackwardData ? DNNL_ARG_DIFF_SRC
                                                : DNNL_ARG_SRC;
    int weightsArg = kind == DnnlConv::BackwardWeights
                         ? DNNL_ARG_DIFF_WEIGHTS
                         : DNNL_ARG_WEIGHTS;
    int dstArg = kind == DnnlConv::Forward ? DNNL_ARG_DST : DNNL_ARG_DIFF_DST;
    dnnl_exec_arg_t args[3] = {
        {srcArg, mem[0]}, {weightsArg, mem[1]}, {dstArg, mem[2]}};
    ok = dnnl_primitive_execute(c.primitive, e.stream, 3, args) ==
             dnnl_success &&
         dnnl_stream_wait(e.stream) == dnnl_success;
  }
  for (dnnl_memory_t m : mem)
    if (m)
      dnnl_memory_destroy(m);
  return ok;
}

#endif // MP_RUNTIME_HAS_DNNL
