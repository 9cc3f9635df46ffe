// RUN: mp-opt %s --split-input-file --convert-tg-to-runtime | FileCheck %s

// A result is produced directly in its destination argument; intermediate
// buffers are freed right after their last use; one call per op.
// CHECK-LABEL: func @chain
// CHECK-SAME: (%[[A:.*]]: memref<4x8xf16>, %[[B:.*]]: memref<8x2xf16>, %[[OUT:.*]]: memref<4x2xf32> {mp.result = 0 : i64})
// CHECK: %[[MM:.*]] = memref.alloc() : memref<4x2xf32>
// CHECK: memref.alloca_scope
// CHECK: memref.extract_aligned_pointer_as_index %[[A]]
// CHECK: memref.extract_aligned_pointer_as_index %[[B]]
// CHECK: memref.extract_aligned_pointer_as_index %[[MM]]
// CHECK: %[[BLOCK:.*]] = memref.alloca() : memref<19xi64>
// CHECK: llvm.inttoptr
// CHECK: call @mprt_matmul
// CHECK: memref.alloca_scope
// CHECK: memref.extract_aligned_pointer_as_index %[[MM]]
// CHECK: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: call @mprt_unary
// CHECK: memref.dealloc %[[MM]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @chain(%a: tensor<4x8xf16>, %b: tensor<8x2xf16>) -> tensor<4x2xf32> {
  %c = tg.matmul %a, %b compute(f32) : (tensor<4x8xf16>, tensor<8x2xf16>) -> tensor<4x2xf32>
  %d = tg.relu %c : tensor<4x2xf32>
  return %d : tensor<4x2xf32>
}

// -----

// The block carries the call site, the compute type and the shapes: matmul
// with transposes, computing in f32 (code 0) on f16 operands (code 1).
// CHECK-LABEL: func @block_words
// CHECK-DAG: %[[SITE:.*]] = arith.constant 0 : i64
// CHECK: memref.store %[[SITE]], %{{.*}}[%{{.*}}] : memref<19xi64>
// CHECK: call @mprt_matmul
func.func @block_words(%a: tensor<8x4xf16>, %b: tensor<2x8xf16>) -> tensor<4x2xf16> {
  %c = tg.matmul %a, %b transpose_lhs transpose_rhs compute(f32) : (tensor<8x4xf16>, tensor<2x8xf16>) -> tensor<4x2xf16>
  return %c : tensor<4x2xf16>
}

// -----

// Training step: the optimizer updates its parameter and momentum buffer in
// place (no allocation for them, no copy at the end); the loss goes to a
// destination argument; the tg.* attributes become mp.*.
// CHECK-LABEL: func @step
// CHECK-SAME: %[[X:[^:]*]]: memref<8x4xf32> {mp.input = "x"}
// CHECK-SAME: %[[W:[^:]*]]: memref<4x3xf32> {mp.param = "w"}
// CHECK-SAME: %[[M:[^:]*]]: memref<4x3xf32> {mp.state = "w.m"}
// CHECK-SAME: %[[LOSS:[^:]*]]: memref<f32> {mp.loss, mp.result = 0 : i64}
// CHECK-SAME: attributes {mp.train_step}
// CHECK: memref.get_global @__tg_constant_0 : memref<f32>
// CHECK: call @mprt_softmax_cross_entropy
// CHECK: extract_aligned_pointer_as_index %[[W]]
// CHECK: extract_aligned_pointer_as_index %[[M]]
// CHECK: extract_aligned_pointer_as_index %[[W]]
// CHECK: extract_aligned_pointer_as_index %[[M]]
// CHECK: call @mprt_sgd_update
// CHECK-NOT: call @mprt_copy
// CHECK: return
// CHECK: memref.global "private" constant @__tg_constant_0 : memref<f32> = dense<1.000000e+00> {alignment = 64 : i64}
func.func @step(%x: tensor<8x4xf32> {tg.input = "x"}, %y: tensor<8xi32> {tg.label = "y"},
                %w: tensor<4x3xf32> {tg.param = "w"}, %m: tensor<4x3xf32> {tg.state = "w.m"})
    -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"}, tensor<4x3xf32> {tg.update = "w.m"})
    attributes {tg.train_step} {
  %logits = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %loss = tg.softmax_cross_entropy %logits, %y : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %d = tg.softmax_cross_entropy_grad %seed, %logits, %y : (tensor<f32>, tensor<8x3xf32>, tensor<8xi32>) -> tensor<8x3xf32>
  %dw = tg.matmul %x, %d transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %w1, %m1 = tg.sgd_update %w, %dw momentum_buffer(%m) {lr = 0.1 : f32, momentum = 0.9 : f32}
      : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  return %loss, %w1, %m1 : tensor<f32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// An SGD update folded into its gradient's GEMM (tg-fuse-epilogues) also
// writes the parameter in place: the fused matmul reads it as its residual
// and writes over it, with no buffer and no copy for the new value.
// CHECK-LABEL: func @fused_update
// CHECK-SAME: %[[X:[^:]*]]: memref<8x4xf32> {mp.input = "x"}
// CHECK-SAME: %[[W:[^:]*]]: memref<4x3xf32> {mp.param = "w"}
// CHECK-NOT: memref.alloc() : memref<4x3xf32>
// CHECK: extract_aligned_pointer_as_index %[[W]]
// CHECK: extract_aligned_pointer_as_index %[[W]]
// CHECK: call @mprt_fused_matmul
// CHECK-NOT: call @mprt_copy
// CHECK: return
func.func @fused_update(%x: tensor<8x4xf32> {tg.input = "x"}, %d: tensor<8x3xf32> {tg.input = "d"},
                        %w: tensor<4x3xf32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"}) attributes {tg.train_step} {
  %l = tg.reduce_sum %d axes = [0, 1] : (tensor<8x3xf32>) -> tensor<f32>
  %w1 = tg.fused_matmul %x, %d transpose_lhs residual(%w) {alpha = -1.250000e-01 : f64}
      : (tensor<8x4xf32>, tensor<8x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %l, %w1 : tensor<f32>, tensor<4x3xf32>
}

// -----

// With its bias gradient too: the update still writes over the weight, the
// bias gradient gets a buffer of its own (not the weight's), and the
// bias's update writes over the bias.
// CHECK-LABEL: func @fused_update_bias_grad
// CHECK-SAME: %[[W:[^:]*]]: memref<4x3xf32> {mp.param = "w"}
// CHECK-SAME: %[[B:[^:]*]]: memref<3xf32> {mp.param = "b"}
// CHECK-NOT: memref.alloc() : memref<4x3xf32>
// CHECK: %[[G:.*]] = memref.alloc() {{.*}}: memref<3xf32>
// CHECK: call @mprt_fused_matmul
// CHECK: call @mprt_sgd_update
// CHECK: memref.dealloc %[[G]]
// CHECK-NOT: call @mprt_copy
// CHECK: return
func.func @fused_update_bias_grad(%x: tensor<8x4xf32> {tg.input = "x"}, %d: tensor<8x3xf32> {tg.input = "d"},
                                  %w: tensor<4x3xf32> {tg.param = "w"}, %b: tensor<3xf32> {tg.param = "b"})
    -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"}, tensor<3xf32> {tg.update = "b"}) attributes {tg.train_step} {
  %l = tg.reduce_sum %d axes = [0, 1] : (tensor<8x3xf32>) -> tensor<f32>
  %w1, %db = tg.fused_matmul %x, %d transpose_lhs residual(%w) bias_grad(rhs) {alpha = -1.250000e-01 : f64}
      : (tensor<8x4xf32>, tensor<8x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
  %b1 = tg.sgd_update %b, %db {lr = 0.125 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %l, %w1, %b1 : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// A parameter still read after its update cannot be updated in place: the
// update writes a fresh buffer, copied into the parameter at the end.
// CHECK-LABEL: func @read_after_update
// CHECK-SAME: %[[W:[^:]*]]: memref<4xf32> {mp.param = "w"}
// CHECK: %[[NEW:.*]] = memref.alloc() : memref<4xf32>
// CHECK: call @mprt_sgd_update
// CHECK: call @mprt_binary
// CHECK: extract_aligned_pointer_as_index %[[NEW]]
// CHECK: extract_aligned_pointer_as_index %[[W]]
// CHECK: call @mprt_copy
// CHECK: memref.dealloc %[[NEW]]
func.func @read_after_update(%w: tensor<4xf32> {tg.param = "w"}, %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xf32> {tg.output = "wg"})
    attributes {tg.train_step} {
  %w1 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %wg = tg.mul %w, %g : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %l = tg.reduce_sum %wg axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l, %w1, %wg : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A reshape that is not returned views its input's buffer: no call, and the
// shared buffer lives until the view's last use, not the input's.
// CHECK-LABEL: func @reshape_view
// CHECK: %[[T:.*]] = memref.alloc() : memref<4x6xf32>
// CHECK: call @mprt_unary
// CHECK-NOT: mprt_copy
// CHECK: %[[V:.*]] = memref.reinterpret_cast %[[T]] to offset: [0], sizes: [2, 12], strides: [12, 1] : memref<4x6xf32> to memref<2x12xf32>
// CHECK-NOT: memref.dealloc
// CHECK: extract_aligned_pointer_as_index %[[V]]
// CHECK: call @mprt_unary
// CHECK-NEXT: }
// CHECK-NEXT: memref.dealloc %[[T]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @reshape_view(%a: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %t = tg.relu %a : tensor<4x6xf32>
  %v = tg.reshape %t : (tensor<4x6xf32>) -> tensor<2x12xf32>
  %r = tg.neg %v : tensor<2x12xf32>
  return %r : tensor<2x12xf32>
}

// -----

// A returned reshape is written into its destination by a copy.
// CHECK-LABEL: func @reshape_returned
// CHECK-SAME: %[[OUT:[^:]*]]: memref<2x12xf32> {mp.result = 0 : i64}
// CHECK-NOT: reinterpret_cast
// CHECK: extract_aligned_pointer_as_index %[[OUT]]
// CHECK: call @mprt_copy
func.func @reshape_returned(%a: tensor<4x6xf32>) -> tensor<2x12xf32> {
  %t = tg.relu %a : tensor<4x6xf32>
  %v = tg.reshape %t : (tensor<4x6xf32>) -> tensor<2x12xf32>
  return %v : tensor<2x12xf32>
}

// -----

// A view of a parameter counts as the parameter: read after the update, it
// keeps the update out of the parameter's buffer until the end.
// CHECK-LABEL: func @view_read_after_update
// CHECK-SAME: %[[W:[^:]*]]: memref<4xf32> {mp.param = "w"}
// CHECK: %[[V:.*]] = memref.reinterpret_cast %[[W]]
// CHECK: %[[NEW:.*]] = memref.alloc() : memref<4xf32>
// CHECK: call @mprt_sgd_update
// CHECK: extract_aligned_pointer_as_index %[[V]]
// CHECK: call @mprt_binary
// CHECK: extract_aligned_pointer_as_index %[[NEW]]
// CHECK: extract_aligned_pointer_as_index %[[W]]
// CHECK: call @mprt_copy
func.func @view_read_after_update(%w: tensor<4xf32> {tg.param = "w"}, %g: tensor<2x2xf32> {tg.input = "g"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<2x2xf32> {tg.output = "wg"})
    attributes {tg.train_step} {
  %v = tg.reshape %w : (tensor<4xf32>) -> tensor<2x2xf32>
  %gf = tg.reshape %g : (tensor<2x2xf32>) -> tensor<4xf32>
  %w1 = tg.sgd_update %w, %gf {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %wg = tg.mul %v, %g : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %l = tg.reduce_sum %wg axes = [0, 1] : (tensor<2x2xf32>) -> tensor<f32>
  return %l, %w1, %wg : tensor<f32>, tensor<4xf32>, tensor<2x2xf32>
}

// -----

// Variadic ops: every tensor goes into one block.
// CHECK-LABEL: func @variadic
// CHECK: memref.alloca() : memref<{{[0-9]+}}xi64>
// CHECK: call @mprt_concat
func.func @variadic(%a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %c: tensor<2x1xf32>) -> tensor<2x9xf32> {
  %r = tg.concat %a, %b, %c axis = 1 : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<2x1xf32>) -> tensor<2x9xf32>
  return %r : tensor<2x9xf32>
}
