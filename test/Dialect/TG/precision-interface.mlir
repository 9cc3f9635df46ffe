// RUN: mp-opt %s --split-input-file --tg-test-precision-interface --verify-diagnostics
// RUN: mp-opt %s --split-input-file --tg-test-precision-interface=set-compute=bf16 2>&1 | FileCheck %s --check-prefix=SET
// RUN: not mp-opt %s --tg-test-precision-interface=set-compute=f8 2>&1 | FileCheck %s --check-prefix=BAD

// The precision interface: default list classes, compute types (explicit or
// the storage type of the data operands), and operand roles.

func.func @classes(%a: tensor<4x8xf16>, %b: tensor<8x4xf16>, %x: tensor<4x4xf32>) {
  // expected-remark @+1 {{class = allow, compute = f32, roles = [data, data]}}
  %0 = tg.matmul %a, %b compute(f32) : (tensor<4x8xf16>, tensor<8x4xf16>) -> tensor<4x4xf16>
  // expected-remark @+1 {{class = infer, compute = f16, roles = [data, data]}}
  %1 = tg.add %0, %0 : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
  // expected-remark @+1 {{class = clear, compute = f16, roles = [data]}}
  %2 = tg.relu %1 : tensor<4x4xf16>
  // expected-remark @+1 {{class = clear, compute = none, roles = [data]}}
  %3 = tg.transpose %2 permutation = [1, 0] : (tensor<4x4xf16>) -> tensor<4x4xf16>
  // expected-remark @+1 {{class = deny, compute = f32, roles = [data]}}
  %4 = tg.softmax %x axis = 1 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  // expected-remark @+1 {{class = deny, compute = f32, roles = [data]}}
  %5 = tg.exp %4 : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return
}

// -----

func.func @roles(%x: tensor<4x8xf16>, %g: tensor<8xf32>, %ids: tensor<4xi32>, %t: tensor<10x8xf16>,
                 %w: tensor<8xf32>, %m: tensor<8xf32>, %step: tensor<i64>, %p: tensor<i1>,
                 %s: tensor<f32>, %n: tensor<i64>) {
  // Norm scale and bias are parameters; statistics come out in the compute type.
  // expected-remark @+1 {{class = deny, compute = f32, roles = [data, parameter, parameter]}}
  %y:3 = tg.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 compute(f32)
      : (tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf16>, tensor<4xf32>, tensor<4xf32>)
  // expected-remark @+1 {{class = clear, compute = none, roles = [data, index]}}
  %e = tg.gather %t[%ids] : (tensor<10x8xf16>, tensor<4xi32>) -> tensor<4x8xf16>
  // expected-remark @+1 {{class = deny, compute = f16, roles = [data, index]}}
  %l = tg.softmax_cross_entropy %x, %ids : (tensor<4x8xf16>, tensor<4xi32>) -> tensor<f32>
  // The seed of the backward pass is not data.
  // expected-remark @+1 {{class = deny, compute = f16, roles = [parameter, data, index]}}
  %dl = tg.softmax_cross_entropy_grad %l, %x, %ids : (tensor<f32>, tensor<4x8xf16>, tensor<4xi32>) -> tensor<4x8xf16>
  // Parameters and optimizer state are parameters; the gradient is data.
  // expected-remark @+1 {{class = deny, compute = f32, roles = [parameter, data, parameter, parameter, index, index]}}
  %u:4 = tg.adam_update %w, %g, %m, %m, %step skip_if(%p) {lr = 0.1 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>, tensor<i1>)
      -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i64>)
  // expected-remark @+1 {{class = deny, compute = f32, roles = [parameter, data, parameter, index]}}
  %v:2 = tg.sgd_update %w, %g momentum_buffer(%m) skip_if(%p) {lr = 0.1 : f32, momentum = 0.9 : f32}
      : (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<i1>) -> (tensor<8xf32>, tensor<8xf32>)
  // expected-remark @+1 {{class = deny, compute = f32, roles = [data, data, parameter]}}
  %g2:3 = tg.unscale_grads %w, %g by %s : (tensor<8xf32>, tensor<8xf32>, tensor<f32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<i1>)
  // expected-remark @+1 {{class = deny, compute = f32, roles = [parameter, index, index]}}
  %s2:2 = tg.update_loss_scale %s, %n, %p : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Ops of other dialects opt in through external models (here attached to
// arith.addf and arith.mulf by the test library); other ops are not seen.
func.func @external(%a: tensor<4xbf16>, %b: tensor<4xbf16>) {
  // expected-remark @+1 {{class = infer, compute = bf16, roles = [data, data]}}
  %0 = arith.addf %a, %b : tensor<4xbf16>
  // expected-remark @+1 {{class = infer, compute = bf16, roles = [data, data]}}
  %1 = arith.mulf %0, %b : tensor<4xbf16>
  %2 = arith.subf %1, %b : tensor<4xbf16>
  return
}

// SET: tg.matmul {{.*}} compute(bf16)
// SET: tg.add {{.*}} compute(bf16)
// SET: remark: class = infer, compute = bf16
// SET-NOT: tg.transpose {{.*}} compute
// BAD: error: invalid set-compute value 'f8'; expected f16, bf16, f32, f64 or none
