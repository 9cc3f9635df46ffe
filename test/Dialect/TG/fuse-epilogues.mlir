// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues | FileCheck %s
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues="activation=false residual=false" | FileCheck %s --check-prefix=BIAS
// The fused ops print and parse back as they are.
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues | mp-opt --split-input-file | FileCheck %s
// A second run finds nothing more to fuse.
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues > %t.once.mlir
// RUN: mp-opt %t.once.mlir --split-input-file --tg-fuse-epilogues | diff - %t.once.mlir
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues="scale=false optimizer=false" | FileCheck %s --check-prefix=NOSCALE
// RUN: mp-opt %s --split-input-file --tg-fuse-epilogues="bias-grad=false" | FileCheck %s --check-prefix=NOBG
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

// -----

// An attention's scalings: the scores' 1/sqrt(d) (a rank-0 constant) joins
// the product as alpha, and the gradient's scaling, which two matmuls read
// (dQ and dK), joins both and is removed. Queries and keys scaled by
// sqrt(1/sqrt(d)) each (torch's scaled_dot_product_attention) are read
// unscaled, the product of the two scalars the alpha. With scale=false
// nothing changes.
// CHECK-LABEL: func @attention_scalings
// CHECK-NOT: tg.mul
// CHECK-NOT: tg.constant
// CHECK: %[[S:.*]] = tg.fused_matmul %arg0, %arg1 transpose_rhs {alpha = 1.250000e-01 : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: %[[DQ:.*]] = tg.fused_matmul %arg2, %arg1 {alpha = 1.250000e-01 : f64} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[DK:.*]] = tg.fused_matmul %arg2, %arg0 transpose_lhs {alpha = 1.250000e-01 : f64} : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[P:.*]] = tg.fused_matmul %arg0, %arg1 transpose_rhs {alpha = 0.1249999{{[0-9]*}} : f64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
// CHECK-NEXT: return %[[S]], %[[DQ]], %[[DK]], %[[P]]
// NOSCALE-LABEL: func @attention_scalings
// NOSCALE-COUNT-4: tg.mul
// NOSCALE-NOT: tg.fused_matmul
func.func @attention_scalings(%q: tensor<2x4x8xf32>, %k: tensor<2x4x8xf32>, %ds: tensor<2x4x4xf32>) -> (tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>) {
  %c = tg.constant dense<1.250000e-01> : tensor<f32>
  %s = tg.matmul %q, %k transpose_rhs : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  %scaled = tg.mul %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %g = tg.mul %c, %ds : (tensor<f32>, tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %dq = tg.matmul %g, %k : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %dk = tg.matmul %g, %q transpose_lhs : (tensor<2x4x4xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %r = tg.constant dense<0.353553385> : tensor<1xf32>
  %qs = tg.mul %q, %r : (tensor<2x4x8xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %ks = tg.mul %k, %r : (tensor<2x4x8xf32>, tensor<1xf32>) -> tensor<2x4x8xf32>
  %p = tg.matmul %qs, %ks transpose_rhs : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
  return %scaled, %dq, %dk, %p : tensor<2x4x4xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x4xf32>
}

// -----

// A plain SGD update of a weight gradient becomes the gradient's epilogue:
// the weight is the residual and -lr the alpha (times a scaling before
// it). Momentum, weight decay, loss scaling's skip predicate, a gradient
// something else reads and a weight the step casts (a mixed-precision
// master weight, whose update tg-shadow-weights needs) stay as they are.
// CHECK-LABEL: func @sgd_updates
// CHECK: %[[W1:.*]] = tg.fused_matmul %arg0, %arg1 transpose_lhs residual(%arg2) {alpha = -1.250000e-01 : f64} : (tensor<16x4xf32>, tensor<16x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK-NEXT: %[[W2:.*]] = tg.fused_matmul %arg0, %arg1 transpose_lhs residual(%arg2) {alpha = -3.125000e-02 : f64} :
// CHECK-NEXT: %[[G3:.*]] = tg.matmul %arg0, %arg1 transpose_lhs
// CHECK-NEXT: tg.sgd_update %arg2, %[[G3]] momentum_buffer(%arg3)
// CHECK-NEXT: %[[G4:.*]] = tg.matmul %arg0, %arg1 transpose_lhs
// CHECK-NEXT: tg.sgd_update %arg2, %[[G4]] {lr = 1.250000e-01 : f32, weight_decay = 0.00999999977 : f32}
// CHECK-NEXT: %[[G5:.*]] = tg.matmul %arg0, %arg1 transpose_lhs
// CHECK-NEXT: tg.sgd_update %arg2, %[[G5]] skip_if(%arg4)
// CHECK-NEXT: %[[G6:.*]] = tg.matmul %arg0, %arg1 transpose_lhs
// CHECK-NEXT: tg.sgd_update %arg2, %[[G6]] {lr
// CHECK-NEXT: tg.cast %arg3
// CHECK-NEXT: %[[G7:.*]] = tg.matmul %arg0, %arg1 transpose_lhs
// CHECK-NEXT: tg.sgd_update %arg3, %[[G7]] {lr
// CHECK: return %[[W1]], %[[W2]]
// NOSCALE-LABEL: func @sgd_updates
// NOSCALE-NOT: tg.fused_matmul
func.func @sgd_updates(%x: tensor<16x4xf32>, %dy: tensor<16x3xf32>, %w: tensor<4x3xf32>, %m: tensor<4x3xf32>, %skip: tensor<i1>) -> (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xf32>) {
  %g1 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w1 = tg.sgd_update %w, %g1 {lr = 0.125 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %c = tg.constant dense<2.500000e-01> : tensor<f32>
  %p2 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %g2 = tg.mul %p2, %c : (tensor<4x3xf32>, tensor<f32>) -> tensor<4x3xf32>
  %w2 = tg.sgd_update %w, %g2 {lr = 0.125 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %g3 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w3, %m3 = tg.sgd_update %w, %g3 momentum_buffer(%m) {lr = 0.125 : f32, momentum = 0.9 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  %g4 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w4 = tg.sgd_update %w, %g4 {lr = 0.125 : f32, weight_decay = 0.01 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %g5 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w5 = tg.sgd_update %w, %g5 skip_if(%skip) {lr = 0.125 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>, tensor<i1>) -> tensor<4x3xf32>
  %g6 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w6 = tg.sgd_update %w, %g6 {lr = 0.125 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %low = tg.cast %m : tensor<4x3xf32> to tensor<4x3xbf16>
  %g7 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w7 = tg.sgd_update %m, %g7 {lr = 0.125 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %w1, %w2, %m3, %w4, %w5, %w6, %g6, %low, %w7 : tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<4x3xbf16>, tensor<4x3xf32>
}

// -----

// Where the fused op goes: where the product was, once its operands are
// defined and every other reader of the residual has read it, not at the
// chain's end. A weight gradient whose SGD update joined it runs after the
// input gradient that reads the weight (and the same output gradient),
// not with the updates at the step's end; a reader of the weight through
// a reshape (a view of its buffer) holds it back as a direct one does.
// CHECK-LABEL: func @placement
// CHECK-NEXT: %[[DX:.*]] = tg.matmul %arg1, %arg2 transpose_rhs
// CHECK-NEXT: %[[W:.*]] = tg.fused_matmul %arg0, %arg1 transpose_lhs residual(%arg2)
// CHECK-NEXT: %[[H:.*]] = tg.exp %[[DX]]
// CHECK-NEXT: %[[FLAT:.*]] = tg.reshape %arg3
// CHECK-NEXT: %[[N:.*]] = tg.add %[[FLAT]], %[[FLAT]]
// CHECK-NEXT: %[[V:.*]] = tg.fused_matmul %arg0, %arg1 transpose_lhs residual(%arg3)
// CHECK-NEXT: %[[E:.*]] = tg.exp %[[H]]
// CHECK-NEXT: return %[[W]], %[[E]], %[[V]], %[[N]]
func.func @placement(%x: tensor<16x4xf32>, %dy: tensor<16x3xf32>, %w: tensor<4x3xf32>, %v: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<16x4xf32>, tensor<4x3xf32>, tensor<12xf32>) {
  %dw = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %dx = tg.matmul %dy, %w transpose_rhs : (tensor<16x3xf32>, tensor<4x3xf32>) -> tensor<16x4xf32>
  %h = tg.exp %dx : (tensor<16x4xf32>) -> tensor<16x4xf32>
  %dv = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %flat = tg.reshape %v : (tensor<4x3xf32>) -> tensor<12xf32>
  %n = tg.add %flat, %flat : (tensor<12xf32>, tensor<12xf32>) -> tensor<12xf32>
  %e = tg.exp %h : (tensor<16x4xf32>) -> tensor<16x4xf32>
  %w1 = tg.sgd_update %w, %dw {lr = 0.125 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %v1 = tg.sgd_update %v, %dv {lr = 0.125 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  return %w1, %e, %v1, %n : tensor<4x3xf32>, tensor<16x4xf32>, tensor<4x3xf32>, tensor<12xf32>
}

// -----

// Scalings that stay: by a value that is not a constant, by a vector, by a
// constant that is not finite, of an operand something other than a
// matmul reads too, and those whose alpha would leave f32's range (the
// second of two scalings by 1e30; an operand's by 1e20).
// CHECK-LABEL: func @scalings_left_alone
// CHECK-NOT: tg.fused_matmul
// CHECK-COUNT-4: tg.mul
// CHECK: %[[BIG:.*]] = tg.fused_matmul %arg0, %arg1 {alpha = 1.0000000{{[0-9]+}}E+30 : f64}
// CHECK-NEXT: tg.mul %[[BIG]]
// CHECK: tg.mul %arg0
// CHECK-NEXT: tg.matmul
func.func @scalings_left_alone(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %s: tensor<f32>) -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x4xf32>, tensor<8x3xf32>, tensor<8x3xf32>) {
  %v = tg.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %inf = tg.constant dense<0x7F800000> : tensor<f32>
  %mm = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %a = tg.mul %mm, %s : (tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xf32>
  %mm2 = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %b = tg.mul %mm2, %v : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %mm3 = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %c = tg.mul %mm3, %inf : (tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xf32>
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %xs = tg.mul %x, %half : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %mm4 = tg.matmul %xs, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %huge = tg.constant dense<1.0e+30> : tensor<f32>
  %mm5 = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %once = tg.mul %mm5, %huge : (tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xf32>
  %twice = tg.mul %once, %huge : (tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xf32>
  %big = tg.constant dense<1.0e+20> : tensor<f32>
  %xb = tg.mul %x, %big : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %mm6 = tg.matmul %xb, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %a, %b, %c, %mm4, %xs, %twice, %mm6 : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x4xf32>, tensor<8x3xf32>, tensor<8x3xf32>
}

// -----

// A scaled product that a matmul reads: the scaling moves into the reader
// (the product stays a plain matmul). A scaling by exactly 1 is dropped.
// CHECK-LABEL: func @scaled_product_read_by_matmul
// CHECK-NEXT: %[[P:.*]] = tg.matmul %arg0, %arg1 :
// CHECK-NEXT: %[[Y:.*]] = tg.fused_matmul %[[P]], %arg2 {alpha = 5.000000e-01 : f64} :
// CHECK-NEXT: %[[Z:.*]] = tg.fused_matmul %arg0, %arg1 : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
// CHECK-NEXT: return %[[Y]], %[[Z]]
func.func @scaled_product_read_by_matmul(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %v: tensor<3x5xf32>) -> (tensor<8x5xf32>, tensor<8x3xf32>) {
  %c = tg.constant dense<5.000000e-01> : tensor<f32>
  %mm = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %s = tg.mul %mm, %c : (tensor<8x3xf32>, tensor<f32>) -> tensor<8x3xf32>
  %y = tg.matmul %s, %v : (tensor<8x3xf32>, tensor<3x5xf32>) -> tensor<8x5xf32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %xs = tg.mul %x, %one : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
  %z = tg.matmul %xs, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  return %y, %z : tensor<8x5xf32>, tensor<8x3xf32>
}

// -----

// Weight gradients that give their layer's bias gradient. y = x w^T + b:
// the gradient dy^T x sums its lhs, here a 3-D dy read through reshapes
// (both go with the sum). y = x w + b: x^T dy sums its rhs, here with the
// SGD update of the weight, before the bias's.
// CHECK-LABEL: func @bias_grads
// CHECK-NEXT: %[[F:.*]] = tg.reshape %arg0 : (tensor<2x8x6xf32>) -> tensor<16x6xf32>
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = tg.fused_matmul %[[F]], %arg1 transpose_lhs bias_grad(lhs) : (tensor<16x6xf32>, tensor<16x4xf32>) -> (tensor<6x4xf32>, tensor<6xf32>)
// CHECK-NEXT: %[[W:.*]], %[[DB2:.*]] = tg.fused_matmul %arg1, %arg2 transpose_lhs residual(%arg3) bias_grad(rhs) {alpha = -0.0099999997764825821 : f64} : (tensor<16x4xf32>, tensor<16x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>)
// CHECK-NEXT: %[[B:.*]] = tg.sgd_update %arg4, %[[DB2]]
// CHECK: return %[[DW]], %[[DB]], %[[W]], %[[B]]
// NOSCALE-LABEL: func @bias_grads
// NOBG-LABEL: func @bias_grads
// NOBG-COUNT-2: tg.reduce_sum
// NOBG-NOT: bias_grad(
func.func @bias_grads(%dy3: tensor<2x8x6xf32>, %x: tensor<16x4xf32>, %dy: tensor<16x3xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<6x4xf32>, tensor<6xf32>, tensor<4x3xf32>, tensor<3xf32>) {
  %flat = tg.reshape %dy3 : (tensor<2x8x6xf32>) -> tensor<16x6xf32>
  %dw = tg.matmul %flat, %x transpose_lhs : (tensor<16x6xf32>, tensor<16x4xf32>) -> tensor<6x4xf32>
  %rows = tg.reshape %dy3 : (tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  %db = tg.reduce_sum %rows axes = [0, 1] : (tensor<2x8x6xf32>) -> tensor<6xf32>
  %db2 = tg.reduce_sum %dy axes = [0] : (tensor<16x3xf32>) -> tensor<3xf32>
  %dw2 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w1 = tg.sgd_update %w, %dw2 {lr = 0.00999999977 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %b1 = tg.sgd_update %b, %db2 {lr = 0.00999999977 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %dw, %db, %w1, %b1 : tensor<6x4xf32>, tensor<6xf32>, tensor<4x3xf32>, tensor<3xf32>
}

// -----

// The product and the sum read one gradient through reshapes that regroup
// it differently, as attention's input projection has it (the gradients
// of q, k and v concatenated as [tokens, 3, width], then read as [tokens,
// 3 x width] by the weight gradient and as [.., 3 x width] by the sum):
// any reshape keeps the order, so equal last dimensions mean equal rows.
// A sum of rows of another width stays.
// CHECK-LABEL: func @bias_grads_regrouped
// CHECK-DAG: %[[NARROW:.*]] = tg.reduce_sum %arg0 axes = [0, 1] : (tensor<16x3x2xf32>) -> tensor<2xf32>
// CHECK-DAG: %[[DW:.*]], %[[DB:.*]] = tg.fused_matmul %{{.*}}, %arg1 transpose_lhs bias_grad(lhs) : (tensor<16x6xf32>, tensor<16x4xf32>) -> (tensor<6x4xf32>, tensor<6xf32>)
// CHECK-NOT: tg.reduce_sum
// CHECK: return %[[DW]], %[[DB]], %[[NARROW]]
// NOBG-LABEL: func @bias_grads_regrouped
// NOBG-COUNT-2: tg.reduce_sum
// NOBG-NOT: bias_grad(
func.func @bias_grads_regrouped(%g: tensor<16x3x2xf32>, %x: tensor<16x4xf32>) -> (tensor<6x4xf32>, tensor<6xf32>, tensor<2xf32>) {
  %flat = tg.reshape %g : (tensor<16x3x2xf32>) -> tensor<16x6xf32>
  %dw = tg.matmul %flat, %x transpose_lhs : (tensor<16x6xf32>, tensor<16x4xf32>) -> tensor<6x4xf32>
  %narrow = tg.reduce_sum %g axes = [0, 1] : (tensor<16x3x2xf32>) -> tensor<2xf32>
  %rows = tg.reshape %g : (tensor<16x3x2xf32>) -> tensor<2x8x6xf32>
  %db = tg.reduce_sum %rows axes = [0, 1] : (tensor<2x8x6xf32>) -> tensor<6xf32>
  return %dw, %db, %narrow : tensor<6x4xf32>, tensor<6xf32>, tensor<2xf32>
}

// -----

// Sums that stay: read before the fused op (the bias updated before the
// weight), of an operand with k along its columns (a plain lhs, a
// transposed rhs), over other axes, kept as dimensions, in another compute
// type, and of a batched product.
// CHECK-LABEL: func @bias_grads_kept
// CHECK-COUNT-6: tg.reduce_sum
// CHECK-NOT: bias_grad(
func.func @bias_grads_kept(%x: tensor<16x4xf32>, %dy: tensor<16x3xf32>, %dyt: tensor<3x16xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>, %x3: tensor<2x16x4xf32>, %dy3: tensor<2x16x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<16xf32>, tensor<1x3xf32>, tensor<3xf64>, tensor<2x4x3xf32>, tensor<3xf32>) {
  %db = tg.reduce_sum %dy axes = [0] : (tensor<16x3xf32>) -> tensor<3xf32>
  %b1 = tg.sgd_update %b, %db {lr = 0.00999999977 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  %dw = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %w1 = tg.sgd_update %w, %dw {lr = 0.00999999977 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %lhs = tg.matmul %dyt, %x : (tensor<3x16xf32>, tensor<16x4xf32>) -> tensor<3x4xf32>
  %dbt = tg.reduce_sum %dyt axes = [0] : (tensor<3x16xf32>) -> tensor<16xf32>
  %rhs = tg.matmul %w, %dy transpose_rhs : (tensor<4x3xf32>, tensor<16x3xf32>) -> tensor<4x16xf32>
  %dw2 = tg.matmul %x, %dy transpose_lhs : (tensor<16x4xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
  %kept = tg.reduce_sum %dy axes = [0] keep_dims : (tensor<16x3xf32>) -> tensor<1x3xf32>
  %wide = tg.reduce_sum %dy axes = [0] compute(f64) : (tensor<16x3xf32>) -> tensor<3xf64>
  %dw3 = tg.matmul %x3, %dy3 transpose_lhs : (tensor<2x16x4xf32>, tensor<2x16x3xf32>) -> tensor<2x4x3xf32>
  %db3 = tg.reduce_sum %dy3 axes = [0, 1] : (tensor<2x16x3xf32>) -> tensor<3xf32>
  %sum = tg.reduce_sum %rhs axes = [0] : (tensor<4x16xf32>) -> tensor<16xf32>
  return %w1, %b1, %lhs, %db, %dw2, %dbt, %kept, %wide, %dw3, %db3 : tensor<4x3xf32>, tensor<3xf32>, tensor<3x4xf32>, tensor<3xf32>, tensor<4x3xf32>, tensor<16xf32>, tensor<1x3xf32>, tensor<3xf64>, tensor<2x4x3xf32>, tensor<3xf32>
}
