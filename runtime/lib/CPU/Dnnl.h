//===- Dnnl.h - oneDNN behind the CPU kernels -------------------*- C++ -*-===//
//
// Internal to the CPU backend. Convolutions go to oneDNN (Debian's
// libdnnl, through its C API) when the build has it, the storage types are
// f32 or bf16 and the compute type is f32 (oneDNN accumulates in f32); it
// uses AVX-512 and AVX512_BF16 where the CPU has them. Otherwise, or when
// mpUseLibraryKernels(0) asked for the reference loops, the caller runs its
// own loops.
//
//===----------------------------------------------------------------------===//

#ifndef MP_RUNTIME_CPU_DNNL_H
#define MP_RUNTIME_CPU_DNNL_H

#include "mp/Runtime/MPRuntime.h"

namespace mp::rt {

enum class DnnlConv { Forward, BackwardData, BackwardWeights };

/// Runs one convolution pass: Forward reads `src` and `weights` and writes
/// `dst`; BackwardData reads `dst` (dy) and `weights` and writes `src`
/// (dx); BackwardWeights reads `src` and `dst` (dy) and writes `weights`
/// (dw). Returns false, having written nothing, when oneDNN does not take
/// the call.
bool dnnlConv2d(DnnlConv kind, const mpTensor *src, const mpTensor *weights,
                const mpTensor *dst, const mpWindow *w, mpElementType compute);

/// Whether library kernels (oneDNN, OpenBLAS) may be used.
bool libraryKernelsEnabled();

} // namespace mp::rt

#endif // MP_RUNTIME_CPU_DNNL_H
