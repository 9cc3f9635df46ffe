// RUN: mp-opt %s --split-input-file --tg-data-parallel | FileCheck %s
// RUN: mp-opt %s --split-input-file --tg-data-parallel=bucket-mb=0 | FileCheck %s --check-prefix=EACH
// A cap of 52 bytes: the 48-byte weight gradient fills a bucket, the
// 12-byte bias gradient starts the next.
// RUN: mp-opt %s --split-input-file --tg-data-parallel=bucket-mb=0.00005 | FileCheck %s --check-prefix=CAP
// Under mixed precision the buckets travel in the low type (all_reduce is
// on the allow list), or in f32 when a policy denies it.
// RUN: mp-opt %s --split-input-file --tg-data-parallel --tg-mixed-precision="compute-type=f16 loss-scaling=dynamic" | FileCheck %s --check-prefix=AMP
// RUN: mp-opt %s --split-input-file --tg-data-parallel --tg-mixed-precision="compute-type=bf16 add-deny=tg.all_reduce" | FileCheck %s --check-prefix=DENY
// On a step already loss-scaled, the scaled gradients are reduced before
// the overflow check.
// RUN: mp-opt %s --split-input-file --tg-insert-loss-scaling=mode=dynamic --tg-data-parallel | FileCheck %s --check-prefix=SCALED
// The pass runs once: a second run changes nothing (with a remark).
// RUN: mp-opt %s --split-input-file --tg-data-parallel > %t.once.mlir
// RUN: mp-opt %t.once.mlir --split-input-file --tg-data-parallel 2>&1 >/dev/null | FileCheck %s --check-prefix=TWICE
// RUN: mp-opt %t.once.mlir --split-input-file --tg-data-parallel 2>/dev/null | diff - %t.once.mlir
// Canonicalisation and CSE keep every all-reduce, also one whose results
// are unused: each rank must issue the same collectives.
// RUN: mp-opt %s --split-input-file --tg-data-parallel --canonicalize --cse | FileCheck %s --check-prefix=KEPT

// Two gradients produced before either update: one bucket, right after
// the last of them; the updates read its results. The loss is not reduced
// (the runner averages what it reports).
// CHECK-LABEL: func @mlp
// CHECK: %[[DW:.*]] = tg.matmul %{{.*}}, %{{.*}} transpose_lhs
// CHECK-NEXT: %[[DB:.*]] = tg.reduce_sum
// CHECK-NEXT: %[[R:.*]]:2 = tg.all_reduce mean %[[DW]], %[[DB]] : (tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
// CHECK: tg.sgd_update %{{.*}}, %[[R]]#0
// CHECK: tg.sgd_update %{{.*}}, %[[R]]#1
// CHECK-NOT: tg.all_reduce
// CHECK: return

// bucket-mb=0: one all-reduce per gradient.
// EACH-LABEL: func @mlp
// EACH: tg.all_reduce mean %{{.*}} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// EACH: tg.all_reduce mean %{{.*}} : (tensor<3xf32>) -> tensor<3xf32>

// CAP-LABEL: func @mlp
// CAP: tg.all_reduce mean %{{.*}} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CAP-NEXT: tg.reduce_sum
// CAP-NEXT: tg.all_reduce mean %{{.*}} : (tensor<3xf32>) -> tensor<3xf32>

// AMP-LABEL: func @mlp
// AMP: %[[R:.*]]:2 = tg.all_reduce mean %{{.*}}, %{{.*}} compute(f32) : (tensor<4x3xf16>, tensor<3xf16>) -> (tensor<4x3xf16>, tensor<3xf16>)
// AMP-DAG: %[[W:.*]] = tg.cast %[[R]]#0 : tensor<4x3xf16> to tensor<4x3xf32>
// AMP-DAG: %[[B:.*]] = tg.cast %[[R]]#1 : tensor<3xf16> to tensor<3xf32>
// AMP: tg.unscale_grads %[[W]], %[[B]] by

// DENY-LABEL: func @mlp
// DENY: tg.all_reduce mean %{{.*}}, %{{.*}} : (tensor<4x3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)

// SCALED-LABEL: func @mlp
// SCALED: %[[R:.*]]:2 = tg.all_reduce mean
// SCALED: tg.unscale_grads %[[R]]#0, %[[R]]#1 by

// TWICE: remark: tg-data-parallel: step already reduces its gradients

// KEPT-LABEL: func @mlp
// KEPT: tg.all_reduce mean
func.func @mlp(%w: tensor<4x3xf32> {tg.param = "w"}, %b: tensor<3xf32> {tg.param = "b"},
               %x: tensor<8x4xf32> {tg.input = "x"}, %y: tensor<8xi32> {tg.label = "y"})
    -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"}, tensor<3xf32> {tg.update = "b"})
    attributes {tg.train_step} {
  %mm = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %logits = tg.add %mm, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %loss = tg.softmax_cross_entropy %logits, %y : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %dl = tg.softmax_cross_entropy_grad %seed, %logits, %y : (tensor<f32>, tensor<8x3xf32>, tensor<8xi32>) -> tensor<8x3xf32>
  %dw = tg.matmul %x, %dl transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %db = tg.reduce_sum %dl axes = [0] : (tensor<8x3xf32>) -> tensor<3xf32>
  %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %b1 = tg.sgd_update %b, %db {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %w1, %b1 : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// An update that runs before the next gradient exists closes the bucket:
// every gradient of a bucket is produced before any of its updates.
// CHECK-LABEL: func @interleaved
// CHECK: %[[DW:.*]] = tg.matmul %{{.*}}, %{{.*}} transpose_lhs
// CHECK-NEXT: %[[RW:.*]] = tg.all_reduce mean %[[DW]] : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: tg.sgd_update %{{.*}}, %[[RW]]
// CHECK-NEXT: %[[DB:.*]] = tg.reduce_sum
// CHECK-NEXT: %[[RB:.*]] = tg.all_reduce mean %[[DB]] : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT: tg.sgd_update %{{.*}}, %[[RB]]
// One gradient read by two updates is reduced once.
// CHECK-LABEL: func @shared_gradient
// CHECK: %[[R:.*]] = tg.all_reduce mean %{{.*}} : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NOT: tg.all_reduce
// CHECK: tg.sgd_update %{{.*}}, %[[R]]
// CHECK: tg.sgd_update %{{.*}}, %[[R]]
func.func @interleaved(%w: tensor<4x3xf32> {tg.param = "w"}, %b: tensor<3xf32> {tg.param = "b"},
                       %x: tensor<8x4xf32> {tg.input = "x"}, %y: tensor<8xi32> {tg.label = "y"})
    -> (tensor<f32> {tg.loss}, tensor<4x3xf32> {tg.update = "w"}, tensor<3xf32> {tg.update = "b"})
    attributes {tg.train_step} {
  %mm = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %logits = tg.add %mm, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %loss = tg.softmax_cross_entropy %logits, %y : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %dl = tg.softmax_cross_entropy_grad %seed, %logits, %y : (tensor<f32>, tensor<8x3xf32>, tensor<8xi32>) -> tensor<8x3xf32>
  %dw = tg.matmul %x, %dl transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %db = tg.reduce_sum %dl axes = [0] : (tensor<8x3xf32>) -> tensor<3xf32>
  %b1 = tg.sgd_update %b, %db {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %w1, %b1 : tensor<f32>, tensor<4x3xf32>, tensor<3xf32>
}

func.func @shared_gradient(%a: tensor<3xf32> {tg.param = "a"}, %b: tensor<3xf32> {tg.param = "b"},
                           %x: tensor<3xf32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<3xf32> {tg.update = "a"}, tensor<3xf32> {tg.update = "b"})
    attributes {tg.train_step} {
  %s = tg.add %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %p = tg.mul %s, %x : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %loss = tg.reduce_sum %p axes = [0] : (tensor<3xf32>) -> tensor<f32>
  %one = tg.constant dense<1.0> : tensor<f32>
  %seed = tg.seed %one : tensor<f32>
  %g = tg.mul %x, %seed : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  %a1 = tg.sgd_update %a, %g {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b1 = tg.sgd_update %b, %g {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %loss, %a1, %b1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Gradients that are arguments are available from the start: their
// buckets open the function, in order, one per element type.
// CHECK-LABEL: func @argument_gradients
// CHECK-NEXT: %[[A:.*]] = tg.all_reduce mean %arg2 : (tensor<3xf32>) -> tensor<3xf32>
// CHECK-NEXT: %[[B:.*]] = tg.all_reduce mean %arg3 : (tensor<3xf16>) -> tensor<3xf16>
// CHECK: tg.sgd_update %arg0, %[[A]]
// CHECK: tg.sgd_update %arg1, %[[B]]
func.func @argument_gradients(%a: tensor<3xf32> {tg.param = "a"}, %b: tensor<3xf32> {tg.param = "b"},
                              %ga: tensor<3xf32> {tg.input = "ga"}, %gb: tensor<3xf16> {tg.input = "gb"})
    -> (tensor<f32> {tg.loss}, tensor<3xf32> {tg.update = "a"}, tensor<3xf32> {tg.update = "b"})
    attributes {tg.train_step} {
  %sum = tg.reduce_sum %a axes = [0] : (tensor<3xf32>) -> tensor<f32>
  // A seed, so that the loss-scaling runs above take this step too.
  %one = tg.constant dense<1.0> : tensor<f32>
  %seed = tg.seed %one : tensor<f32>
  %loss = tg.mul %sum, %seed : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %a1 = tg.sgd_update %a, %ga {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %b1 = tg.sgd_update %b, %gb {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf16>) -> tensor<3xf32>
  return %loss, %a1, %b1 : tensor<f32>, tensor<3xf32>, tensor<3xf32>
}

// -----

// Not a step: the pass leaves it alone, and canonicalisation keeps an
// all-reduce whose results nobody reads.
// KEPT-LABEL: func @unused
// KEPT: tg.all_reduce sum %{{.*}} : (tensor<3xf32>) -> tensor<3xf32>
func.func @unused(%x: tensor<3xf32>) {
  %r = tg.all_reduce sum %x : (tensor<3xf32>) -> tensor<3xf32>
  return
}
