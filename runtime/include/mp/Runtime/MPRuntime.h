/*===- MPRuntime.h - the C ABI of the mp runtime -------------------*- C -*-===*
 *
 * The contract between code compiled from a tg training step and the
 * runtime library that executes it. The header has no MLIR or LLVM
 * dependency: the lowering (convert-tg-to-runtime) includes it for the enum
 * values it encodes in calls, and the CPU and CUDA backends implement it.
 * Both backends export the same symbols; which one runs is chosen when a
 * context is created.
 *
 * This revision fixes the shared vocabulary (ABI version, element types,
 * backends, status codes, tensor descriptors). The entry points that
 * execute ops are added with the backends and are versioned by
 * MP_RUNTIME_ABI_VERSION.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_RUNTIME_MPRUNTIME_H
#define MP_RUNTIME_MPRUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a declaration below changes meaning or layout. */
#define MP_RUNTIME_ABI_VERSION 1

/* Element (storage or compute) types. Values are part of the ABI. */
typedef enum mpElementType {
  MP_F32 = 0,
  MP_F16 = 1,
  MP_BF16 = 2,
  MP_F64 = 3,
  MP_I32 = 4,
  MP_I64 = 5,
  MP_I1 = 6
} mpElementType;

/* Which implementation executes a step. */
typedef enum mpBackend {
  MP_BACKEND_CPU = 0,
  MP_BACKEND_CUDA = 1,
  MP_BACKEND_AUTO = 2 /* CUDA when a device is present, else the CPU */
} mpBackend;

typedef enum mpStatus {
  MP_OK = 0,
  MP_ERROR_INVALID_ARGUMENT = 1,
  MP_ERROR_OUT_OF_MEMORY = 2,
  MP_ERROR_NO_DEVICE = 3,
  MP_ERROR_BACKEND = 4, /* a CUDA or cuBLAS call failed; see the message */
  MP_ERROR_UNSUPPORTED = 5
} mpStatus;

/* The largest rank a runtime tensor may have. */
#define MP_MAX_RANK 8

/* A dense row-major tensor in memory owned by the runtime's allocator. */
typedef struct mpTensor {
  void *data;
  mpElementType elementType;
  int32_t rank;
  int64_t shape[MP_MAX_RANK];
} mpTensor;

/* Size in bytes of one element of `type`; 0 for an unknown type. The i1
 * type is stored as one byte per element. */
static inline size_t mpElementSize(mpElementType type) {
  switch (type) {
  case MP_F32: case MP_I32: return 4;
  case MP_F16: case MP_BF16: return 2;
  case MP_F64: case MP_I64: return 8;
  case MP_I1: return 1;
  }
  return 0;
}

/* The ABI version the library was built with; a caller compares it with
 * MP_RUNTIME_ABI_VERSION before anything else. */
int32_t mpRuntimeAbiVersion(void);

/* A static, human-readable description of a status code. */
const char *mpStatusString(mpStatus status);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MP_RUNTIME_MPRUNTIME_H */
