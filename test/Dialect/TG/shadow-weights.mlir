// RUN: mp-opt %s --split-input-file --tg-shadow-weights --verify-each | FileCheck %s
// A second run finds nothing more to shadow.
// RUN: mp-opt %s --split-input-file --tg-shadow-weights > %t.once.mlir
// RUN: mp-opt %t.once.mlir --split-input-file --tg-shadow-weights | diff - %t.once.mlir
// The lowering writes each shadow inside its update: no copy entry is left.
// RUN: mp-opt %s --split-input-file --tg-shadow-weights --convert-tg-to-runtime | FileCheck %s --check-prefix=LOWERED

// A weight cast to bf16 (twice) and updated by SGD with momentum: one
// shadow argument, read where the casts were, and the cast of the new
// weight returned as its update. The bias, never cast, keeps no shadow.
// CHECK-LABEL: func @sgd
// CHECK-SAME: %[[W:[^:]*]]: tensor<4x3xf32> {tg.param = "w"}
// CHECK-SAME: %[[S:[^:]*]]: tensor<4x3xbf16> {tg.shadow_of = "w", tg.state = "amp.shadow.w"}
// CHECK-SAME: tensor<4x3xbf16> {tg.update = "amp.shadow.w"}
// CHECK-NOT: tg.cast %[[W]]
// CHECK: tg.matmul %{{.*}}, %[[S]]
// CHECK: tg.matmul %{{.*}}, %[[S]] transpose_rhs
// CHECK: %[[W1:.*]], %{{.*}} = tg.sgd_update %[[W]]
// CHECK-NEXT: %[[S1:.*]] = tg.cast %[[W1]] : tensor<4x3xf32> to tensor<4x3xbf16>
// CHECK: return {{.*}}, %[[S1]] :
// LOWERED-LABEL: func @sgd
// LOWERED: call @mprt_sgd_update
// LOWERED-NOT: call @mprt_copy
// LOWERED: return
func.func @sgd(%x: tensor<8x4xbf16> {tg.input = "x"}, %dy: tensor<8x3xbf16> {tg.input = "dy"},
               %w: tensor<4x3xf32> {tg.param = "w"}, %b: tensor<3xf32> {tg.param = "b"},
               %m: tensor<4x3xf32> {tg.state = "w.m"})
    -> (tensor<f32> {tg.loss}, tensor<8x4xbf16> {tg.output = "dx"}, tensor<4x3xf32> {tg.update = "w"},
        tensor<3xf32> {tg.update = "b"}, tensor<4x3xf32> {tg.update = "w.m"})
    attributes {tg.train_step} {
  %wb = tg.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
  %y = tg.matmul %x, %wb : (tensor<8x4xbf16>, tensor<4x3xbf16>) -> tensor<8x3xbf16>
  %yf = tg.cast %y : tensor<8x3xbf16> to tensor<8x3xf32>
  %z = tg.add %yf, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %loss = tg.reduce_sum %z axes = [0, 1] : (tensor<8x3xf32>) -> tensor<f32>
  %wb2 = tg.cast %w : tensor<4x3xf32> to tensor<4x3xbf16>
  %dx = tg.matmul %dy, %wb2 transpose_rhs : (tensor<8x3xbf16>, tensor<4x3xbf16>) -> tensor<8x4xbf16>
  %dw = tg.matmul %x, %dy transpose_lhs compute(f32) : (tensor<8x4xbf16>, tensor<8x3xbf16>) -> tensor<4x3xf32>
  %db = tg.reduce_sum %yf axes = [0] : (tensor<8x3xf32>) -> tensor<3xf32>
  %w1, %m1 = tg.sgd_update %w, %dw momentum_buffer(%m) {lr = 0.1 : f32, momentum = 0.9 : f32}
      : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  %b1 = tg.sgd_update %b, %db {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %dx, %w1, %b1, %m1 : tensor<f32>, tensor<8x4xbf16>, tensor<4x3xf32>, tensor<3xf32>, tensor<4x3xf32>
}

// -----

// Adam, f16, and a skip predicate: the cast follows the update all the
// same (a skipped update returns the weight, whose cast is the shadow).
// CHECK-LABEL: func @adam
// CHECK-SAME: tensor<6xf16> {tg.shadow_of = "w", tg.state = "amp.shadow.w"}
// CHECK: %[[W1:[^,]*]], %{{.*}}, %{{.*}}, %{{.*}} = tg.adam_update
// CHECK-NEXT: tg.cast %[[W1]] : tensor<6xf32> to tensor<6xf16>
// LOWERED-LABEL: func @adam
// LOWERED: call @mprt_adam_update
// LOWERED-NOT: call @mprt_copy
// LOWERED: return
func.func @adam(%w: tensor<6xf32> {tg.param = "w"}, %g: tensor<6xf32> {tg.input = "g"},
                %m: tensor<6xf32> {tg.state = "m"}, %v: tensor<6xf32> {tg.state = "v"},
                %t: tensor<i64> {tg.state = "t"}, %skip: tensor<i1> {tg.input = "skip"})
    -> (tensor<f32> {tg.loss}, tensor<6xf32> {tg.update = "w"}, tensor<6xf32> {tg.update = "m"},
        tensor<6xf32> {tg.update = "v"}, tensor<i64> {tg.update = "t"})
    attributes {tg.train_step} {
  %wh = tg.cast %w : tensor<6xf32> to tensor<6xf16>
  %p = tg.mul %wh, %wh : (tensor<6xf16>, tensor<6xf16>) -> tensor<6xf16>
  %pf = tg.cast %p : tensor<6xf16> to tensor<6xf32>
  %loss = tg.reduce_sum %pf axes = [0] : (tensor<6xf32>) -> tensor<f32>
  %w1, %m1, %v1, %t1 = tg.adam_update %w, %g, %m, %v, %t skip_if(%skip) {lr = 1.0e-03 : f32}
      : (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<i64>, tensor<i1>)
      -> (tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<i64>)
  return %loss, %w1, %m1, %v1, %t1 : tensor<f32>, tensor<6xf32>, tensor<6xf32>, tensor<6xf32>, tensor<i64>
}

// -----

// Left alone: a weight cast to two types, and one whose update is not what
// the step returns for it (a forward function has no updates at all).
// CHECK-LABEL: func @left_alone
// CHECK-NOT: amp.shadow
// CHECK: tg.cast %arg0 : tensor<4xf32> to tensor<4xbf16>
// CHECK: tg.cast %arg0 : tensor<4xf32> to tensor<4xf16>
// CHECK: tg.cast %arg1 : tensor<4xf32> to tensor<4xbf16>
func.func @left_alone(%a: tensor<4xf32> {tg.param = "a"}, %c: tensor<4xf32> {tg.param = "c"},
                      %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "a"}, tensor<4xf32> {tg.update = "c"})
    attributes {tg.train_step} {
  %ab = tg.cast %a : tensor<4xf32> to tensor<4xbf16>
  %ah = tg.cast %a : tensor<4xf32> to tensor<4xf16>
  %cb = tg.cast %c : tensor<4xf32> to tensor<4xbf16>
  %x = tg.cast %ab : tensor<4xbf16> to tensor<4xf32>
  %y = tg.cast %ah : tensor<4xf16> to tensor<4xf32>
  %z = tg.cast %cb : tensor<4xbf16> to tensor<4xf32>
  %s = tg.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %s2 = tg.add %s, %z : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %loss = tg.reduce_sum %s2 axes = [0] : (tensor<4xf32>) -> tensor<f32>
  %a1 = tg.sgd_update %a, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c1 = tg.sgd_update %c, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %loss, %a1, %a1 : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// The weight read again after its update (here through its cast): the
// shadow is still read there, so the update writes the new shadow into a
// buffer of its own, copied into the shadow at the end of the step.
// CHECK-LABEL: func @read_after_update
// CHECK: tg.sgd_update
// CHECK-NEXT: tg.cast
// CHECK-NEXT: tg.mul %arg2, %arg2
// LOWERED-LABEL: func @read_after_update
// LOWERED: %[[NEW:.*]] = memref.alloc() : memref<4xbf16>
// LOWERED: call @mprt_sgd_update
// LOWERED: call @mprt_binary
// LOWERED: extract_aligned_pointer_as_index %[[NEW]]
// LOWERED: call @mprt_copy
// LOWERED: memref.dealloc %[[NEW]]
func.func @read_after_update(%w: tensor<4xf32> {tg.param = "w"}, %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xbf16> {tg.output = "sq"})
    attributes {tg.train_step} {
  %l = tg.reduce_sum %g axes = [0] : (tensor<4xf32>) -> tensor<f32>
  %w1 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %wb = tg.cast %w : tensor<4xf32> to tensor<4xbf16>
  %sq = tg.mul %wb, %wb : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  return %l, %w1, %sq : tensor<f32>, tensor<4xf32>, tensor<4xbf16>
}

