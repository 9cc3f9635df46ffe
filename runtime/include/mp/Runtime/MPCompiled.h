/*===- MPCompiled.h - entry points for compiled training steps ----*- C -*-===*
 *
 * What code produced by `convert-tg-to-runtime` calls. Every tg op becomes
 * one call `mprt_<entry>(block)`, where `block` points to an argument block
 * of 64-bit words the compiled code fills on its stack just before the
 * call. Using one untyped block instead of typed parameters keeps the
 * compiled side independent of element types and ranks (one declaration
 * per entry point serves every storage/compute combination) and lets
 * variadic ops (concat, unscale_grads) pass any number of tensors.
 *
 * Block layout. Word 0 is the call site: the index of the op in its
 * function, reported with any error. Then the fields listed with each entry
 * point, in order, where
 *   tensor  = data pointer, mpElementType, rank, then `rank` dimensions
 *   f       = a double's bit pattern (attributes are f32, exact in double)
 *   i       = a signed integer
 *   type    = an mpElementType (the op's compute type)
 *
 * Errors do not unwind through compiled code: the first failing kernel
 * records a message and every later call returns without work until the
 * caller reads and clears it with mprtTakeError.
 *
 * Memory: compiled code allocates its buffers through
 * `_mlir_memref_to_llvm_alloc` / `_mlir_memref_to_llvm_free` (MLIR's
 * generic allocation functions). The runtime implements them as a caching
 * allocator keyed by size, so a step that ran once allocates nothing from
 * the system again.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_RUNTIME_MPCOMPILED_H
#define MP_RUNTIME_MPCOMPILED_H

#include "mp/Runtime/MPRuntime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The entry points, named by the lowering as "mprt_" #name. X(name, fields)
 * lists them with their block fields (after the call site word). */
#define MPRT_ENTRY_POINTS(X)                                                   \
  X(unary, "kind:i compute:type in out")                                      \
  X(binary, "kind:i compute:type lhs rhs out")                                \
  X(activation_grad, "kind:i compute:type dy saved dx")                       \
  X(compare, "kind:i lhs rhs out")                                            \
  X(select, "cond on_true on_false out")                                      \
  X(softmax, "log:i axis:i compute:type in out")                              \
  X(softmax_grad, "log:i axis:i compute:type dy y dx")                        \
  X(reduce, "kind:i compute:type n:i axes:i[n] in out")                       \
  X(cumsum, "axis:i exclusive:i reverse:i compute:type in out")               \
  X(softmax_cross_entropy, "compute:type logits labels loss")                 \
  X(softmax_cross_entropy_grad, "compute:type dloss logits labels dlogits")   \
  X(mse_loss, "compute:type prediction target loss")                          \
  X(mse_loss_grad, "compute:type dloss prediction target dprediction")        \
  X(layer_norm, "axis:i epsilon:f compute:type x scale bias y mean rstd")     \
  X(layer_norm_grad,                                                          \
    "axis:i compute:type dy x scale mean rstd dx dscale dbias")               \
  X(gather, "table ids out")                                                  \
  X(gather_grad, "compute:type grad ids table")                               \
  X(transpose, "rank:i permutation:i[rank] in out")                           \
  X(copy, "in out (converts when the element types differ)")                  \
  X(broadcast, "in out")                                                      \
  X(concat, "axis:i n:i inputs[n] out")                                       \
  X(slice, "rank:i offsets:i[rank] strides:i[rank] in out")                   \
  X(slice_grad, "rank:i offsets:i[rank] strides:i[rank] dy dx")               \
  X(matmul, "transpose_lhs:i transpose_rhs:i compute:type lhs rhs out")       \
  X(fused_matmul, "transpose_lhs:i transpose_rhs:i activation:i has_bias:i "\
                  "has_residual:i bias_grad:i alpha:f compute:type lhs rhs "  \
                  "[bias] [residual] out [bias_grad] (bias_grad 0: none, "    \
                  "1 + an mpMatmulOperand: the sums of that operand)")        \
  X(conv2d, "pass:i compute:type strides:i[2] padding:i[4] dilations:i[2] "  \
            "groups:i channels_last:i a b out (pass 0: input filter out; "    \
            "1: dy filter dx; 2: dy input dfilter)")                          \
  X(pool2d, "kind:i compute:type window:i[2] strides:i[2] padding:i[4] "     \
            "channels_last:i in out")                                         \
  X(pool2d_grad, "kind:i compute:type window:i[2] strides:i[2] "             \
                 "padding:i[4] channels_last:i has_input:i dy [input] dx")    \
  X(batch_norm, "epsilon:f momentum:f channels_last:i compute:type x scale " \
                "bias running_mean running_var y mean rstd new_running_mean " \
                "new_running_var")                                            \
  X(batch_norm_inference, "epsilon:f channels_last:i compute:type x scale "  \
                          "bias mean variance y")                             \
  X(batch_norm_grad, "channels_last:i compute:type dy x scale mean rstd dx " \
                     "dscale dbias")                                          \
  X(dropout, "rate:f stream:i compute:type in seed out")                     \
  X(random_uniform, "low:f high:f stream:i seed out")                         \
  X(next_seed, "seed out")                                                    \
  X(unscale_grads, "n:i scale found_inf grads[n] unscaled[n]")                \
  X(all_reduce, "kind:i compute:type n:i inputs[n] outputs[n]")             \
  X(update_loss_scale, "growth:f backoff:f interval:i min:f max:f scale "     \
                       "good_steps found_inf new_scale new_good_steps")       \
  X(tensor_stats, "in stats")                                                 \
  X(record_nonfinite, "op_id:i n:i status stats[n] out")                      \
  X(sgd_update, "lr:f momentum:f weight_decay:f nesterov:i has_momentum:i "   \
                "has_skip:i has_copy:i param grad [momentum_buffer] [skip] "  \
                "new_param [new_momentum_buffer] [copy]")                     \
  X(adam_update, "lr:f beta1:f beta2:f epsilon:f weight_decay:f has_skip:i "  \
                 "has_copy:i param grad m v step [skip] new_param new_m "     \
                 "new_v new_step [copy]")

#define MPRT_DECLARE_ENTRY(name, fields) void mprt_##name(const int64_t *block);
MPRT_ENTRY_POINTS(MPRT_DECLARE_ENTRY)
#undef MPRT_DECLARE_ENTRY

/* MLIR's generic allocation functions (finalize-memref-to-llvm with
 * use-generic-functions), implemented by the caching allocator. */
void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *ptr);

/* The first error since the last call, as "tg.<op> (call site N): reason",
 * or null; clears it. The string stays valid until the next error. */
const char *mprtTakeError(void);

typedef struct mprtAllocatorStats {
  int64_t systemAllocations; /* calls that reached the system allocator */
  int64_t cacheHits;         /* allocations served from the cache */
  int64_t bytesInUse;        /* live bytes handed to compiled code */
  int64_t peakBytesInUse;
  int64_t bytesReserved; /* live + cached */
} mprtAllocatorStats;

void mprtGetAllocatorStats(mprtAllocatorStats *stats);

/* Returns cached blocks to the system (not blocks in use). */
void mprtReleaseCachedMemory(void);

/* Name and address of every symbol compiled code may reference, for JIT
 * symbol resolution without exporting the executable's symbols. */
typedef struct mprtSymbol {
  const char *name;
  void *address;
} mprtSymbol;

const mprtSymbol *mprtGetSymbols(int32_t *count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MP_RUNTIME_MPCOMPILED_H */
