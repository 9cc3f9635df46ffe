//===- Collectives.cpp - tg.all_reduce through the host's communicator ----===//
//
// The runtime does not talk to other processes itself: the host program
// sets a communicator (MPRuntime.h), and tg.all_reduce packs its tensors
// into one buffer of their storage type, hands it to the communicator's sum,
// and unpacks the result. A mean divides each contribution by the rank
// count before it is sent, in the compute type.
//
//===----------------------------------------------------------------------===//

#include "mp/Runtime/MPRuntime.h"

#include "Vector.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

namespace {

std::mutex communicatorMutex;
mpCommunicator current{1, 0, nullptr, nullptr};

mpCommunicator communicator() {
  std::lock_guard<std::mutex> lock(communicatorMutex);
  return current;
}

bool isFloat(mpElementType t) {
  return t == MP_F32 || t == MP_F64 || t == MP_F16 || t == MP_BF16;
}

/// dst[0, n) = src[0, n) / divisor, computed in `compute` (f32 or f64) and
/// stored in `type`; src and dst may alias.
mpStatus divideInto(const void *src, void *dst, mpElementType type,
                    mpElementType compute, int64_t n, int32_t divisor) {
  constexpr int64_t kChunk = 4096;
  const size_t size = mpElementSize(type);
  const auto *in = static_cast<const char *>(src);
  auto *out = static_cast<char *>(dst);
  if (type == MP_F32 && compute == MP_F32) {
    const auto *x = static_cast<const float *>(src);
    auto *y = static_cast<float *>(dst);
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] / float(divisor);
    return MP_OK;
  }
  if (compute == MP_F64) {
    double buffer[kChunk];
    for (int64_t k = 0; k < n; k += kChunk) {
      int64_t len = std::min(kChunk, n - k);
      if (mpStatus s = mpConvert(in + k * size, type, buffer, MP_F64, len))
        return s;
      for (int64_t j = 0; j < len; ++j)
        buffer[j] = buffer[j] / double(divisor);
      if (mpStatus s = mpConvert(buffer, MP_F64, out + k * size, type, len))
        return s;
    }
    return MP_OK;
  }
  // f16/bf16, computed in f32: one pass of L1-sized tiles.
  using namespace mp::rt;
  float x[kTile];
  for (int64_t k = 0; k < n; k += kTile) {
    int64_t len = std::min(kTile, n - k);
    loadF32(src, type, k, len, x);
    for (int64_t j = 0; j < len; ++j)
      x[j] = x[j] / float(divisor);
    storeF32(x, len, dst, type, k);
  }
  return MP_OK;
}

} // namespace

extern "C" void mpSetCommunicator(const mpCommunicator *comm) {
  std::lock_guard<std::mutex> lock(communicatorMutex);
  current = comm ? *comm : mpCommunicator{1, 0, nullptr, nullptr};
}

extern "C" int32_t mpCommunicatorSize(void) { return communicator().size; }

extern "C" mpStatus mpAllReduce(mpCollectiveKind kind, int32_t count,
                                const mpTensor *inputs, mpTensor *outputs,
                                mpElementType compute) {
  if (count < 1 || !inputs || !outputs ||
      (kind != MP_COLLECTIVE_SUM && kind != MP_COLLECTIVE_MEAN))
    return MP_ERROR_INVALID_ARGUMENT;
  mpElementType type = inputs[0].elementType;
  if (!isFloat(type) || !isFloat(compute))
    return MP_ERROR_INVALID_ARGUMENT;
  // What the additions are done in: at least the storage type, and f32 or
  // f64 (the communicators add f16/bf16 in f32).
  mpElementType wide =
      compute == MP_F64 || type == MP_F64 ? MP_F64 : MP_F32;
  int64_t total = 0;
  for (int32_t i = 0; i < count; ++i) {
    int64_t n = mpNumElements(&inputs[i]);
    if (n < 0 || n != mpNumElements(&outputs[i]) ||
        inputs[i].elementType != type || outputs[i].elementType != type ||
        (n > 0 && (!inputs[i].data || !outputs[i].data)))
      return MP_ERROR_INVALID_ARGUMENT;
    total += n;
  }
  mpCommunicator comm = communicator();
  const size_t size = mpElementSize(type);
  if (comm.size <= 1 || !comm.allReduceSum) {
    // One rank: the sum and the mean of one contribution are the input.
    for (int32_t i = 0; i < count; ++i)
      if (int64_t n = mpNumElements(&inputs[i]);
          n > 0 && outputs[i].data != inputs[i].data)
        std::memmove(outputs[i].data, inputs[i].data, size_t(n) * size);
    return MP_OK;
  }
  if (count == 1) {
    // One tensor: reduced where it is to be written, without staging.
    int64_t n = total;
    if (kind == MP_COLLECTIVE_MEAN) {
      if (mpStatus s = divideInto(inputs[0].data, outputs[0].data, type,
                                  wide, n, comm.size))
        return s;
    } else if (n > 0 && outputs[0].data != inputs[0].data) {
      std::memmove(outputs[0].data, inputs[0].data, size_t(n) * size);
    }
    return comm.allReduceSum(comm.context, outputs[0].data, n, type, wide);
  }
  // One message: the tensors back to back, each divided by the rank count
  // for a mean.
  thread_local std::vector<char> staging;
  staging.resize(size_t(total) * size);
  size_t offset = 0;
  for (int32_t i = 0; i < count; ++i) {
    int64_t n = mpNumElements(&inputs[i]);
    char *at = staging.data() + offset;
    if (kind == MP_COLLECTIVE_MEAN) {
      if (mpStatus s = divideInto(inputs[i].data, at, type, wide, n, comm.size))
        return s;
    } else if (n > 0) {
      std::memcpy(at, inputs[i].data, size_t(n) * size);
    }
    offset += size_t(n) * size;
  }
  if (mpStatus s = comm.allReduceSum(comm.context, staging.data(), total,
                                     type, wide))
    return s;
  offset = 0;
  for (int32_t i = 0; i < count; ++i) {
    size_t bytes = size_t(mpNumElements(&outputs[i])) * size;
    if (bytes)
      std::memcpy(outputs[i].data, staging.data() + offset, bytes);
    offset += bytes;
  }
  return MP_OK;
}
