//===- Compiled.cpp - entry points for compiled training steps ------------===//
//
// Decodes the argument blocks described in MPCompiled.h and calls the
// backend's kernels, keeps the sticky error compiled code cannot handle
// itself, and implements MLIR's generic allocation functions as a caching
// allocator: freed blocks go to a free list of their exact size, and since a
// training step allocates the same sizes in the same order every step, the
// second step is served entirely from the cache.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPCompiled.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

std::string pendingError;
std::string takenError;
bool hasError = false;

void fail(const char *entry, int64_t site, const char *reason) {
  if (hasError)
    return;
  hasError = true;
  pendingError = std::string("mprt_") + entry + " (call site " +
                 std::to_string(site) + "): " + reason;
}

//===----------------------------------------------------------------------===//
// Block decoding
//===----------------------------------------------------------------------===//

class Block {
public:
  Block(const char *entry, const int64_t *words)
      : entry(entry), p(words), site(*p++) {}

  int64_t i() { return *p++; }
  double f() {
    double d;
    std::memcpy(&d, p++, sizeof(d));
    return d;
  }
  mpElementType type() { return static_cast<mpElementType>(*p++); }
  mpTensor tensor() {
    mpTensor t{};
    t.data = reinterpret_cast<void *>(static_cast<intptr_t>(*p++));
    t.elementType = static_cast<mpElementType>(*p++);
    int64_t rank = *p++;
    if (rank < 0 || rank > MP_MAX_RANK) {
      fail(entry, site, "tensor rank out of range");
      rank = 0;
    }
    t.rank = static_cast<int32_t>(rank);
    for (int64_t d = 0; d < rank; ++d)
      t.shape[d] = *p++;
    return t;
  }
  std::vector<int64_t> ints(int64_t n) {
    std::vector<int64_t> v(p, p + n);
    p += n;
    return v;
  }
  /// Records a failing status; returns whether the call succeeded.
  bool check(mpStatus status) {
    if (status != MP_OK)
      fail(entry, site, mpStatusString(status));
    return status == MP_OK;
  }

private:
  const char *entry;
  const int64_t *p;
  int64_t site;
};

/// Copies `from` into `to` unless they are one buffer: in-place kernels then
/// update `to`.
mpStatus copyIfDistinct(const mpTensor &from, mpTensor &to) {
  if (from.data == to.data)
    return MP_OK;
  return mpCopy(&from, &to);
}

float f32(double d) { return static_cast<float>(d); }

//===----------------------------------------------------------------------===//
// Caching allocator
//===----------------------------------------------------------------------===//

constexpr size_t kAlignment = 64;

struct Allocator {
  std::map<size_t, std::vector<void *>> freeLists;
  std::unordered_map<void *, size_t> live;
  mprtAllocatorStats stats{};

  void *allocate(size_t size) {
    size_t rounded = (std::max<size_t>(size, 1) + kAlignment - 1) /
                     kAlignment * kAlignment;
    void *ptr = nullptr;
    auto it = freeLists.find(rounded);
    if (it != freeLists.end() && !it->second.empty()) {
      ptr = it->second.back();
      it->second.pop_back();
      ++stats.cacheHits;
    } else {
      ptr = std::aligned_alloc(kAlignment, rounded);
      if (!ptr)
        return nullptr;
      ++stats.systemAllocations;
      stats.bytesReserved += static_cast<int64_t>(rounded);
    }
    live[ptr] = rounded;
    stats.bytesInUse += static_cast<int64_t>(rounded);
    stats.peakBytesInUse = std::max(stats.peakBytesInUse, stats.bytesInUse);
    return ptr;
  }

  void release(void *ptr) {
    if (!ptr)
      return;
    auto it = live.find(ptr);
    if (it == live.end()) {
      // Not ours: compiled code frees only what it allocated, so this is a
      // bug in the caller; leaking is safer than freeing foreign memory.
      fail("free", -1, "pointer not allocated by the runtime");
      return;
    }
    stats.bytesInUse -= static_cast<int64_t>(it->second);
    freeLists[it->second].push_back(ptr);
    live.erase(it);
  }

  void trim() {
    for (auto &[size, list] : freeLists) {
      for (void *ptr : list)
        std::free(ptr);
      stats.bytesReserved -= static_cast<int64_t>(size * list.size());
      list.clear();
    }
  }
};

Allocator &allocator() {
  static Allocator instance;
  return instance;
}

} // namespace

extern "C" {

const char *mprtTakeError(void) {
  if (!hasError)
    return nullptr;
  hasError = false;
  takenError = std::move(pendingError);
  return takenError.c_str();
}

void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocator().allocate(size);
}

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  if (alignment > kAlignment) {
    fail("alloc", -1, "alignment above 64 bytes is not supported");
    return nullptr;
  }
  return allocator().allocate(size);
}

void _mlir_memref_to_llvm_free(void *ptr) { allocator().release(ptr); }

void mprtGetAllocatorStats(mprtAllocatorStats *stats) {
  if (stats)
    *stats = allocator().stats;
}

void mprtReleaseCachedMemory(void) { allocator().trim(); }

//===----------------------------------------------------------------------===//
// Entry points
//===----------------------------------------------------------------------===//

#define MPRT_BEGIN(name)                                                       \
  void mprt_##name(const int64_t *words) {                                     \
    if (hasError)                                                              \
      return;                                                                  \
    Block b(#name, words);
#define MPRT_END }

MPRT_BEGIN(unary)
  auto kind = static_cast<mpUnaryKind>(b.i());
  mpElementType compute = b.type();
  mpTensor in = b.tensor(), out = b.tensor();
  b.check(mpUnary(kind, &in, &out, compute));
MPRT_END

MPRT_BEGIN(binary)
  auto kind = static_cast<mpBinaryKind>(b.i());
  mpElementType compute = b.type();
  mpTensor lhs = b.tensor(), rhs = b.tensor(), out = b.tensor();
  b.check(mpBinary(kind, &lhs, &rhs, &out, compute));
MPRT_END

MPRT_BEGIN(activation_grad)
  auto kind = static_cast<mpActivationGradKind>(b.i());
  mpElementType compute = b.type();
  mpTensor dy = b.tensor(), saved = b.tensor(), dx = b.tensor();
  b.check(mpActivationGrad(kind, &dy, &saved, &dx, compute));
MPRT_END

MPRT_BEGIN(softmax)
  auto log = static_cast<int32_t>(b.i());
  int64_t axis = b.i();
  mpElementType compute = b.type();
  mpTensor in = b.tensor(), out = b.tensor();
  b.check(mpSoftmax(&in, &out, axis, log, compute));
MPRT_END

MPRT_BEGIN(softmax_grad)
  auto log = static_cast<int32_t>(b.i());
  int64_t axis = b.i();
  mpElementType compute = b.type();
  mpTensor dy = b.tensor(), y = b.tensor(), dx = b.tensor();
  b.check(mpSoftmaxGrad(&dy, &y, &dx, axis, log, compute));
MPRT_END

MPRT_BEGIN(reduce)
  auto kind = static_cast<mpReduceKind>(b.i());
  mpElementType compute = b.type();
  int64_t n = b.i();
  std::vector<int64_t> axes = b.ints(n);
  mpTensor in = b.tensor(), out = b.tensor();
  b.check(mpReduce(kind, &in, &out, axes.data(), static_cast<int32_t>(n),
                   compute));
MPRT_END

MPRT_BEGIN(softmax_cross_entropy)
  mpElementType compute = b.type();
  mpTensor logits = b.tensor(), labels = b.tensor(), loss = b.tensor();
  b.check(mpSoftmaxCrossEntropy(&logits, &labels, &loss, compute));
MPRT_END

MPRT_BEGIN(softmax_cross_entropy_grad)
  mpElementType compute = b.type();
  mpTensor dloss = b.tensor(), logits = b.tensor(), labels = b.tensor(),
           dlogits = b.tensor();
  b.check(mpSoftmaxCrossEntropyGrad(&dloss, &logits, &labels, &dlogits,
                                    compute));
MPRT_END

MPRT_BEGIN(mse_loss)
  mpElementType compute = b.type();
  mpTensor prediction = b.tensor(), target = b.tensor(), loss = b.tensor();
  b.check(mpMseLoss(&prediction, &target, &loss, compute));
MPRT_END

MPRT_BEGIN(mse_loss_grad)
  mpElementType compute = b.type();
  mpTensor dloss = b.tensor(), prediction = b.tensor(), target = b.tensor(),
           dprediction = b.tensor();
  b.check(mpMseLossGrad(&dloss, &prediction, &target, &dprediction, compute));
MPRT_END

MPRT_BEGIN(layer_norm)
  int64_t axis = b.i();
  float epsilon = f32(b.f());
  mpElementType compute = b.type();
  mpTensor x = b.tensor(), scale = b.tensor(), bias = b.tensor(),
           y = b.tensor(), mean = b.tensor(), rstd = b.tensor();
  b.check(mpLayerNorm(&x, &scale, &bias, &y, &mean, &rstd, axis, epsilon,
                      compute));
MPRT_END

MPRT_BEGIN(layer_norm_grad)
  int64_t axis = b.i();
  mpElementType compute = b.type();
  mpTensor dy = b.tensor(), x = b.tensor(), scale = b.tensor(),
           mean = b.tensor(), rstd = b.tensor(), dx = b.tensor(),
           dscale = b.tensor(), dbias = b.tensor();
  b.check(mpLayerNormGrad(&dy, &x, &scale, &mean, &rstd, &dx, &dscale, &dbias,
                          axis, compute));
MPRT_END

MPRT_BEGIN(gather)
  mpTensor table = b.tensor(), ids = b.tensor(), out = b.tensor();
  b.check(mpGather(&table, &ids, &out));
MPRT_END

MPRT_BEGIN(gather_grad)
  mpElementType compute = b.type();
  mpTensor grad = b.tensor(), ids = b.tensor(), table = b.tensor();
  b.check(mpGatherGrad(&grad, &ids, &table, compute));
MPRT_END

MPRT_BEGIN(transpose)
  int64_t rank = b.i();
  std::vector<int64_t> permutation = b.ints(rank);
  mpTensor in = b.tensor(), out = b.tensor();
  b.check(mpTranspose(&in, &out, permutation.data()));
MPRT_END

MPRT_BEGIN(copy)
  mpTensor in = b.tensor(), out = b.tensor();
  if (in.elementType == out.elementType) {
    b.check(mpCopy(&in, &out));
    return;
  }
  int64_t n = mpNumElements(&in);
  if (n != mpNumElements(&out)) {
    b.check(MP_ERROR_INVALID_ARGUMENT);
    return;
  }
  b.check(mpConvert(in.data, in.elementType, out.data, out.elementType, n));
MPRT_END

MPRT_BEGIN(broadcast)
  mpTensor in = b.tensor(), out = b.tensor();
  b.check(mpBroadcastTo(&in, &out));
MPRT_END

MPRT_BEGIN(concat)
  int64_t axis = b.i();
  int64_t n = b.i();
  std::vector<mpTensor> inputs;
  for (int64_t k = 0; k < n; ++k)
    inputs.push_back(b.tensor());
  mpTensor out = b.tensor();
  b.check(mpConcat(static_cast<int32_t>(n), inputs.data(), &out, axis));
MPRT_END

MPRT_BEGIN(slice)
  int64_t rank = b.i();
  std::vector<int64_t> offsets = b.ints(rank);
  std::vector<int64_t> strides = b.ints(rank);
  mpTensor in = b.tensor(), out = b.tensor();
  b.check(mpSlice(&in, &out, offsets.data(), strides.data()));
MPRT_END

MPRT_BEGIN(matmul)
  auto transposeLhs = static_cast<int32_t>(b.i());
  auto transposeRhs = static_cast<int32_t>(b.i());
  mpElementType compute = b.type();
  mpTensor lhs = b.tensor(), rhs = b.tensor(), out = b.tensor();
  b.check(mpMatmul(&lhs, &rhs, &out, transposeLhs, transposeRhs, compute));
MPRT_END

MPRT_BEGIN(unscale_grads)
  int64_t n = b.i();
  mpTensor scale = b.tensor(), foundInf = b.tensor();
  std::vector<mpTensor> grads, unscaled;
  for (int64_t k = 0; k < n; ++k)
    grads.push_back(b.tensor());
  for (int64_t k = 0; k < n; ++k)
    unscaled.push_back(b.tensor());
  b.check(mpUnscaleGrads(static_cast<int32_t>(n), grads.data(),
                         unscaled.data(), &scale, &foundInf));
MPRT_END

MPRT_BEGIN(update_loss_scale)
  float growth = f32(b.f()), backoff = f32(b.f());
  int64_t interval = b.i();
  float minScale = f32(b.f()), maxScale = f32(b.f());
  mpTensor scale = b.tensor(), goodSteps = b.tensor(), foundInf = b.tensor(),
           newScale = b.tensor(), newGoodSteps = b.tensor();
  if (!b.check(copyIfDistinct(scale, newScale)) ||
      !b.check(copyIfDistinct(goodSteps, newGoodSteps)))
    return;
  b.check(mpUpdateLossScale(&newScale, &newGoodSteps, &foundInf, growth,
                            backoff, interval, minScale, maxScale));
MPRT_END

MPRT_BEGIN(sgd_update)
  float lr = f32(b.f()), momentum = f32(b.f()), weightDecay = f32(b.f());
  auto nesterov = static_cast<int32_t>(b.i());
  bool hasMomentum = b.i() != 0, hasSkip = b.i() != 0;
  mpTensor param = b.tensor(), grad = b.tensor(), buffer{}, skip{};
  if (hasMomentum)
    buffer = b.tensor();
  if (hasSkip)
    skip = b.tensor();
  mpTensor newParam = b.tensor(), newBuffer{};
  if (hasMomentum)
    newBuffer = b.tensor();
  if (!b.check(copyIfDistinct(param, newParam)) ||
      (hasMomentum && !b.check(copyIfDistinct(buffer, newBuffer))))
    return;
  b.check(mpSgdUpdate(&newParam, &grad, hasMomentum ? &newBuffer : nullptr,
                      hasSkip ? &skip : nullptr, lr, momentum, weightDecay,
                      nesterov));
MPRT_END

MPRT_BEGIN(adam_update)
  float lr = f32(b.f()), beta1 = f32(b.f()), beta2 = f32(b.f()),
        epsilon = f32(b.f()), weightDecay = f32(b.f());
  bool hasSkip = b.i() != 0;
  mpTensor param = b.tensor(), grad = b.tensor(), m = b.tensor(),
           v = b.tensor(), step = b.tensor(), skip{};
  if (hasSkip)
    skip = b.tensor();
  mpTensor newParam = b.tensor(), newM = b.tensor(), newV = b.tensor(),
           newStep = b.tensor();
  if (!b.check(copyIfDistinct(param, newParam)) ||
      !b.check(copyIfDistinct(m, newM)) || !b.check(copyIfDistinct(v, newV)) ||
      !b.check(copyIfDistinct(step, newStep)))
    return;
  b.check(mpAdamUpdate(&newParam, &grad, &newM, &newV, &newStep,
                       hasSkip ? &skip : nullptr, lr, beta1, beta2, epsilon,
                       weightDecay));
MPRT_END

#undef MPRT_BEGIN
#undef MPRT_END

const mprtSymbol *mprtGetSymbols(int32_t *count) {
#define MPRT_SYMBOL(name, fields)                                              \
  {"mprt_" #name, reinterpret_cast<void *>(&mprt_##name)},
  static const mprtSymbol symbols[] = {
      MPRT_ENTRY_POINTS(MPRT_SYMBOL)
      {"_mlir_memref_to_llvm_alloc",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_alloc)},
      {"_mlir_memref_to_llvm_aligned_alloc",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_aligned_alloc)},
      {"_mlir_memref_to_llvm_free",
       reinterpret_cast<void *>(&_mlir_memref_to_llvm_free)},
  };
#undef MPRT_SYMBOL
  if (count)
    *count = static_cast<int32_t>(sizeof(symbols) / sizeof(symbols[0]));
  return symbols;
}

} // extern "C"
