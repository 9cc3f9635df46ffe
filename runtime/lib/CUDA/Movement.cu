//===- Movement.cu - transpose, copy, broadcast, concat, slice, gather ----===//
//
// Data movement. Transpose, broadcast, slice and concat are one strided-copy
// kernel: it iterates over an index space and reads and writes each element
// through its own strides, moving elements as 1-, 2-, 4- or 8-byte words.
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

struct StridedPlan {
  Shape space;
  int64_t srcStrides[MP_MAX_RANK];
  int64_t dstStrides[MP_MAX_RANK];
  int64_t srcBase = 0, dstBase = 0;
};

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

template <typename W>
__global__ void stridedCopyKernel(const W *src, W *dst, int64_t n,
                                  StridedPlan plan) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    int64_t s = plan.srcBase, d = plan.dstBase, rest = i;
    for (int k = plan.space.rank - 1; k >= 0; --k) {
      int64_t c = rest % plan.space.dims[k];
      rest /= plan.space.dims[k];
      s += c * plan.srcStrides[k];
      d += c * plan.dstStrides[k];
    }
    dst[d] = src[s];
  }
}

mpStatus stridedCopy(const void *src, void *dst, size_t elementSize,
                     const StridedPlan &plan) {
  Context *c = context();
  if (!c)
    return MP_ERROR_BACKEND;
  int64_t n = 1;
  for (int32_t d = 0; d < plan.space.rank; ++d)
    n *= plan.space.dims[d];
  if (!n)
    return MP_OK;
  bool known = withWord(elementSize, [&](auto word) {
    using W = decltype(word);
    stridedCopyKernel<<<gridFor(n), kThreads, 0, c->stream>>>(
        static_cast<const W *>(src), static_cast<W *>(dst), n, plan);
  });
  if (!known)
    return MP_ERROR_INVALID_ARGUMENT;
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
    int64_t last = offsets[d] + (out->shape[d] - 1) * step;
    if (step < 1 || offsets[d] < 0 ||
        (out->shape[d] > 0 && (offsets[d] >= in->shape[d] ||
                               last >= in->shape[d])))
      return MP_ERROR_INVALID_ARGUMENT;
    plan.srcBase += offsets[d] * inStrides[d];
    plan.srcStrides[d] = step * inStrides[d];
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
    int64_t last = offsets[d] + (dy->shape[d] - 1) * step;
    if (step < 1 || offsets[d] < 0 ||
        (dy->shape[d] > 0 && (offsets[d] >= dx->shape[d] ||
                              last >= dx->shape[d])))
      return MP_ERROR_INVALID_ARGUMENT;
    plan.dstBase += offsets[d] * dxStrides[d];
    plan.dstStrides[d] = step * dxStrides[d];
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
