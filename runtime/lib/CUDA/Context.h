//===- Context.h - the CUDA backend's device state ----------------*- C++ -*-===//
//
// Internal to the CUDA backend: the one stream, cuBLASLt handle and
// workspace every kernel uses, the caching allocator, and the helpers that
// turn a failing CUDA or cuBLAS call into a status with a message.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_LIB_CUDA_CONTEXT_H
#define MP_RUNTIME_LIB_CUDA_CONTEXT_H

#include "mp/Runtime/MPCuda.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>

namespace mp::cuda {

struct Context {
  int device = -1;
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  void *workspace = nullptr;
  size_t workspaceSize = 0;
  cudaDeviceProp properties{};
};

/// The initialised context, or null with the reason left as the detail
/// (mp::rt::setDetail).
Context *context();

/// Whether `status` is success; otherwise leaves "<call>: <status string>
/// (<status name>)" as the detail.
bool ok(cudaError_t status, const char *call);
bool ok(cublasStatus_t status, const char *call);

/// Device memory from the caching allocator; null (with a detail) when the
/// device is out of memory.
void *allocate(size_t size);
void release(void *ptr);

/// Scratch memory for one kernel call. Freed when the call returns: the
/// memory may be handed out again at once, since everything runs in order
/// on one stream.
class Scratch {
public:
  explicit Scratch(size_t size) : ptr(allocate(size)) {}
  ~Scratch() { release(ptr); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  void *get() const { return ptr; }
  explicit operator bool() const { return ptr != nullptr; }

private:
  void *ptr;
};

/// Checks the launch of `kernel` (configuration errors; faults inside the
/// kernel surface at the next synchronisation).
bool launched(const char *kernel);

} // namespace mp::cuda

/// Returns MP_ERROR_BACKEND from the enclosing function when `call` fails.
#define MP_CUDA_TRY(call)                                                      \
  do {                                                                         \
    if (!::mp::cuda::ok((call), #call))                                        \
      return MP_ERROR_BACKEND;                                                 \
  } while (false)

#endif // MP_RUNTIME_LIB_CUDA_CONTEXT_H
