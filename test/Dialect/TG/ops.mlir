// RUN: mp-opt %s --split-input-file --verify-roundtrip | FileCheck %s
// RUN: mp-opt %s --split-input-file --mlir-print-op-generic | mp-opt --split-input-file | FileCheck %s

// Round trips of every tg op in its custom form and through the generic form.

// CHECK-LABEL: func @matmul
func.func @matmul(%a: tensor<4x8xf16>, %b: tensor<8x16xf16>,
                  %x: tensor<2x3x8x4xbf16>, %w: tensor<16x4xbf16>,
                  %c: tensor<5x1x8x4xf32>, %d: tensor<3x8x6xf32>)
    -> (tensor<4x16xf16>, tensor<2x3x8x16xbf16>, tensor<5x3x4x6xf32>) {
  // CHECK: tg.matmul %{{.*}}, %{{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  %0 = tg.matmul %a, %b compute(f32) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf16>
  // The result may be stored in another type than the operands (f32 logits).
  // CHECK: tg.matmul %{{.*}}, %{{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf32>
  %f = tg.matmul %a, %b compute(f32) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf32>
  // CHECK: tg.matmul %{{.*}}, %{{.*}} transpose_rhs : (tensor<2x3x8x4xbf16>, tensor<16x4xbf16>) -> tensor<2x3x8x16xbf16>
  %1 = tg.matmul %x, %w transpose_rhs : (tensor<2x3x8x4xbf16>, tensor<16x4xbf16>) -> tensor<2x3x8x16xbf16>
  // Batch dimensions broadcast: [5, 1] with [3] gives [5, 3].
  // CHECK: tg.matmul %{{.*}}, %{{.*}} transpose_lhs : (tensor<5x1x8x4xf32>, tensor<3x8x6xf32>) -> tensor<5x3x4x6xf32>
  %2 = tg.matmul %c, %d transpose_lhs : (tensor<5x1x8x4xf32>, tensor<3x8x6xf32>) -> tensor<5x3x4x6xf32>
  return %0, %1, %2 : tensor<4x16xf16>, tensor<2x3x8x16xbf16>, tensor<5x3x4x6xf32>
}

// -----

// CHECK-LABEL: func @binary
func.func @binary(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %s: tensor<f32>,
                  %h: tensor<4x1xf16>, %k: tensor<1x8xf16>) -> tensor<4x8xf16> {
  // CHECK: tg.add %{{.*}}, %{{.*}} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %0 = tg.add %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: tg.sub {{.*}} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = tg.sub %0, %s : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  // CHECK: tg.mul {{.*}} : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = tg.mul %b, %1 : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: tg.div {{.*}} compute(f32) : (tensor<4x1xf16>, tensor<1x8xf16>) -> tensor<4x8xf16>
  %3 = tg.div %h, %k compute(f32) : (tensor<4x1xf16>, tensor<1x8xf16>) -> tensor<4x8xf16>
  // CHECK: tg.maximum
  %4 = tg.maximum %3, %k : (tensor<4x8xf16>, tensor<1x8xf16>) -> tensor<4x8xf16>
  // CHECK: tg.minimum
  %5 = tg.minimum %4, %h : (tensor<4x8xf16>, tensor<4x1xf16>) -> tensor<4x8xf16>
  return %5 : tensor<4x8xf16>
}

// -----

// CHECK-LABEL: func @unary
func.func @unary(%x: tensor<2x3xbf16>) -> tensor<2x3xbf16> {
  // CHECK: tg.neg %{{.*}} : tensor<2x3xbf16>
  %0 = tg.neg %x : tensor<2x3xbf16>
  // CHECK: tg.relu
  %1 = tg.relu %0 : tensor<2x3xbf16>
  // CHECK: tg.gelu %{{.*}} compute(f32) : tensor<2x3xbf16>
  %2 = tg.gelu %1 compute(f32) : tensor<2x3xbf16>
  // CHECK: tg.gelu %{{.*}} tanh_approx : tensor<2x3xbf16>
  %3 = tg.gelu %2 tanh_approx : tensor<2x3xbf16>
  // CHECK: tg.tanh
  %4 = tg.tanh %3 : tensor<2x3xbf16>
  // CHECK: tg.sigmoid
  %5 = tg.sigmoid %4 : tensor<2x3xbf16>
  // Deny-list unary ops may write another storage type than they read.
  // CHECK: tg.exp %{{.*}} compute(f32) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  %e = tg.exp %5 compute(f32) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  // CHECK: tg.log %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %7 = tg.log %e : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  // CHECK: tg.sqrt
  %8 = tg.sqrt %7 : tensor<2x3xbf16>
  // CHECK: tg.rsqrt
  %9 = tg.rsqrt %8 : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  // CHECK: tg.square
  %10 = tg.square %9 : tensor<2x3xbf16>
  // CHECK: tg.erf
  %11 = tg.erf %10 : tensor<2x3xbf16>
  // CHECK: tg.sin %{{.*}} compute(f32) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  %12 = tg.sin %11 compute(f32) : (tensor<2x3xbf16>) -> tensor<2x3xf32>
  // CHECK: tg.cos %{{.*}} : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  %13 = tg.cos %12 : (tensor<2x3xf32>) -> tensor<2x3xbf16>
  // CHECK: tg.cumsum %{{.*}} axis = 1 exclusive reverse compute(f32) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  %14 = tg.cumsum %13 axis = 1 exclusive reverse compute(f32) : (tensor<2x3xbf16>) -> tensor<2x3xbf16>
  return %14 : tensor<2x3xbf16>
}

// -----

// CHECK-LABEL: func @softmax_and_norms
func.func @softmax_and_norms(%x: tensor<4x6x8xf16>, %g: tensor<8xf32>, %b: tensor<8xf32>,
                             %g2: tensor<6x8xf16>, %b2: tensor<6x8xf16>)
    -> (tensor<4x6x8xf16>, tensor<4x6x8xf16>, tensor<4x6x8xf16>, tensor<4x6xf32>, tensor<4x6x8xf16>) {
  // CHECK: tg.softmax %{{.*}} axis = 2 compute(f32) : (tensor<4x6x8xf16>) -> tensor<4x6x8xf16>
  %0 = tg.softmax %x axis = 2 compute(f32) : (tensor<4x6x8xf16>) -> tensor<4x6x8xf16>
  // CHECK: tg.log_softmax %{{.*}} axis = 0 : (tensor<4x6x8xf16>) -> tensor<4x6x8xf16>
  %1 = tg.log_softmax %x axis = 0 : (tensor<4x6x8xf16>) -> tensor<4x6x8xf16>
  // CHECK: tg.layer_norm %{{.*}}, %{{.*}}, %{{.*}} axis = 2 epsilon = 9.99999974E-6 compute(f32) : (tensor<4x6x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x6x8xf16>, tensor<4x6xf32>, tensor<4x6xf32>)
  %y, %mean, %rstd = tg.layer_norm %x, %g, %b axis = 2 epsilon = 1.0e-05 compute(f32)
      : (tensor<4x6x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x6x8xf16>, tensor<4x6xf32>, tensor<4x6xf32>)
  // Normalising over the two trailing dimensions, statistics in the storage type.
  // CHECK: tg.layer_norm {{.*}} axis = 1 epsilon = {{.*}} : (tensor<4x6x8xf16>, tensor<6x8xf16>, tensor<6x8xf16>) -> (tensor<4x6x8xf16>, tensor<4xf16>, tensor<4xf16>)
  %y2, %m2, %r2 = tg.layer_norm %x, %g2, %b2 axis = 1 epsilon = 1.0e-05
      : (tensor<4x6x8xf16>, tensor<6x8xf16>, tensor<6x8xf16>) -> (tensor<4x6x8xf16>, tensor<4xf16>, tensor<4xf16>)
  return %0, %1, %y, %mean, %y2 : tensor<4x6x8xf16>, tensor<4x6x8xf16>, tensor<4x6x8xf16>, tensor<4x6xf32>, tensor<4x6x8xf16>
}

// -----

// CHECK-LABEL: func @reductions
func.func @reductions(%x: tensor<4x6x8xbf16>) -> (tensor<6xbf16>, tensor<4x1x8xbf16>, tensor<bf16>) {
  // CHECK: tg.reduce_sum %{{.*}} axes = [0, 2] compute(f32) : (tensor<4x6x8xbf16>) -> tensor<6xbf16>
  %0 = tg.reduce_sum %x axes = [0, 2] compute(f32) : (tensor<4x6x8xbf16>) -> tensor<6xbf16>
  // CHECK: tg.reduce_sum %{{.*}} axes = [1] : (tensor<4x6x8xbf16>) -> tensor<4x8xf32>
  %f = tg.reduce_sum %x axes = [1] : (tensor<4x6x8xbf16>) -> tensor<4x8xf32>
  // CHECK: tg.reduce_mean %{{.*}} axes = [1] keep_dims : (tensor<4x6x8xbf16>) -> tensor<4x1x8xbf16>
  %1 = tg.reduce_mean %x axes = [1] keep_dims : (tensor<4x6x8xbf16>) -> tensor<4x1x8xbf16>
  // CHECK: tg.reduce_max %{{.*}} axes = [0, 1, 2] : (tensor<4x6x8xbf16>) -> tensor<bf16>
  %2 = tg.reduce_max %x axes = [0, 1, 2] : (tensor<4x6x8xbf16>) -> tensor<bf16>
  return %0, %1, %2 : tensor<6xbf16>, tensor<4x1x8xbf16>, tensor<bf16>
}

// -----

// CHECK-LABEL: func @movement
func.func @movement(%x: tensor<2x8x64xf32>, %b: tensor<64xf32>, %y: tensor<2x8x16xf32>,
                    %t: tensor<100x64xf16>, %ids: tensor<2x8xi32>, %i: tensor<2x8x64xi64>)
    -> (tensor<2x4x8x16xf32>, tensor<2x8x64xf32>, tensor<2x8x80xf32>, tensor<2x4x16xf32>,
        tensor<2x8x64xf16>, tensor<8x2x64xi64>) {
  // CHECK: tg.reshape %{{.*}} : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  %0 = tg.reshape %x : (tensor<2x8x64xf32>) -> tensor<2x8x4x16xf32>
  // CHECK: tg.transpose %{{.*}} permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  %1 = tg.transpose %0 permutation = [0, 2, 1, 3] : (tensor<2x8x4x16xf32>) -> tensor<2x4x8x16xf32>
  // CHECK: tg.broadcast_to %{{.*}} : (tensor<64xf32>) -> tensor<2x8x64xf32>
  %2 = tg.broadcast_to %b : (tensor<64xf32>) -> tensor<2x8x64xf32>
  // CHECK: tg.concat %{{.*}}, %{{.*}} axis = 2 : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<2x8x80xf32>
  %3 = tg.concat %x, %y axis = 2 : (tensor<2x8x64xf32>, tensor<2x8x16xf32>) -> tensor<2x8x80xf32>
  // CHECK: tg.slice %{{.*}} offsets = [0, 1, 0] sizes = [2, 4, 16] strides = [1, 2, 1] : (tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %4 = tg.slice %y offsets = [0, 1, 0] sizes = [2, 4, 16] strides = [1, 2, 1] : (tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  // CHECK: tg.slice_grad %{{.*}} offsets = [0, 1, 0] strides = [1, 2, 1] : (tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %sg = tg.slice_grad %4 offsets = [0, 1, 0] strides = [1, 2, 1] : (tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: tg.slice_grad %{{.*}} offsets = [0, 0, 0] : (tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  %sg2 = tg.slice_grad %4 offsets = [0, 0, 0] : (tensor<2x4x16xf32>) -> tensor<2x8x16xf32>
  // CHECK: tg.gather %{{.*}}[%{{.*}}] : (tensor<100x64xf16>, tensor<2x8xi32>) -> tensor<2x8x64xf16>
  %5 = tg.gather %t[%ids] : (tensor<100x64xf16>, tensor<2x8xi32>) -> tensor<2x8x64xf16>
  // Data movement works on integer tensors too.
  // CHECK: tg.transpose %{{.*}} permutation = [1, 0, 2] : (tensor<2x8x64xi64>) -> tensor<8x2x64xi64>
  %6 = tg.transpose %i permutation = [1, 0, 2] : (tensor<2x8x64xi64>) -> tensor<8x2x64xi64>
  return %1, %2, %3, %4, %5, %6 : tensor<2x4x8x16xf32>, tensor<2x8x64xf32>, tensor<2x8x80xf32>, tensor<2x4x16xf32>, tensor<2x8x64xf16>, tensor<8x2x64xi64>
}

// -----

// CHECK-LABEL: func @constant_and_cast
func.func @constant_and_cast(%x: tensor<4xf32>) -> (tensor<4xf16>, tensor<2xi32>, tensor<4xbf16>) {
  // CHECK: tg.constant dense<[1, 2]> : tensor<2xi32>
  %0 = tg.constant dense<[1, 2]> : tensor<2xi32>
  // CHECK: tg.cast %{{.*}} : tensor<4xf32> to tensor<4xf16>
  %1 = tg.cast %x : tensor<4xf32> to tensor<4xf16>
  // CHECK: tg.cast %{{.*}} : tensor<4xf16> to tensor<4xbf16>
  %2 = tg.cast %1 : tensor<4xf16> to tensor<4xbf16>
  return %1, %0, %2 : tensor<4xf16>, tensor<2xi32>, tensor<4xbf16>
}

// -----

// CHECK-LABEL: func @losses
func.func @losses(%logits: tensor<4x6x10xf16>, %labels: tensor<4x6xi64>,
                  %p: tensor<8x3xf32>, %t: tensor<8x3xf32>, %seed: tensor<f32>)
    -> (tensor<f32>, tensor<f32>, tensor<4x6x10xf16>, tensor<8x3xf32>) {
  // CHECK: tg.softmax_cross_entropy %{{.*}}, %{{.*}} compute(f32) : (tensor<4x6x10xf16>, tensor<4x6xi64>) -> tensor<f32>
  %0 = tg.softmax_cross_entropy %logits, %labels compute(f32) : (tensor<4x6x10xf16>, tensor<4x6xi64>) -> tensor<f32>
  // CHECK: tg.mse_loss %{{.*}}, %{{.*}} : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<f32>
  %1 = tg.mse_loss %p, %t : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<f32>
  // CHECK: tg.softmax_cross_entropy_grad %{{.*}}, %{{.*}}, %{{.*}} compute(f32) : (tensor<f32>, tensor<4x6x10xf16>, tensor<4x6xi64>) -> tensor<4x6x10xf16>
  %2 = tg.softmax_cross_entropy_grad %seed, %logits, %labels compute(f32) : (tensor<f32>, tensor<4x6x10xf16>, tensor<4x6xi64>) -> tensor<4x6x10xf16>
  // CHECK: tg.mse_loss_grad %{{.*}}, %{{.*}}, %{{.*}} : (tensor<f32>, tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  %3 = tg.mse_loss_grad %seed, %p, %t : (tensor<f32>, tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
  // CHECK: tg.seed %{{.*}} : tensor<f32>
  %marked = tg.seed %seed : tensor<f32>
  return %0, %1, %2, %3 : tensor<f32>, tensor<f32>, tensor<4x6x10xf16>, tensor<8x3xf32>
}

// -----

// CHECK-LABEL: func @gradients
func.func @gradients(%dy: tensor<4x8xf32>, %x: tensor<4x8xf32>, %g: tensor<8xf32>,
                     %m: tensor<4xf32>, %r: tensor<4xf32>, %ids: tensor<4xi32>)
    -> (tensor<4x8xf32>, tensor<8xf32>, tensor<10x8xf32>) {
  // CHECK: tg.relu_grad %{{.*}}, %{{.*}} : tensor<4x8xf32>
  %0 = tg.relu_grad %dy, %x : tensor<4x8xf32>
  // CHECK: tg.gelu_grad %{{.*}}, %{{.*}} tanh_approx : tensor<4x8xf32>
  %1 = tg.gelu_grad %0, %x tanh_approx : tensor<4x8xf32>
  // CHECK: tg.tanh_grad
  %2 = tg.tanh_grad %1, %x : tensor<4x8xf32>
  // CHECK: tg.sigmoid_grad
  %3 = tg.sigmoid_grad %2, %x : tensor<4x8xf32>
  // CHECK: tg.softmax_grad %{{.*}}, %{{.*}} axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = tg.softmax_grad %3, %x axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: tg.log_softmax_grad %{{.*}}, %{{.*}} axis = 1 compute(f32) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %5 = tg.log_softmax_grad %4, %x axis = 1 compute(f32) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: tg.layer_norm_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  %dx, %dg, %db = tg.layer_norm_grad %5, %x, %g, %m, %r axis = 1
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: tg.gather_grad %{{.*}}[%{{.*}}] : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<10x8xf32>
  %6 = tg.gather_grad %dx[%ids] : (tensor<4x8xf32>, tensor<4xi32>) -> tensor<10x8xf32>
  return %dx, %dg, %6 : tensor<4x8xf32>, tensor<8xf32>, tensor<10x8xf32>
}

// -----

// CHECK-LABEL: func @optimizers
func.func @optimizers(%w: tensor<4x8xf32>, %g: tensor<4x8xf32>, %gh: tensor<4x8xf16>,
                      %b: tensor<4x8xf32>, %m: tensor<4x8xf32>, %v: tensor<4x8xf32>,
                      %t: tensor<i64>, %skip: tensor<i1>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>) {
  // CHECK: tg.sgd_update %{{.*}}, %{{.*}} {lr = 1.000000e-01 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // A gradient may be stored in another precision than the parameter.
  // CHECK: tg.sgd_update %{{.*}}, %{{.*}} momentum_buffer(%{{.*}}) skip_if(%{{.*}}) {lr = 1.000000e-01 : f32, momentum = 0.899999976 : f32, nesterov, weight_decay = 9.99999974E-5 : f32}
  %1, %2 = tg.sgd_update %0, %gh momentum_buffer(%b) skip_if(%skip)
      {lr = 0.1 : f32, momentum = 0.9 : f32, weight_decay = 1.0e-4 : f32, nesterov}
      : (tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>, tensor<i1>) -> (tensor<4x8xf32>, tensor<4x8xf32>)
  // CHECK: tg.adam_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} skip_if(%{{.*}}) compute(f32) {lr = 1.000000e-03 : f32, weight_decay = 0.00999999977 : f32}
  %3, %4, %5, %6 = tg.adam_update %1, %g, %m, %v, %t skip_if(%skip) compute(f32)
      {lr = 1.0e-3 : f32, weight_decay = 0.01 : f32}
      : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>, tensor<i1>)
      -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>)
  return %3, %2, %4, %5, %6 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<i64>
}

// -----

// CHECK-LABEL: func @all_reduce
func.func @all_reduce(%g0: tensor<4x8xf16>, %g1: tensor<8xf16>, %l: tensor<f32>)
    -> (tensor<4x8xf16>, tensor<8xf16>, tensor<f32>) {
  // CHECK: tg.all_reduce mean %{{.*}}, %{{.*}} compute(f32) : (tensor<4x8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, tensor<8xf16>)
  %r0, %r1 = tg.all_reduce mean %g0, %g1 compute(f32)
      : (tensor<4x8xf16>, tensor<8xf16>) -> (tensor<4x8xf16>, tensor<8xf16>)
  // CHECK: tg.all_reduce sum %{{.*}} : (tensor<f32>) -> tensor<f32>
  %s = tg.all_reduce sum %l : (tensor<f32>) -> tensor<f32>
  return %r0, %r1, %s : tensor<4x8xf16>, tensor<8xf16>, tensor<f32>
}

// -----

// CHECK-LABEL: func @loss_scaling
func.func @loss_scaling(%one: tensor<f32>, %s: tensor<f32>, %n: tensor<i64>,
                        %g0: tensor<4x8xf16>, %g1: tensor<8xf32>)
    -> (tensor<f32>, tensor<4x8xf16>, tensor<8xf32>, tensor<f32>, tensor<i64>) {
  // CHECK: tg.apply_loss_scale %{{.*}}, %{{.*}} : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %seed = tg.apply_loss_scale %one, %s : (tensor<f32>, tensor<f32>) -> tensor<f32>
  // CHECK: tg.unscale_grads %{{.*}}, %{{.*}} by %{{.*}} : (tensor<4x8xf16>, tensor<8xf32>, tensor<f32>) -> (tensor<4x8xf16>, tensor<8xf32>, tensor<i1>)
  %u0, %u1, %inf = tg.unscale_grads %g0, %g1 by %s
      : (tensor<4x8xf16>, tensor<8xf32>, tensor<f32>) -> (tensor<4x8xf16>, tensor<8xf32>, tensor<i1>)
  // CHECK: tg.update_loss_scale %{{.*}}, %{{.*}}, %{{.*}} {growth_interval = 100 : i64, max_scale = 1.670000e+07 : f32, min_scale = 1.000000e+00 : f32} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  %s1, %n1 = tg.update_loss_scale %s, %n, %inf
      {growth_interval = 100 : i64, min_scale = 1.0 : f32, max_scale = 1.67e7 : f32}
      : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return %seed, %u0, %u1, %s1, %n1 : tensor<f32>, tensor<4x8xf16>, tensor<8xf32>, tensor<f32>, tensor<i64>
}

// Convolution, pooling and batch norm round-trip.
// CHECK-LABEL: func.func @cnn_ops
func.func @cnn_ops(%x: tensor<2x3x8x8xf16>, %w: tensor<4x3x3x3xf16>, %g: tensor<4xf32>, %xl: tensor<2x8x8x4xf16>) {
  // CHECK: tg.conv2d %{{.*}}, %{{.*}} strides = [2, 1] padding = [1, 0, 1, 2] dilations = [1, 2] groups = 1 compute(f32) : (tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x4x6xf16>
  %c = tg.conv2d %x, %w strides = [2, 1] padding = [1, 0, 1, 2] dilations = [1, 2] groups = 1 compute(f32) : (tensor<2x3x8x8xf16>, tensor<4x3x3x3xf16>) -> tensor<2x4x4x6xf16>
  // CHECK: tg.conv2d_grad_input
  %dx = tg.conv2d_grad_input %c, %w strides = [2, 1] padding = [1, 0, 1, 2] dilations = [1, 2] groups = 1 compute(f32) : (tensor<2x4x4x6xf16>, tensor<4x3x3x3xf16>) -> tensor<2x3x8x8xf16>
  // CHECK: tg.conv2d_grad_filter
  %dw = tg.conv2d_grad_filter %c, %x strides = [2, 1] padding = [1, 0, 1, 2] dilations = [1, 2] groups = 1 compute(f32) : (tensor<2x4x4x6xf16>, tensor<2x3x8x8xf16>) -> tensor<4x3x3x3xf32>
  // CHECK: tg.batch_norm %{{.*}} epsilon = {{.*}} momentum = {{.*}} compute(f32)
  %y, %m, %s, %rm, %rv = tg.batch_norm %c, %g, %g, %g, %g epsilon = 1.0e-05 momentum = 1.0e-01 compute(f32) : (tensor<2x4x4x6xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x6xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: tg.batch_norm_grad
  %bx, %bg, %bb = tg.batch_norm_grad %y, %c, %g, %m, %s compute(f32) : (tensor<2x4x4x6xf16>, tensor<2x4x4x6xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x6xf16>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: tg.max_pool2d %{{.*}} window = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : (tensor<2x4x4x6xf16>) -> tensor<2x4x2x3xf16>
  %p = tg.max_pool2d %y window = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : (tensor<2x4x4x6xf16>) -> tensor<2x4x2x3xf16>
  // CHECK: tg.avg_pool2d {{.*}} channels_last count_include_pad compute(f32)
  %q = tg.avg_pool2d %xl window = [3, 3] strides = [1, 1] padding = [1, 1, 1, 1] channels_last count_include_pad compute(f32) : (tensor<2x8x8x4xf16>) -> tensor<2x8x8x4xf16>
  // CHECK: tg.batch_norm_inference {{.*}} channels_last
  %bi = tg.batch_norm_inference %xl, %g, %g, %g, %g epsilon = 1.0e-05 channels_last : (tensor<2x8x8x4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x8x8x4xf16>
  return
}

// -----

// CHECK-LABEL: func @dropout
func.func @dropout(%x: tensor<8x16xbf16>, %s: tensor<i64>) -> (tensor<8x16xbf16>, tensor<i64>) {
  // CHECK: tg.dropout %{{.*}}, %{{.*}} rate = 1.000000e-01 stream = 3 compute(f32) : (tensor<8x16xbf16>, tensor<i64>) -> tensor<8x16xbf16>
  %0 = tg.dropout %x, %s rate = 0.1 stream = 3 compute(f32) : (tensor<8x16xbf16>, tensor<i64>) -> tensor<8x16xbf16>
  // CHECK: tg.next_seed %{{.*}} : tensor<i64>
  %1 = tg.next_seed %s : tensor<i64>
  return %0, %1 : tensor<8x16xbf16>, tensor<i64>
}

// -----

// CHECK-LABEL: func @masks
func.func @masks(%ids: tensor<2x8xi64>, %pad: tensor<i64>,
                 %scores: tensor<2x4x8x8xf32>, %lowest: tensor<f32>)
    -> (tensor<2x4x8x8xf32>, tensor<2x8xi1>) {
  // CHECK: tg.compare ne, %{{.*}}, %{{.*}} : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
  %keep = tg.compare ne, %ids, %pad : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi1>
  %k4 = tg.reshape %keep : (tensor<2x8xi1>) -> tensor<2x1x1x8xi1>
  // CHECK: tg.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x1x1x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %masked = tg.select %k4, %scores, %lowest : (tensor<2x1x1x8xi1>, tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  // Logic on masks is selection among i1 values.
  // CHECK: tg.select %{{.*}}, %{{.*}}, %{{.*}} : (tensor<2x8xi1>, tensor<2x8xi1>, tensor<i1>) -> tensor<2x8xi1>
  %false = tg.constant dense<false> : tensor<i1>
  %both = tg.select %keep, %keep, %false : (tensor<2x8xi1>, tensor<2x8xi1>, tensor<i1>) -> tensor<2x8xi1>
  return %masked, %both : tensor<2x4x8x8xf32>, tensor<2x8xi1>
}

// -----

// CHECK-LABEL: func @random_uniform
func.func @random_uniform(%seed: tensor<i64>) -> tensor<4x1xf32> {
  // CHECK: tg.random_uniform %{{.*}} stream = 2 low = -1.000000e+00 high = 1.000000e+00 : (tensor<i64>) -> tensor<4x1xf32>
  %u = tg.random_uniform %seed stream = 2 low = -1.0 high = 1.0 : (tensor<i64>) -> tensor<4x1xf32>
  return %u : tensor<4x1xf32>
}
