// Per-op overrides: a pinned op keeps valid IR and its pin, and an override
// that matches nothing is never silent.
// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision="policy=%S/Inputs/policy-head-f32.json" | FileCheck %s
// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision="policy=%S/Inputs/policy-unmatched.json" 2>&1 >/dev/null | FileCheck %s --check-prefix=WARN
// RUN: not mp-opt %s --split-input-file --tg-auto-mixed-precision="policy=%S/Inputs/policy-unmatched.json strict-policy=true" 2>&1 | FileCheck %s --check-prefix=STRICT
// RUN: not mp-opt %s --split-input-file --tg-mixed-precision="policy=%S/Inputs/policy-unmatched.json strict-policy=true" 2>&1 | FileCheck %s --check-prefix=STRICT

// The Keras guide's output layer in f32: the pinned matmul reads f32
// operands (never the f32 master weight narrowed) and computes in f32. The
// first matmul writes its f32 accumulators for it, so the relu between them
// stays f32 and no cast is needed.
// CHECK-LABEL: func.func @mlp
// CHECK:      %[[WH:.*]] = tg.cast %arg1 : tensor<8x16xf32> to tensor<8x16xf16>
// CHECK:      %[[H:.*]] = tg.matmul %{{.*}}, %[[WH]] compute(f32) : (tensor<4x8xf16>, tensor<8x16xf16>) -> tensor<4x16xf32>
// CHECK:      %[[R:.*]] = tg.relu %[[H]] : tensor<4x16xf32>
// CHECK:      tg.matmul %[[R]], %arg2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
// CHECK-NOT:  tg.cast %arg2

func.func @mlp(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x3xf32>) -> tensor<4x3xf32> {
  %0 = tg.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1.matmul")
  %1 = tg.relu %0 : tensor<4x16xf32> loc("fc1.relu")
  %2 = tg.matmul %1, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("head.matmul")
  return %2 : tensor<4x3xf32>
}

// -----

// With a low-precision producer the pinned matmul widens its input.
// CHECK-LABEL: func.func @widen
// CHECK:      %[[R:.*]] = tg.relu %{{.*}} compute(f16) : tensor<4x16xf16>
// CHECK:      %[[R32:.*]] = tg.cast %[[R]] : tensor<4x16xf16> to tensor<4x16xf32>
// CHECK:      tg.matmul %[[R32]], %arg2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32>
// CHECK:      tg.matmul %[[R]], %{{.*}} compute(f32) : (tensor<4x16xf16>, tensor<16x3xf16>)
func.func @widen(%x: tensor<4x8xf32>, %w1: tensor<8x16xf32>, %w2: tensor<16x3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = tg.matmul %x, %w1 : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> loc("fc1.matmul")
  %1 = tg.relu %0 : tensor<4x16xf32> loc("fc1.relu")
  %2 = tg.matmul %1, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("head.matmul")
  %3 = tg.matmul %1, %w2 : (tensor<4x16xf32>, tensor<16x3xf32>) -> tensor<4x3xf32> loc("aux.matmul")
  return %2, %3 : tensor<4x3xf32>, tensor<4x3xf32>
}

// An override that matches no op is a warning naming it, with a hint when a
// name is close (an error with strict-policy, before anything changes).
// WARN: warning: tg-auto-mixed-precision: policy file '{{.*}}policy-unmatched.json': overrides[0]: name 'head' matches no op; did you mean the pattern 'head.*'?
// WARN: warning: tg-auto-mixed-precision: policy file '{{.*}}policy-unmatched.json': overrides[1]: name 'fc1.matmull' matches no op; did you mean 'fc1.matmul'?
// WARN: warning: tg-auto-mixed-precision: policy file '{{.*}}policy-unmatched.json': overrides[2]: pattern 'block*' matches no op
// WARN-NOT: overrides[3]
// STRICT: error: tg-auto-mixed-precision: policy file '{{.*}}policy-unmatched.json': overrides[0]: name 'head' matches no op
// STRICT-NOT: tg.cast
