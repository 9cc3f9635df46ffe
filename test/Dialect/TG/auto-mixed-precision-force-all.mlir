// RUN: mp-opt %s --tg-auto-mixed-precision="level=force-all compute-type=bf16" | FileCheck %s

// Even with every op forced to low precision, results that are not data
// keep their types: updated parameters and optimizer state stay f32 master
// weights, and layer norm's saved statistics keep their storage.
// CHECK-LABEL: func @step
// CHECK: tg.layer_norm {{.*}} : (tensor<4x8xbf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: tg.sgd_update %{{.*}}, %{{.*}} momentum_buffer(%{{.*}}) compute(f32) {{.*}} : (tensor<8x8xf32>, tensor<8x8xbf16>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
// CHECK: tg.adam_update {{.*}} : (tensor<8xf32>, tensor<8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<i64>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>)
// CHECK: tg.update_loss_scale {{.*}} -> (tensor<f32>, tensor<i64>)
func.func @step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %b: tensor<8x8xf32>, %g: tensor<8xf32>,
                %m: tensor<8xf32>, %t: tensor<i64>, %s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>)
    -> (tensor<4x8xf32>, tensor<4xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<8xf32>, tensor<i64>, tensor<f32>, tensor<i64>) {
  %y, %mean, %rstd = tg.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05
      : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  %dw = tg.matmul %y, %y transpose_lhs : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
  %w1, %b1 = tg.sgd_update %w, %dw momentum_buffer(%b) {lr = 0.1 : f32, momentum = 0.9 : f32}
      : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>)
  %dg = tg.reduce_sum %dw axes = [0] : (tensor<8x8xf32>) -> tensor<8xf32>
  %g1, %m1, %v1, %t1 = tg.adam_update %g, %dg, %m, %m, %t {lr = 1.0e-3 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>)
  %s1, %n1 = tg.update_loss_scale %s, %n, %p : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return %y, %mean, %w1, %b1, %g1, %m1, %v1, %t1, %s1, %n1
      : tensor<4x8xf32>, tensor<4xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8xf32>, tensor<8xf32>,
        tensor<8xf32>, tensor<i64>, tensor<f32>, tensor<i64>
}
