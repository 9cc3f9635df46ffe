// RUN: mp-opt %s --tg-make-train-step="optimizer=none" | FileCheck %s

// tg-make-train-step: the adjoint of a split is the concat of the parts'
// adjoints, no slice gradient and no add left.
// CHECK-LABEL: func @split
// CHECK-NOT: tg.slice_grad
// CHECK-NOT: tg.add
// CHECK: tg.concat %{{.*}}, %{{.*}} axis = 1 : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
// CHECK-NOT: tg.slice_grad
// CHECK-NOT: tg.add
// CHECK: return
func.func @split(%x: tensor<4x4xf32> {tg.param = "x"})
    -> (tensor<f32> {tg.loss}) attributes {tg.forward} {
  %a = tg.slice %x offsets = [0, 0] sizes = [4, 2]
      : (tensor<4x4xf32>) -> tensor<4x2xf32>
  %b = tg.slice %x offsets = [0, 2] sizes = [4, 2]
      : (tensor<4x4xf32>) -> tensor<4x2xf32>
  %sa = tg.square %a : tensor<4x2xf32>
  %t = tg.tanh %b : tensor<4x2xf32>
  %m = tg.mul %sa, %t : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x2xf32>
  %l = tg.reduce_sum %m axes = [0, 1] : (tensor<4x2xf32>) -> tensor<f32>
  return %l : tensor<f32>
}

// A split in three (attention's Q, K and V): the concat leaves none of the
// adds or slice gradients it replaced behind.
// CHECK-LABEL: func @split3
// CHECK-NOT: tg.slice_grad
// CHECK-NOT: tg.add
// CHECK: tg.concat %{{.*}}, %{{.*}}, %{{.*}} axis = 0 : (tensor<1x4xf32>, tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<3x4xf32>
// CHECK-NOT: tg.slice_grad
// CHECK-NOT: tg.add
// CHECK: return
func.func @split3(%x: tensor<3x4xf32> {tg.param = "x"})
    -> (tensor<f32> {tg.loss}) attributes {tg.forward} {
  %q = tg.slice %x offsets = [0, 0] sizes = [1, 4]
      : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %k = tg.slice %x offsets = [1, 0] sizes = [1, 4]
      : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %v = tg.slice %x offsets = [2, 0] sizes = [1, 4]
      : (tensor<3x4xf32>) -> tensor<1x4xf32>
  %qk = tg.mul %q, %k : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %t = tg.tanh %v : tensor<1x4xf32>
  %m = tg.mul %qk, %t : (tensor<1x4xf32>, tensor<1x4xf32>) -> tensor<1x4xf32>
  %l = tg.reduce_sum %m axes = [0, 1] : (tensor<1x4xf32>) -> tensor<f32>
  return %l : tensor<f32>
}
