// RUN: mp-opt %s --tg-shadow-weights --verify-each | FileCheck %s

// A step that is called keeps its signature: no shadow is added.
// CHECK-LABEL: func @called
// CHECK-NOT: amp.shadow
// CHECK: tg.cast %arg0
func.func @called(%w: tensor<4xf32> {tg.param = "w"}, %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"})
    attributes {tg.train_step} {
  %wb = tg.cast %w : tensor<4xf32> to tensor<4xbf16>
  %wf = tg.cast %wb : tensor<4xbf16> to tensor<4xf32>
  %l = tg.reduce_sum %wf axes = [0] : (tensor<4xf32>) -> tensor<f32>
  %w1 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %l, %w1 : tensor<f32>, tensor<4xf32>
}
func.func @caller(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<f32> {
  %l, %w1 = func.call @called(%w, %g) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return %l : tensor<f32>
}
