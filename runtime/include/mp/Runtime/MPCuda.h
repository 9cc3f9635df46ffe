/*===- MPCuda.h - the CUDA backend of the mp runtime ---------------*- C -*-===*
 *
 * The CUDA backend implements the entry points of MPCompiled.h with CUDA
 * kernels and cuBLASLt GEMMs on one stream of one device. Compiled code is
 * the same host code for both backends; a JIT binds its `mprt_*` and
 * `_mlir_memref_to_llvm_*` references to the table mprtCudaGetSymbols
 * returns (the CPU backend's is mprtGetSymbols), so buffers a CUDA step
 * allocates are device memory from the backend's caching allocator.
 *
 * Everything a step does is enqueued on the backend's stream: no call in a
 * step synchronises with the host, so a step can be captured as a CUDA
 * graph (mprtCudaBeginCapture / EndCapture) and replayed. Pointers the
 * allocator did not hand out are taken to be immutable host constants (the
 * compiled module's memref.globals): each is uploaded once, the first time
 * it is read, and read from the device copy afterwards. Kernels refuse to
 * write anything but device memory from the allocator.
 *
 * Errors follow MPCompiled.h: functions return a status and record a
 * message (with the failing CUDA or cuBLAS call and its status string)
 * that mprtTakeError returns. Kernel faults surface at the next
 * synchronising call (mprtCudaSynchronize, a copy to the host).
 *
 * Only present in builds with MP_ENABLE_CUDA and a CUDA toolkit
 * (MP_RUNTIME_HAS_CUDA is then defined for users of mp_runtime_cuda).
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_RUNTIME_MPCUDA_H
#define MP_RUNTIME_MPCUDA_H

#include "mp/Runtime/MPCompiled.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mprtCudaDeviceInfo {
  char name[256];
  int32_t major, minor; /* compute capability */
  int32_t multiprocessors;
  int64_t totalMemory; /* bytes */
  int32_t driverVersion, runtimeVersion; /* 1000 * major + 10 * minor */
  /* Tensor-core paths of this compute capability. */
  int32_t f16TensorCores;  /* sm_70 and later */
  int32_t bf16TensorCores; /* sm_80 and later */
  int32_t tf32TensorCores; /* sm_80 and later */
  int32_t fp8TensorCores;  /* sm_89 and later */
} mprtCudaDeviceInfo;

/* The CUDA libraries the backend opens at run time. It links the CUDA
 * runtime statically and no other CUDA library, so that it starts, and says
 * what is missing, on machines without them. Each is searched, in order, in
 * the directories of MP_CUDA_LIBRARY_PATH (':'-separated), on the dynamic
 * loader's path (LD_LIBRARY_PATH, ld.so.cache, /lib, /usr/lib), in
 * $CUDA_HOME, $CUDA_PATH and /usr/local/cuda{,-13,-13.*} (lib64,
 * targets/<arch>/lib), then in the `nvidia-*` wheels of Python
 * environments (beside each python3 on PATH, $VIRTUAL_ENV, $CONDA_PREFIX,
 * ~/.local, /usr/local, /usr, each PYTHONPATH entry) and $CONDA_PREFIX/lib.
 * cuBLASLt is required; this version calls neither cuDNN nor NCCL and only
 * reports them. */
typedef enum mprtCudaLibrary {
  MPRT_CUDA_CUBLASLT = 0, /* libcublasLt.so.13 */
  MPRT_CUDA_CUDNN = 1,    /* libcudnn.so.9 */
  MPRT_CUDA_NCCL = 2,     /* libnccl.so.2 */
} mprtCudaLibrary;

typedef struct mprtCudaLibraryInfo {
  const char *name;   /* "cuBLASLt" */
  const char *soname; /* "libcublasLt.so.13" */
  int32_t required;   /* the backend cannot run without it */
  int32_t found;      /* opened */
  char version[32];   /* "13.1.0"; empty when not found */
  char path[1024];    /* the file opened; empty when not found */
  char detail[2048];  /* files that exist but could not be opened, and why;
                         for cuBLASLt, also a library that lacks a function
                         the backend calls */
} mprtCudaLibraryInfo;

/* Finds and opens `library` (once; later calls report the first result).
 * MP_ERROR_INVALID_ARGUMENT for an unknown library or a null `info`;
 * otherwise MP_OK, with `info->found` saying whether it was found. */
mpStatus mprtCudaFindLibrary(mprtCudaLibrary library,
                             mprtCudaLibraryInfo *info);

/* The places searched, in order, in words (for messages). */
const char *mprtCudaLibrarySearchOrder(void);

/* Number of CUDA devices; 0 (with an error recorded that says why) when
 * there is none or no usable driver. */
int32_t mprtCudaDeviceCount(void);

mpStatus mprtCudaQueryDevice(int32_t device, mprtCudaDeviceInfo *info);

/* Selects `device`, opens cuBLASLt (mprtCudaFindLibrary) and creates the
 * stream, the cuBLASLt handle and its workspace. Idempotent for the same
 * device. MP_ERROR_NO_DEVICE when there is no CUDA device; MP_ERROR_BACKEND,
 * with the places searched, when cuBLASLt cannot be found. */
mpStatus mprtCudaInitialize(int32_t device);

/* Device memory from the caching allocator (the memory of compiled steps). */
void *mprtCudaMalloc(size_t size);
void mprtCudaFree(void *ptr);
void mprtCudaGetAllocatorStats(mprtAllocatorStats *stats);

/* Copies on the backend's stream, ordered with the steps. */
mpStatus mprtCudaCopyToDevice(void *device, const void *host, size_t bytes);
mpStatus mprtCudaCopyToHost(void *host, const void *device, size_t bytes);
mpStatus mprtCudaCopyOnDevice(void *to, const void *from, size_t bytes);
/* Waits for everything enqueued; reports asynchronous kernel errors. */
mpStatus mprtCudaSynchronize(void);

/* Forgets the device copies of host constants (before the module that owns
 * them is destroyed). */
void mprtCudaForgetHostConstants(void);

/* Graph capture of the calls between Begin and End on the backend's stream.
 * Buffers the allocator hands out during capture stay reserved for the
 * graph until it is destroyed, so replays never race with later
 * allocations. */
typedef struct mprtCudaGraph mprtCudaGraph;
mpStatus mprtCudaBeginCapture(void);
mpStatus mprtCudaEndCapture(mprtCudaGraph **graph);
mpStatus mprtCudaLaunchGraph(mprtCudaGraph *graph);
void mprtCudaDestroyGraph(mprtCudaGraph *graph);

/* The symbols a JIT binds compiled code to for this backend: the names of
 * mprtGetSymbols, bound to the CUDA implementations. */
const mprtSymbol *mprtCudaGetSymbols(int32_t *count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MP_RUNTIME_MPCUDA_H */
