//===- Movement.cu - transpose, copy, broadcast, concat, slice, gather ----===//
//
// Data movement. Transpose, broadcast, slice and concat are one strided-copy
// kernel: it iterates over an index space and reads and writes each element
// through its own strides. Before the launch the plan is normalised on the
// host: size-1 dimensions are dropped and dimensions that are contiguous in
// each other on both sides merged (fewer divisions per element); a run that
// is contiguous on both sides moves as 4-, 8- or 16-byte words where every
// address it touches is aligned to the word (an f16 head transpose moves
// rows of 64 elements as 8 words of 16 bytes); and the index arithmetic is
// 32-bit where every index and offset fits.
// The gather gradient is deterministic: ids are sorted (a stable radix sort)
// and each distinct id sums its rows in order, without atomics.
//
//===----------------------------------------------------------------------===//

#include "Common.cuh"
#include "Kernels.h"

#include <cub/device/device_radix_sort.cuh>

#include <vector>

using namespace mp;
using namespace mp::cuda;

namespace {

/// A copy over the index space `space`: element (c0, c1, ...) is read at
/// srcBase + sum(ck * srcStrides[k]) and written at dstBase + sum(ck *
/// dstStrides[k]), in elements.
struct StridedPlan {
  Shape space;
  int64_t srcStrides[MP_MAX_RANK] = {};
  int64_t dstStrides[MP_MAX_RANK] = {};
  int64_t srcBase = 0, dstBase = 0;
};

int64_t count(const Shape &space) {
  int64_t n = 1;
  for (int32_t d = 0; d < space.rank; ++d)
    n *= space.dims[d];
  return n;
}

/// `plan` with its size-1 dimensions dropped (whatever their strides: their
/// only coordinate is 0) and each dimension merged into the one outside it
/// where that steps, on both sides, exactly over the inner one's extent.
/// Visits the same (source, destination) pairs; all size-1 gives rank 0,
/// one element.
StridedPlan simplified(const StridedPlan &plan) {
  StridedPlan out;
  out.srcBase = plan.srcBase;
  out.dstBase = plan.dstBase;
  int32_t &rank = out.space.rank;
  for (int32_t k = 0; k < plan.space.rank; ++k) {
    int64_t size = plan.space.dims[k];
    int64_t src = plan.srcStrides[k], dst = plan.dstStrides[k];
    if (size == 1)
      continue;
    if (rank > 0 && out.srcStrides[rank - 1] == src * size &&
        out.dstStrides[rank - 1] == dst * size) {
      out.space.dims[rank - 1] *= size;
      out.srcStrides[rank - 1] = src;
      out.dstStrides[rank - 1] = dst;
      continue;
    }
    out.space.dims[rank] = size;
    out.srcStrides[rank] = src;
    out.dstStrides[rank] = dst;
    ++rank;
  }
  return out;
}

/// The widest word (16, 8 or 4 bytes, wider than an element) that a
/// simplified `plan` can move its innermost dimension by, or `elementSize`:
/// that dimension must be contiguous on both sides, and its length, every
/// other stride, both bases and both pointers multiples of the word, so
/// that every word is whole and aligned.
size_t widestWord(const StridedPlan &plan, size_t elementSize,
                  const void *src, const void *dst) {
  int32_t rank = plan.space.rank;
  if (rank == 0 || plan.srcStrides[rank - 1] != 1 ||
      plan.dstStrides[rank - 1] != 1)
    return elementSize;
  auto size = int64_t(elementSize);
  for (int64_t word : {16, 8, 4}) {
    if (word <= size)
      break;
    auto aligned = [&](int64_t elements) {
      return elements * size % word == 0;
    };
    bool fits = aligned(plan.space.dims[rank - 1]) &&
                aligned(plan.srcBase) && aligned(plan.dstBase) &&
                reinterpret_cast<uintptr_t>(src) % word == 0 &&
                reinterpret_cast<uintptr_t>(dst) % word == 0;
    for (int32_t k = 0; fits && k < rank - 1; ++k)
      fits = aligned(plan.srcStrides[k]) && aligned(plan.dstStrides[k]);
    if (fits)
      return size_t(word);
  }
  return elementSize;
}

/// `plan` in units of `word` bytes, a word that widestWord chose. The
/// innermost dimension may become size 1, which simplifying again drops.
StridedPlan widened(const StridedPlan &plan, size_t elementSize,
                    size_t word) {
  auto scale = [&](int64_t elements) {
    return elements * int64_t(elementSize) / int64_t(word);
  };
  StridedPlan out = plan;
  int32_t rank = plan.space.rank;
  out.space.dims[rank - 1] = scale(plan.space.dims[rank - 1]);
  for (int32_t k = 0; k < rank - 1; ++k) {
    out.srcStrides[k] = scale(plan.srcStrides[k]);
    out.dstStrides[k] = scale(plan.dstStrides[k]);
  }
  out.srcBase = scale(plan.srcBase);
  out.dstBase = scale(plan.dstBase);
  return out;
}

/// Below 2^30, an index, an offset and the grid-stride step added to an
/// index all fit uint32_t.
constexpr int64_t kIndex32Limit = int64_t(1) << 30;

/// Whether `base` plus every multiple of `strides` that `space` reaches
/// stays in [0, kIndex32Limit). Strides and bases are never negative from
/// the callers; a negative one (unsigned arithmetic would wrap) answers no.
bool reachFits32(const Shape &space, const int64_t *strides, int64_t base) {
  if (base < 0 || base >= kIndex32Limit)
    return false;
  int64_t reach = base;
  for (int32_t k = 0; k < space.rank; ++k) {
    int64_t steps = space.dims[k] - 1, stride = strides[k];
    if (stride < 0 || (steps && stride > (kIndex32Limit - 1 - reach) / steps))
      return false;
    reach += steps * stride;
  }
  return true;
}

/// Whether a simplified `plan` of `n` elements can use 32-bit indices.
bool fitsIndex32(const StridedPlan &plan, int64_t n) {
  return n < kIndex32Limit &&
         reachFits32(plan.space, plan.srcStrides, plan.srcBase) &&
         reachFits32(plan.space, plan.dstStrides, plan.dstBase);
}

/// A plan as the kernel reads it: index type I, innermost dimension first,
/// so that the unrolled loop below indexes it with constants.
template <typename I> struct KernelPlan {
  int32_t rank;
  I dims[MP_MAX_RANK], src[MP_MAX_RANK], dst[MP_MAX_RANK];
  I srcBase, dstBase;
};

template <typename I> KernelPlan<I> kernelPlan(const StridedPlan &plan) {
  KernelPlan<I> out{};
  int32_t rank = plan.space.rank;
  out.rank = rank;
  for (int32_t k = 0; k < rank; ++k) {
    out.dims[k] = I(plan.space.dims[rank - 1 - k]);
    out.src[k] = I(plan.srcStrides[rank - 1 - k]);
    out.dst[k] = I(plan.dstStrides[rank - 1 - k]);
  }
  out.srcBase = I(plan.srcBase);
  out.dstBase = I(plan.dstBase);
  return out;
}

/// Calls `body(W{})` with W the unsigned word of `size` bytes (1, 2, 4 or
/// 8); returns false for other sizes. Movement copies bits, whatever the
/// element type.
template <typename Body> bool withWord(size_t size, Body body) {
  switch (size) {
  case 1: body(uint8_t{}); return true;
  case 2: body(uint16_t{}); return true;
  case 4: body(uint32_t{}); return true;
  case 8: body(uint64_t{}); return true;
  default: return false;
  }
}

/// withWord, and uint4 for the 16-byte words of a widened strided copy.
template <typename Body> bool withCopyWord(size_t size, Body body) {
  if (size == 16) {
    body(uint4{});
    return true;
  }
  return withWord(size, body);
}

/// One word per thread and grid-stride turn. With I = uint32_t the index
/// arithmetic is 32-bit: a 64-bit division is a long software sequence on
/// the GPU, a 32-bit one a few instructions.
template <typename W, typename I>
__global__ void stridedCopyKernel(const W *src, W *dst, I n,
                                  KernelPlan<I> plan) {
  for (I i = I(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += I(gridDim.x) * blockDim.x) {
    I s = plan.srcBase, d = plan.dstBase, rest = i;
#pragma unroll
    for (int k = 0; k < MP_MAX_RANK; ++k) {
      if (k == plan.rank)
        break;
      // The outermost coordinate is what the divisions leave.
      if (k + 1 == plan.rank) {
        s += rest * plan.src[k];
        d += rest * plan.dst[k];
        break;
      }
      I c = rest % plan.dims[k];
      rest /= plan.dims[k];
      s += c * plan.src[k];
      d += c * plan.dst[k];
    }
    dst[d] = src[s];
  }
}

template <typename W, typename I>
void launchStridedCopy(const void *src, void *dst, int64_t n,
                       const StridedPlan &plan, cudaStream_t stream) {
  stridedCopyKernel<<<gridFor(n), kThreads, 0, stream>>>(
      static_cast<const W *>(src), static_cast<W *>(dst), I(n),
      kernelPlan<I>(plan));
}

mpStatus stridedCopy(const void *src, void *dst, size_t elementSize,
                     const StridedPlan &given) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!count(given.space))
    return MP_OK;
  if (elementSize != 1 && elementSize != 2 && elementSize != 4 &&
      elementSize != 8)
    return MP_ERROR_INVALID_ARGUMENT;
  StridedPlan plan = simplified(given);
  size_t word = widestWord(plan, elementSize, src, dst);
  if (word != elementSize)
    plan = simplified(widened(plan, elementSize, word));
  int64_t n = count(plan.space);
  bool index32 = fitsIndex32(plan, n);
  withCopyWord(word, [&](auto w) {
    using W = decltype(w);
    if (index32)
      launchStridedCopy<W, uint32_t>(src, dst, n, plan, c->stream);
    else
      launchStridedCopy<W, int64_t>(src, dst, n, plan, c->stream);
  });
  return launched("strided copy kernel") ? MP_OK : MP_ERROR_BACKEND;
}

/// Row-major element strides of `t`.
void contiguousStrides(const mpTensor &t, int64_t *strides) {
  int64_t s = 1;
  for (int32_t d = t.rank - 1; d >= 0; --d) {
    strides[d] = s;
    s *= t.shape[d];
  }
}

bool valid(const mpTensor *t) {
  if (!t || !mpElementSize(t->elementType) || mpNumElements(t) < 0)
    return false;
  return mpNumElements(t) == 0 || t->data;
}

bool isIdType(mpElementType type) { return type == MP_I32 || type == MP_I64; }

/// Whether `rows` ([I..., D...]) is what gathering `ids` ([I...]) from
/// `table` ([V, D...]) gives; sets `width` to the product of D.
bool gatherShapes(const mpTensor &table, const mpTensor &ids,
                  const mpTensor &rows, int64_t &width) {
  if (table.rank < 1 || !isIdType(ids.elementType) ||
      rows.rank != ids.rank + table.rank - 1)
    return false;
  for (int32_t d = 0; d < ids.rank; ++d)
    if (rows.shape[d] != ids.shape[d])
      return false;
  width = 1;
  for (int32_t d = 1; d < table.rank; ++d) {
    if (rows.shape[ids.rank + d - 1] != table.shape[d])
      return false;
    width *= table.shape[d];
  }
  return true;
}

template <typename W>
__global__ void gatherKernel(const W *table, int64_t rows, int64_t width,
                             const void *ids, int idType, W *out, int64_t n) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t r = i / width;
    int64_t id = idType == MP_I32 ? static_cast<const int32_t *>(ids)[r]
                                  : static_cast<const int64_t *>(ids)[r];
    id = id < -rows ? 0 : id < 0 ? id + rows : (id >= rows ? rows - 1 : id);
    out[i] = table[id * width + i % width];
  }
}

/// Sort keys: the id (a negative one counts from the end), or `rows` (sorted
/// last, dropped) when out of range.
__global__ void gatherKeysKernel(const void *ids, int idType, int64_t n,
                                 int64_t rows, uint32_t *keys,
                                 uint32_t *positions) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t id = idType == MP_I32 ? static_cast<const int32_t *>(ids)[i]
                                  : static_cast<const int64_t *>(ids)[i];
    if (id < 0)
      id += rows;
    keys[i] = uint32_t(id < 0 || id >= rows ? rows : id);
    positions[i] = uint32_t(i);
  }
}

/// One block per sorted position; the first position of each run of equal
/// ids sums the gradient rows of the run, in order.
template <typename C>
__global__ void gatherGradKernel(const uint32_t *keys,
                                 const uint32_t *positions, int64_t n,
                                 int64_t rows, int64_t width, const void *grad,
                                 int gradType, void *table, int tableType,
                                 int compute) {
  for (int64_t p = blockIdx.x; p < n; p += gridDim.x) {
    uint32_t key = keys[p];
    if (key >= rows || (p > 0 && keys[p - 1] == key))
      continue;
    for (int64_t col = threadIdx.x; col < width; col += blockDim.x) {
      C acc = C(0);
      for (int64_t q = p; q < n && keys[q] == key; ++q)
        acc = roundCompute(compute,
                           acc + loadAs<C>(grad, gradType,
                                           int64_t(positions[q]) * width +
                                               col));
      storeAs<C>(table, tableType, int64_t(key) * width + col, acc);
    }
  }
}

} // namespace

mpStatus mp::cuda::mpCopy(const mpTensor *in, mpTensor *out) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  if (!valid(in) || !valid(out) || in->elementType != out->elementType ||
      mpNumElements(in) != mpNumElements(out))
    return MP_ERROR_INVALID_ARGUMENT;
  size_t bytes = size_t(mpNumElements(in)) * mpElementSize(in->elementType);
  if (bytes && in->data != out->data)
    MP_CUDA_TRY(cudaMemcpyAsync(out->data, in->data, bytes,
                                cudaMemcpyDeviceToDevice, c->stream));
  return MP_OK;
}

mpStatus mp::cuda::mpTranspose(const mpTensor *in, mpTensor *out,
                               const int64_t *permutation) {
  if (!valid(in) || !valid(out) || in->elementType != out->elementType ||
      in->rank != out->rank || (in->rank && !permutation))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t inStrides[MP_MAX_RANK];
  contiguousStrides(*in, inStrides);
  StridedPlan plan;
  plan.space = shapeOf(*out);
  contiguousStrides(*out, plan.dstStrides);
  bool seen[MP_MAX_RANK] = {};
  for (int32_t d = 0; d < out->rank; ++d) {
    int64_t p = permutation[d];
    if (p < 0 || p >= in->rank || seen[p] || in->shape[p] != out->shape[d])
      return MP_ERROR_INVALID_ARGUMENT;
    seen[p] = true;
    plan.srcStrides[d] = inStrides[p];
  }
  return stridedCopy(in->data, out->data, mpElementSize(in->elementType), plan);
}

mpStatus mp::cuda::mpBroadcastTo(const mpTensor *in, mpTensor *out) {
  if (!valid(in) || !valid(out) || in->elementType != out->elementType ||
      in->rank > out->rank)
    return MP_ERROR_INVALID_ARGUMENT;
  StridedPlan plan;
  plan.space = shapeOf(*out);
  contiguousStrides(*out, plan.dstStrides);
  int64_t stride = 1;
  for (int32_t d = out->rank - 1; d >= 0; --d) {
    int32_t id = d - (out->rank - in->rank);
    int64_t size = id >= 0 ? in->shape[id] : 1;
    if (size != out->shape[d] && size != 1)
      return MP_ERROR_INVALID_ARGUMENT;
    plan.srcStrides[d] = size == 1 ? 0 : stride;
    stride *= size;
  }
  return stridedCopy(in->data, out->data, mpElementSize(in->elementType), plan);
}

mpStatus mp::cuda::mpSlice(const mpTensor *in, mpTensor *out,
                           const int64_t *offsets, const int64_t *strides) {
  if (!valid(in) || !valid(out) || in->elementType != out->elementType ||
      in->rank != out->rank || (in->rank && !offsets))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t inStrides[MP_MAX_RANK];
  contiguousStrides(*in, inStrides);
  StridedPlan plan;
  plan.space = shapeOf(*out);
  contiguousStrides(*out, plan.dstStrides);
  for (int32_t d = 0; d < in->rank; ++d) {
    int64_t step = strides ? strides[d] : 1;
    if (!sliceFits(offsets[d], out->shape[d], step, in->shape[d]))
      return MP_ERROR_INVALID_ARGUMENT;
    // A dimension of one element never steps (its step may be huge).
    if (out->shape[d] > 0)
      plan.srcBase += offsets[d] * inStrides[d];
    plan.srcStrides[d] = out->shape[d] > 1 ? step * inStrides[d] : 0;
  }
  return stridedCopy(in->data, out->data, mpElementSize(in->elementType), plan);
}

mpStatus mp::cuda::mpSliceGrad(const mpTensor *dy, mpTensor *dx,
                               const int64_t *offsets,
                               const int64_t *strides) {
  if (!valid(dy) || !valid(dx) || dy->elementType != dx->elementType ||
      dy->rank != dx->rank || (dx->rank && !offsets))
    return MP_ERROR_INVALID_ARGUMENT;
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  int64_t dxStrides[MP_MAX_RANK];
  contiguousStrides(*dx, dxStrides);
  StridedPlan plan;
  plan.space = shapeOf(*dy);
  contiguousStrides(*dy, plan.srcStrides);
  for (int32_t d = 0; d < dx->rank; ++d) {
    int64_t step = strides ? strides[d] : 1;
    if (!sliceFits(offsets[d], dy->shape[d], step, dx->shape[d]))
      return MP_ERROR_INVALID_ARGUMENT;
    // A dimension of one element never steps (its step may be huge).
    if (dy->shape[d] > 0)
      plan.dstBase += offsets[d] * dxStrides[d];
    plan.dstStrides[d] = dy->shape[d] > 1 ? step * dxStrides[d] : 0;
  }
  size_t bytes = size_t(mpNumElements(dx)) * mpElementSize(dx->elementType);
  if (bytes)
    MP_CUDA_TRY(cudaMemsetAsync(dx->data, 0, bytes, c->stream));
  return stridedCopy(dy->data, dx->data, mpElementSize(dy->elementType), plan);
}

mpStatus mp::cuda::mpConcat(int32_t count, const mpTensor *inputs,
                            mpTensor *out, int64_t axis) {
  if (count < 1 || !inputs || !valid(out) || axis < 0 || axis >= out->rank)
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t total = 0;
  for (int32_t k = 0; k < count; ++k) {
    const mpTensor &in = inputs[k];
    if (!valid(&in) || in.elementType != out->elementType ||
        in.rank != out->rank)
      return MP_ERROR_INVALID_ARGUMENT;
    for (int32_t d = 0; d < out->rank; ++d)
      if (d != axis && in.shape[d] != out->shape[d])
        return MP_ERROR_INVALID_ARGUMENT;
    total += in.shape[axis];
  }
  if (total != out->shape[axis])
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t outStrides[MP_MAX_RANK];
  contiguousStrides(*out, outStrides);
  int64_t offset = 0;
  for (int32_t k = 0; k < count; ++k) {
    const mpTensor &in = inputs[k];
    StridedPlan plan;
    plan.space = shapeOf(in);
    contiguousStrides(in, plan.srcStrides);
    for (int32_t d = 0; d < out->rank; ++d)
      plan.dstStrides[d] = outStrides[d];
    plan.dstBase = offset * outStrides[axis];
    if (mpStatus s = stridedCopy(in.data, out->data,
                                 mpElementSize(out->elementType), plan))
      return s;
    offset += in.shape[axis];
  }
  return MP_OK;
}

mpStatus mp::cuda::mpGather(const mpTensor *table, const mpTensor *ids,
                            mpTensor *out) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  int64_t width;
  if (!valid(table) || !valid(ids) || !valid(out) ||
      table->elementType != out->elementType ||
      !gatherShapes(*table, *ids, *out, width))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t rows = table->shape[0], n = mpNumElements(out);
  if (!n)
    return MP_OK;
  if (!rows)
    return MP_ERROR_INVALID_ARGUMENT;
  withWord(mpElementSize(table->elementType), [&](auto word) {
    using W = decltype(word);
    gatherKernel<<<gridFor(n), kThreads, 0, c->stream>>>(
        static_cast<const W *>(table->data), rows, width, ids->data,
        ids->elementType, static_cast<W *>(out->data), n);
  });
  return launched("gather kernel") ? MP_OK : MP_ERROR_BACKEND;
}

mpStatus mp::cuda::mpGatherGrad(const mpTensor *grad, const mpTensor *ids,
                                mpTensor *table, mpElementType compute) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  int64_t width;
  if (!validFloat(grad) || !valid(ids) || !validFloat(table) ||
      !isFloatType(compute) || !gatherShapes(*table, *ids, *grad, width))
    return MP_ERROR_INVALID_ARGUMENT;
  int64_t rows = table->shape[0], n = mpNumElements(ids);
  if (rows >= (int64_t(1) << 31) || n >= (int64_t(1) << 31))
    return MP_ERROR_UNSUPPORTED;
  size_t tableBytes =
      size_t(mpNumElements(table)) * mpElementSize(table->elementType);
  if (tableBytes)
    MP_CUDA_TRY(cudaMemsetAsync(table->data, 0, tableBytes, c->stream));
  if (!n || !width)
    return MP_OK;
  // keys, positions, sorted keys, sorted positions, then CUB's temporaries.
  int endBit = 1;
  while (endBit < 32 && (int64_t(1) << endBit) <= rows)
    ++endBit;
  size_t sortBytes = 0;
  MP_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      nullptr, sortBytes, static_cast<const uint32_t *>(nullptr),
      static_cast<uint32_t *>(nullptr), static_cast<const uint32_t *>(nullptr),
      static_cast<uint32_t *>(nullptr), n, 0, endBit, c->stream));
  size_t words = size_t(n) * sizeof(uint32_t);
  size_t padded = (words + 255) / 256 * 256;
  Scratch scratch(4 * padded + sortBytes);
  if (!scratch)
    return MP_ERROR_OUT_OF_MEMORY;
  auto *base = static_cast<char *>(scratch.get());
  auto *keys = reinterpret_cast<uint32_t *>(base);
  auto *positions = reinterpret_cast<uint32_t *>(base + padded);
  auto *sortedKeys = reinterpret_cast<uint32_t *>(base + 2 * padded);
  auto *sortedPositions = reinterpret_cast<uint32_t *>(base + 3 * padded);
  gatherKeysKernel<<<gridFor(n), kThreads, 0, c->stream>>>(
      ids->data, ids->elementType, n, rows, keys, positions);
  if (!launched("gather gradient keys kernel"))
    return MP_ERROR_BACKEND;
  MP_CUDA_TRY(cub::DeviceRadixSort::SortPairs(
      base + 4 * padded, sortBytes, keys, sortedKeys, positions,
      sortedPositions, n, 0, endBit, c->stream));
  unsigned grid = unsigned(std::min<int64_t>(n, 1 << 20));
  if (compute == MP_F64)
    gatherGradKernel<double><<<grid, kThreads, 0, c->stream>>>(
        sortedKeys, sortedPositions, n, rows, width, grad->data,
        grad->elementType, table->data, table->elementType, compute);
  else
    gatherGradKernel<float><<<grid, kThreads, 0, c->stream>>>(
        sortedKeys, sortedPositions, n, rows, width, grad->data,
        grad->elementType, table->data, table->elementType, compute);
  return launched("gather gradient kernel") ? MP_OK : MP_ERROR_BACKEND;
}
