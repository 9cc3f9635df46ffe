/*===- Version.c - ABI version and status strings ------------------------===*/

#include "mp/Runtime/MPRuntime.h"

int32_t mpRuntimeAbiVersion(void) { return MP_RUNTIME_ABI_VERSION; }

const char *mpStatusString(mpStatus status) {
  switch (status) {
  case MP_OK: return "success";
  case MP_ERROR_INVALID_ARGUMENT: return "invalid argument";
  case MP_ERROR_OUT_OF_MEMORY: return "out of memory";
  case MP_ERROR_NO_DEVICE: return "no CUDA device";
  case MP_ERROR_BACKEND: return "backend call failed";
  case MP_ERROR_UNSUPPORTED: return "unsupported";
  case MP_ERROR_COMMUNICATION: return "collective communication failed";
  }
  return "unknown status";
}
