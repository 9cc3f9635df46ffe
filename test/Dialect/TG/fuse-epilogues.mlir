// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues | FileCheck %s
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues="activation=false residual=false" | FileCheck %s --check-prefix=BIAS
// The fused ops print and parse back as they are.
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues | mp-opt --split-input-file | FileCheck %s
// A second run finds nothing more to fuse.
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues > %t.once.mlir
// RUN: mp-opt %t.once.mlir --split-input-file --tg-fuse-epilogues | diff - %t.once.mlir
// The AMP pipeline's output fuses, and every result verifies.
// RUN: mp-opt %s --split-input-file --tg-mixed-precision=compute-type=bf16 --tg-fuse-epilogues --verify-each | FileCheck %s --check-prefix=AMP

// A dense layer with ReLU in a training step: the bias add and the ReLU
// join the matmul; the ReLU's gradient reads the fused result instead of
// the pre-activation, which is gone.
// CHECK-LABEL: func @dense_relu
// CHECK: %[[H:.*]] = tg.fused_matmul %arg0, %arg1 bias(%arg2) activation(relu) : (tensor<8x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: %[[DZ:.*]] = tg.relu_grad %arg3, %[[H]] : tensor<8x3xf32>
// CHECK-NEXT: return %[[H]], %[[DZ]]
// BIAS-LABEL: func @dense_relu
// BIAS: %[[Z:.*]] = tg.fused_matmul %arg0, %arg1 bias(%arg2) : (tensor<8x4xf32>, tensor<4x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
// BIAS-NEXT: %[[H:.*]] = tg.relu %[[Z]]
// BIAS-NEXT: tg.relu_grad %arg3, %[[Z]]
// AMP-LABEL: func @dense_relu
// AMP-NOT: tg.matmul
// AMP: %[[H:.*]] = tg.fused_matmul %{{.*}}, %{{.*}} bias(%{{.*}}) activation(relu) compute(f32) : (tensor<8x4xbf16>, tensor<4x3xbf16>, tensor<3xbf16>) -> tensor<8x3xbf16>
// AMP-NEXT: tg.cast %[[H]]
// AMP-NEXT: tg.relu_grad %{{.*}}, %[[H]] compute(bf16)
func.func @dense_relu(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>, %dh: tensor<8x3xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>) {
  %mm = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z = tg.add %mm, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %h = tg.relu %z : tensor<8x3xf32>
  %dz = tg.relu_grad %dh, %z : tensor<8x3xf32>
  return %h, %dz : tensor<8x3xf32>, tensor<8x3xf32>
}

// -----

// The bias on the left, a batched product, and a residual after it (a
// transformer's output projection); the transposes carry over.
// CHECK-LABEL: func @bias_left_residual
// CHECK: %[[Y:.*]] = tg.fused_matmul %arg0, %arg1 transpose_rhs bias(%arg2) residual(%arg3) : (tensor<2x8x4xf32>, tensor<6x4xf32>, tensor<6xf32>, tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT: return %[[Y]]
// BIAS-LABEL: func @bias_left_residual
// BIAS: tg.fused_matmul %arg0, %arg1 transpose_rhs bias(%arg2) :
// BIAS-NEXT: tg.add
func.func @bias_left_residual(%x: tensor<2x8x4xf32>, %w: tensor<6x4xf32>, %b: tensor<6xf32>, %r: tensor<2x8x6xf32>) -> tensor<2x8x6xf32> {
  %mm = tg.matmul %x, %w transpose_rhs : (tensor<2x8x4xf32>, tensor<6x4xf32>) -> tensor<2x8x6xf32>
  %z = tg.add %b, %mm : (tensor<6xf32>, tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  %y = tg.add %r, %z : (tensor<2x8x6xf32>, tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  return %y : tensor<2x8x6xf32>
}

// -----

// A GELU whose gradient needs the pre-activation stays outside; without a
// gradient (inference) it joins, exact or tanh.
// CHECK-LABEL: func @gelu
// CHECK: %[[Z:.*]] = tg.fused_matmul %arg0, %arg1 bias(%arg2) :
// CHECK-NEXT: %[[H:.*]] = tg.gelu %[[Z]]
// CHECK-NEXT: tg.gelu_grad %arg3, %[[Z]]
// CHECK: tg.fused_matmul %arg0, %arg1 bias(%arg2) activation(gelu) :
// CHECK: tg.fused_matmul %arg0, %arg1 activation(gelu_tanh) :
func.func @gelu(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>, %dh: tensor<8x3xf32>) -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>) {
  %mm = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z = tg.add %mm, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %h = tg.gelu %z : tensor<8x3xf32>
  %dz = tg.gelu_grad %dh, %z : tensor<8x3xf32>
  %mm2 = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %z2 = tg.add %mm2, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %h2 = tg.gelu %z2 : tensor<8x3xf32>
  %mm3 = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %h3 = tg.gelu %mm3 tanh_approx : tensor<8x3xf32>
  return %h, %dz, %h2, %h3 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>
}

// -----

// Nothing joins through a value something else reads, an add that is
// neither a bias nor of the product's type, a product accumulated in f16,
// or a ReLU gradient that runs before the ReLU.
// CHECK-LABEL: func @left_alone
// CHECK-NOT: tg.fused_matmul
// CHECK: tg.matmul
// CHECK-NEXT: tg.add
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.add
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.add
// CHECK-NEXT: tg.matmul
// CHECK-NEXT: tg.relu_grad
// CHECK-NEXT: tg.relu
// CHECK-NOT: tg.fused_matmul
func.func @left_alone(%x: tensor<8x4xf16>, %w: tensor<4x3xf16>, %b: tensor<3xf16>, %row: tensor<1x3xf16>, %d: tensor<8x3xf16>) -> (tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>) {
  %mm = tg.matmul %x, %w compute(f32) : (tensor<8x4xf16>, tensor<4x3xf16>) -> tensor<8x3xf16>
  %z = tg.add %mm, %b : (tensor<8x3xf16>, tensor<3xf16>) -> tensor<8x3xf16>
  %mm2 = tg.matmul %x, %w compute(f32) : (tensor<8x4xf16>, tensor<4x3xf16>) -> tensor<8x3xf16>
  %z2 = tg.add %mm2, %row : (tensor<8x3xf16>, tensor<1x3xf16>) -> tensor<8x3xf16>
  %mm3 = tg.matmul %x, %w : (tensor<8x4xf16>, tensor<4x3xf16>) -> tensor<8x3xf16>
  %z3 = tg.add %mm3, %b : (tensor<8x3xf16>, tensor<3xf16>) -> tensor<8x3xf16>
  %mm4 = tg.matmul %x, %w compute(f32) : (tensor<8x4xf16>, tensor<4x3xf16>) -> tensor<8x3xf16>
  %dz = tg.relu_grad %d, %mm4 : tensor<8x3xf16>
  %h4 = tg.relu %mm4 : tensor<8x3xf16>
  return %mm, %z, %z2, %z3, %dz, %h4 : tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>, tensor<8x3xf16>
}
