// RUN: mp-opt %s --tg-raise-decomposed-ops --split-input-file --mlir-print-debuginfo | FileCheck %s

// LayerNorm as exporters decompose it: raised, named after the subgraph.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[R:.*]], %{{.*}}, %{{.*}} = tg.layer_norm %arg0, %arg1, %arg2 axis = 1 epsilon = 9.99999974E-6
// CHECK-NOT: tg.sqrt
// CHECK: return %[[R]]
// CHECK: loc("ln/LayerNorm"
func.func @layer_norm(%x: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  %eps = tg.constant dense<9.99999974E-6> : tensor<f32>
  %m = tg.reduce_mean %x axes = [1] keep_dims : (tensor<4x32xf32>) -> tensor<4x1xf32> loc("ln/ReduceMean")
  %d = tg.sub %x, %m : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32> loc("ln/Sub")
  %s = tg.square %d : tensor<4x32xf32>
  %v = tg.reduce_mean %s axes = [1] keep_dims : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = tg.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %sd = tg.sqrt %ve : tensor<4x1xf32>
  %n = tg.div %d, %sd : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = tg.mul %n, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %z = tg.add %y, %b : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %z : tensor<4x32xf32>
}

// -----

// The normalised value is also returned: the normalisation is raised with
// unit scale and zero shift, and the affine part stays as it was.
// CHECK-LABEL: func.func @layer_norm_shared
// CHECK-DAG: %[[ONE:.*]] = tg.constant dense<1.000000e+00> : tensor<32xf32>
// CHECK-DAG: %[[ZERO:.*]] = tg.constant dense<0.000000e+00> : tensor<32xf32>
// CHECK: %[[N:.*]], %{{.*}}, %{{.*}} = tg.layer_norm %arg0, %[[ONE]], %[[ZERO]] axis = 1
// CHECK-NOT: tg.sqrt
// CHECK: %[[Y:.*]] = tg.mul %[[N]], %arg1
// CHECK: %[[Z:.*]] = tg.add %[[Y]], %arg2
// CHECK: return %[[Z]], %[[N]]
func.func @layer_norm_shared(%x: tensor<4x32xf32>, %g: tensor<32xf32>, %b: tensor<32xf32>) -> (tensor<4x32xf32>, tensor<4x32xf32>) {
  %eps = tg.constant dense<9.99999974E-6> : tensor<f32>
  %m = tg.reduce_mean %x axes = [1] keep_dims : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %d = tg.sub %x, %m : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %s = tg.square %d : tensor<4x32xf32>
  %v = tg.reduce_mean %s axes = [1] keep_dims : (tensor<4x32xf32>) -> tensor<4x1xf32>
  %ve = tg.add %v, %eps : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  %sd = tg.sqrt %ve : tensor<4x1xf32>
  %n = tg.div %d, %sd : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32>
  %y = tg.mul %n, %g : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %z = tg.add %y, %b : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  return %z, %n : tensor<4x32xf32>, tensor<4x32xf32>
}

// -----

// GELU with erf, as torch.onnx exports nn.GELU().
// CHECK-LABEL: func.func @gelu
// CHECK-NEXT: %[[G:.*]] = tg.gelu %arg0 : tensor<8x64xf32> loc(#[[LOC:loc[0-9]*]])
// CHECK-NEXT: return %[[G]]
// CHECK: #[[LOC]] = loc("mlp.act/Gelu"
func.func @gelu(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %r2 = tg.constant dense<1.41421354> : tensor<f32>
  %a = tg.div %x, %r2 : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32> loc("mlp.act/Div")
  %e = tg.erf %a : tensor<8x64xf32> loc("mlp.act/Erf")
  %p = tg.add %e, %one : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32> loc("mlp.act/Add")
  %m = tg.mul %x, %p : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32> loc("mlp.act/Mul")
  %y = tg.mul %m, %half : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32> loc("mlp.act/Mul_1")
  return %y : tensor<8x64xf32>
}

// -----

// Not GELU: erf(x / 2).
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: tg.gelu
// CHECK: tg.erf
func.func @not_gelu(%x: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %two = tg.constant dense<2.0> : tensor<f32>
  %a = tg.div %x, %two : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  %e = tg.erf %a : tensor<8x64xf32>
  %p = tg.add %e, %one : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  %m = tg.mul %x, %p : (tensor<8x64xf32>, tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = tg.mul %m, %half : (tensor<8x64xf32>, tensor<f32>) -> tensor<8x64xf32>
  return %y : tensor<8x64xf32>
}

// -----

// Softmax written out with the max subtracted.
// CHECK-LABEL: func.func @softmax
// CHECK-NEXT: %[[S:.*]] = tg.softmax %arg0 axis = 1
// CHECK-NEXT: return %[[S]]
func.func @softmax(%x: tensor<4x10xf32>) -> tensor<4x10xf32> {
  %mx = tg.reduce_max %x axes = [1] keep_dims : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %d = tg.sub %x, %mx : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
  %e = tg.exp %d : (tensor<4x10xf32>) -> tensor<4x10xf32>
  %s = tg.reduce_sum %e axes = [1] keep_dims : (tensor<4x10xf32>) -> tensor<4x1xf32>
  %y = tg.div %e, %s : (tensor<4x10xf32>, tensor<4x1xf32>) -> tensor<4x10xf32>
  return %y : tensor<4x10xf32>
}
