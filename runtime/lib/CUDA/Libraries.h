//===- Libraries.h - CUDA libraries loaded at run time -----------*- C++ -*-===//
//
// Internal to the CUDA backend. The backend links the CUDA runtime
// statically (which itself opens the driver, libcuda.so.1, at run time) and
// no other CUDA library: cuBLASLt is opened with dlopen when the backend is
// initialised, so that a build (or the relocatable distribution) starts,
// runs on the CPU and explains itself on machines where it is missing, and
// finds it where GPU machines keep it: the toolkit's directories, the
// dynamic loader's path, or the `nvidia-*` wheels of a Python environment.
// cuDNN and NCCL are searched the same way, for --device-info and the GPU
// check (this version of mp calls neither).
//
// The search order is documented in docs/Install.md; keep the two in step.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_LIB_CUDA_LIBRARIES_H
#define MP_RUNTIME_LIB_CUDA_LIBRARIES_H

#include "mp/Runtime/MPCuda.h"

#include <cublasLt.h>

#include <string>
#include <vector>

namespace mp::cuda {

/// The cuBLASLt functions the backend calls.
#define MP_CUBLASLT_FUNCTIONS(X)                                               \
  X(cublasLtCreate)                                                            \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmul)                                                            \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatrixLayoutSetAttribute)

/// cuBLASLt's entry points, resolved from the loaded library.
struct CublasLt {
#define MP_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  MP_CUBLASLT_FUNCTIONS(MP_CUBLASLT_POINTER)
#undef MP_CUBLASLT_POINTER
};

/// Loads cuBLASLt once; null, with the places searched as the detail
/// (mp::rt::setDetail), when it cannot be found or lacks a function.
const CublasLt *loadCublasLt();

/// The loaded cuBLASLt. Only valid after loadCublasLt succeeded (the
/// context is initialised only then).
const CublasLt &lt();

/// The directories searched for `library` after MP_CUDA_LIBRARY_PATH and the
/// dynamic loader's own path, in order, whether or not they exist.
std::vector<std::string> searchDirectories(mprtCudaLibrary library);

} // namespace mp::cuda

#endif // MP_RUNTIME_LIB_CUDA_LIBRARIES_H
