//===- Entries.cpp - compiled steps' entry points on the CUDA backend -----===//
//
// The entry points of MPCompiled.h (Entries.inc, shared with the CPU
// backend) bound to the CUDA kernels, the allocation functions bound to the
// device allocator, and the symbol table a JIT links compiled code with.
//
//===----------------------------------------------------------------------===//

#include "Context.h"
#include "Kernels.h"

#include "../Entry.h"

namespace mp::cuda {
void *resolvePointer(void *data, size_t bytes, bool output, const char *entry,
                     int64_t site);
} // namespace mp::cuda

extern "C" {

#define MPRT_ENTRY_NAME(name) mprt_cuda_##name
#define MPRT_KERNEL(fn) ::mp::cuda::fn
#define MPRT_RESOLVE (&::mp::cuda::resolvePointer)
#include "../Entries.inc"
#undef MPRT_ENTRY_NAME
#undef MPRT_KERNEL
#undef MPRT_RESOLVE

static void *mprtCudaAlloc(size_t size) {
  void *ptr = mp::cuda::allocate(size);
  if (!ptr)
    mp::rt::fail("alloc", -1, "device memory: " + mp::rt::takeDetail());
  return ptr;
}

static void *mprtCudaAlignedAlloc(size_t alignment, size_t size) {
  if (alignment > 256) {
    mp::rt::fail("alloc", -1, "alignment above 256 bytes is not supported");
    return nullptr;
  }
  return mprtCudaAlloc(size);
}

const mprtSymbol *mprtCudaGetSymbols(int32_t *count) {
#define MPRT_SYMBOL(name, fields)                                              \
  {"mprt_" #name, reinterpret_cast<void *>(&mprt_cuda_##name)},
  static const mprtSymbol symbols[] = {
      MPRT_ENTRY_POINTS(MPRT_SYMBOL)
      {"_mlir_memref_to_llvm_alloc", reinterpret_cast<void *>(&mprtCudaAlloc)},
      {"_mlir_memref_to_llvm_aligned_alloc",
       reinterpret_cast<void *>(&mprtCudaAlignedAlloc)},
      {"_mlir_memref_to_llvm_free", reinterpret_cast<void *>(&mprtCudaFree)},
  };
#undef MPRT_SYMBOL
  if (count)
    *count = static_cast<int32_t>(sizeof(symbols) / sizeof(symbols[0]));
  return symbols;
}

} // extern "C"
