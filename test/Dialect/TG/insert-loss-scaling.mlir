// RUN: mp-opt %s --split-input-file --tg-insert-loss-scaling=mode=dynamic | FileCheck %s --check-prefix=DYN
// RUN: mp-opt %s --split-input-file --tg-insert-loss-scaling="mode=static init-scale=1024" | FileCheck %s --check-prefix=STATIC
// RUN: mp-opt %s --split-input-file --tg-insert-loss-scaling=mode=none | FileCheck %s --check-prefix=NONE
// The default mode (auto) scales only steps that store f16 values.
// RUN: mp-opt %s --split-input-file --tg-insert-loss-scaling | FileCheck %s --check-prefix=AUTO
// A step is scaled once: running the pass again changes nothing.
// RUN: mp-opt %s --split-input-file --tg-insert-loss-scaling=mode=dynamic > %t.once.mlir
// RUN: mp-opt %t.once.mlir --split-input-file --tg-insert-loss-scaling=mode=dynamic 2>/dev/null > %t.twice.mlir
// RUN: diff %t.once.mlir %t.twice.mlir

// SGD: the seed is scaled, the gradients are unscaled and checked together,
// every update is skipped on overflow, and the scale and good-step counter
// are state with initial values, updated on the device.
// DYN-LABEL: func @sgd
// DYN-SAME: %[[S:[^:]*]]: tensor<f32> {tg.init = dense<6.553600e+04> : tensor<f32>, tg.state = "amp.loss_scale"}
// DYN-SAME: %[[N:[^:]*]]: tensor<i64> {tg.init = dense<0> : tensor<i64>, tg.state = "amp.good_steps"}
// DYN-SAME: tensor<f32> {tg.update = "amp.loss_scale"}, tensor<i64> {tg.update = "amp.good_steps"}, tensor<i1> {tg.output = "amp.found_inf"})
// DYN: %[[SEED:.*]] = tg.constant dense<1.000000e+00>
// DYN: %[[SCALED:.*]] = tg.apply_loss_scale %[[SEED]], %[[S]]
// DYN: tg.softmax_cross_entropy_grad %[[SCALED]],
// DYN: %[[U:.*]]:2, %[[INF:.*]] = tg.unscale_grads %[[DW:.*]], %[[DB:.*]] by %[[S]]
// DYN: tg.sgd_update %{{.*}}, %[[U]]#0 skip_if(%[[INF]]) {lr = 1.000000e-01 : f32}
// DYN: tg.sgd_update %{{.*}}, %[[U]]#1 skip_if(%[[INF]]) {lr = 1.000000e-01 : f32}
// DYN: %[[S1:.*]], %[[N1:.*]] = tg.update_loss_scale %[[S]], %[[N]], %[[INF]] :
// DYN: return %{{.*}}, %{{.*}}, %{{.*}}, %[[S1]], %[[N1]], %[[INF]] :

// A static scale is a constant; there is no state and no update.
// STATIC-LABEL: func @sgd
// STATIC-NOT: amp.loss_scale"}
// STATIC: %[[S:.*]] = tg.constant dense<1.024000e+03> : tensor<f32>
// STATIC: tg.apply_loss_scale %{{.*}}, %[[S]]
// STATIC: tg.unscale_grads {{.*}} by %[[S]]
// STATIC-NOT: tg.update_loss_scale
// STATIC: return {{.*}}, %[[INF:.*]] :
// STATIC-SAME: tensor<i1>

// NONE-LABEL: func @sgd
// NONE-NOT: tg.apply_loss_scale
// NONE-NOT: tg.unscale_grads

// AUTO-LABEL: func @sgd
// AUTO-NOT: tg.unscale_grads
func.func @sgd(%w: tensor<4x3xf32> {tg.param = "w"}, %b: tensor<3xf32> {tg.param = "b"},
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

// -----

// SGD with momentum, in an f16 step (so auto mode scales it): the momentum
// buffer update is skipped with the parameter.
// DYN-LABEL: func @momentum
// DYN: %[[U:.*]], %[[INF:.*]] = tg.unscale_grads
// DYN: tg.sgd_update %{{.*}}, %[[U]] momentum_buffer(%{{.*}}) skip_if(%[[INF]])
// AUTO-LABEL: func @momentum
// AUTO: tg.apply_loss_scale
// AUTO: tg.unscale_grads
// AUTO: tg.update_loss_scale
func.func @momentum(%w: tensor<4x4xf32> {tg.param = "w"}, %m: tensor<4x4xf32> {tg.state = "w.momentum"},
                    %x: tensor<4x4xf16> {tg.input = "x"}, %t: tensor<4x4xf32> {tg.label = "t"})
    -> (tensor<f32> {tg.loss}, tensor<4x4xf32> {tg.update = "w"}, tensor<4x4xf32> {tg.update = "w.momentum"})
    attributes {tg.train_step} {
  %wh = tg.cast %w : tensor<4x4xf32> to tensor<4x4xf16>
  %p = tg.matmul %x, %wh compute(f32) : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf32>
  %loss = tg.mse_loss %p, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %dp = tg.mse_loss_grad %seed, %p, %t : (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf16>
  %dw = tg.matmul %x, %dp transpose_lhs compute(f32) : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf32>
  %w1, %m1 = tg.sgd_update %w, %dw momentum_buffer(%m) {lr = 0.1 : f32, momentum = 0.9 : f32}
      : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  return %loss, %w1, %m1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>
}

// -----

// Adam: the step counter is state skipped along with the moments. The
// updates move after the unscale, which follows the last gradient.
// DYN-LABEL: func @adam
// DYN: %[[DW:.*]] = tg.matmul {{.*}} transpose_lhs
// DYN: %[[U:.*]], %[[INF:.*]] = tg.unscale_grads %[[DW]] by
// DYN-NEXT: tg.adam_update %{{.*}}, %[[U]], %{{.*}}, %{{.*}}, %{{.*}} skip_if(%[[INF]])
// DYN-NEXT: tg.update_loss_scale
func.func @adam(%w: tensor<4x4xf32> {tg.param = "w"}, %m: tensor<4x4xf32> {tg.state = "m"},
                %v: tensor<4x4xf32> {tg.state = "v"}, %n: tensor<i64> {tg.state = "n"},
                %x: tensor<4x4xf32> {tg.input = "x"}, %t: tensor<4x4xf32> {tg.label = "t"})
    -> (tensor<f32> {tg.loss}, tensor<4x4xf32> {tg.update = "w"}, tensor<4x4xf32> {tg.update = "m"},
        tensor<4x4xf32> {tg.update = "v"}, tensor<i64> {tg.update = "n"})
    attributes {tg.train_step} {
  %p = tg.matmul %x, %w : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %loss = tg.mse_loss %p, %t : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %dp = tg.mse_loss_grad %seed, %p, %t : (tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %dw = tg.matmul %x, %dp transpose_lhs : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %w1, %m1, %v1, %n1 = tg.adam_update %w, %dw, %m, %v, %n {lr = 1.0e-3 : f32}
      : (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<i64>)
      -> (tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<i64>)
  return %loss, %w1, %m1, %v1, %n1 : tensor<f32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<i64>
}

// -----

// Functions that are not training steps are left alone.
// DYN-LABEL: func @not_a_step
// DYN-NOT: tg.apply_loss_scale
func.func @not_a_step(%seed: tensor<f32>, %l: tensor<4x3xf32>, %y: tensor<4xi32>) -> tensor<4x3xf32> {
  %0 = tg.softmax_cross_entropy_grad %seed, %l, %y : (tensor<f32>, tensor<4x3xf32>, tensor<4xi32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
