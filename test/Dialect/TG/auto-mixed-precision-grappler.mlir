// RUN: mp-opt %s --split-input-file --tg-auto-mixed-precision | FileCheck %s

// The scenarios of TensorFlow's AutoMixedPrecision unit tests
// (grappler/optimizers/auto_mixed_precision_test.cc), with our lists: exp
// and softmax are deny, sqrt and tanh infer, relu clear, matmul allow. Each
// checks the decisions and the number of casts.

// TF "Simple": deny1 -> clr1 -> infer1 -> clr2 -> allow1 -> clr3 -> infer2
// -> clr4 -> deny2 -> clr5. As in TF, deny1, clr1, infer1 and everything
// from infer2 on are f32; clr2 and allow1 are f16. TF also runs clr3 in f16
// and casts after it; here clr3's only consumer needs f32 and the matmul
// can write f32 for free, so clr3 computes in f32: one cast in all where TF
// has two.
// CHECK-LABEL: func @simple
// CHECK: %[[D1:.*]] = tg.exp %arg0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[C1:.*]] = tg.relu %[[D1]] : tensor<8x8xf32>
// CHECK: %[[I1:.*]] = tg.sqrt %[[C1]] : tensor<8x8xf32>
// CHECK: %[[I1H:.*]] = tg.cast %[[I1]] : tensor<8x8xf32> to tensor<8x8xf16>
// CHECK: %[[C2:.*]] = tg.relu %[[I1H]] compute(f16) : tensor<8x8xf16>
// CHECK: %[[A1:.*]] = tg.matmul %[[C2]], %[[C2]] compute(f32) : (tensor<8x8xf16>, tensor<8x8xf16>) -> tensor<8x8xf32>
// CHECK: %[[C3:.*]] = tg.relu %[[A1]] : tensor<8x8xf32>
// CHECK: %[[I2:.*]] = tg.tanh %[[C3]] : tensor<8x8xf32>
// CHECK: %[[C4:.*]] = tg.relu %[[I2]] : tensor<8x8xf32>
// CHECK: %[[D2:.*]] = tg.softmax %[[C4]] axis = 1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: tg.relu %[[D2]] : tensor<8x8xf32>
// CHECK-NOT: tg.cast
func.func @simple(%input: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %deny1 = tg.exp %input : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %clr1 = tg.relu %deny1 : tensor<8x8xf32>
  %infer1 = tg.sqrt %clr1 : tensor<8x8xf32>
  %clr2 = tg.relu %infer1 : tensor<8x8xf32>
  %allow1 = tg.matmul %clr2, %clr2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %clr3 = tg.relu %allow1 : tensor<8x8xf32>
  %infer2 = tg.tanh %clr3 : tensor<8x8xf32>
  %clr4 = tg.relu %infer2 : tensor<8x8xf32>
  %deny2 = tg.softmax %clr4 axis = 1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %clr5 = tg.relu %deny2 : tensor<8x8xf32>
  return %clr5 : tensor<8x8xf32>
}

// -----

// TF "BidirectionalClearChain": clear ops reachable from an allow op through
// clear ops only, upstream or downstream, all become f16, with one cast at
// the root of the chain; the softmax reads the f16 chain directly.
// CHECK-LABEL: func @bidirectional_clear_chain
// CHECK: %[[XH:.*]] = tg.cast %arg0 : tensor<8x8xf32> to tensor<8x8xf16>
// CHECK-NOT: tg.cast
// CHECK: %[[C1:.*]] = tg.relu %[[XH]] compute(f16) : tensor<8x8xf16>
// CHECK: %[[C2:.*]] = tg.relu %[[C1]] compute(f16) : tensor<8x8xf16>
// CHECK: %[[A:.*]] = tg.matmul %[[C2]], %[[C2]] compute(f32)
// CHECK: %[[C3:.*]] = tg.transpose %[[C1]] permutation = [1, 0] : (tensor<8x8xf16>) -> tensor<8x8xf16>
// CHECK: %[[C4:.*]] = tg.reshape %[[C3]] : (tensor<8x8xf16>) -> tensor<64xf16>
// CHECK: tg.softmax %[[C4]] axis = 0 compute(f32) : (tensor<64xf16>) -> tensor<64xf32>
func.func @bidirectional_clear_chain(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<64xf32>) {
  %c1 = tg.relu %x : tensor<8x8xf32>
  %c2 = tg.relu %c1 : tensor<8x8xf32>
  %a = tg.matmul %c2, %c2 : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %c3 = tg.transpose %c1 permutation = [1, 0] : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %c4 = tg.reshape %c3 : (tensor<8x8xf32>) -> tensor<64xf32>
  %t = tg.tanh %a : tensor<8x8xf32>
  %s = tg.softmax %c4 axis = 0 : (tensor<64xf32>) -> tensor<64xf32>
  return %t, %s : tensor<8x8xf32>, tensor<64xf32>
}

// -----

// TF "PreserveFetches": a value the function returns keeps its type, even
// when its producer runs in f16 (a cast back is added).
// CHECK-LABEL: func @preserve_fetches
// CHECK: %[[A:.*]] = tg.matmul {{.*}} -> tensor<8x8xf16>
// CHECK: %[[R:.*]] = tg.relu %[[A]] compute(f16) : tensor<8x8xf16>
// CHECK: %[[RF:.*]] = tg.cast %[[R]] : tensor<8x8xf16> to tensor<8x8xf32>
// CHECK: return %[[RF]], %{{.*}} : tensor<8x8xf32>, tensor<8x8xf32>
func.func @preserve_fetches(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %a = tg.matmul %x, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %r = tg.relu %a : tensor<8x8xf32>
  %b = tg.matmul %r, %x : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %r, %b : tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// TF "ExistingCast": a user cast to f16 feeding an allow op is used as it
// is; a user cast back to f32 before an allow op folds with the pass's own
// cast (the round trip f16 -> f32 -> f16 is exact).
// CHECK-LABEL: func @existing_casts
// CHECK-SAME: (%[[X:.*]]: tensor<8x8xf32>, %[[H:.*]]: tensor<8x8xf16>)
// CHECK: %[[XH:.*]] = tg.cast %[[X]] : tensor<8x8xf32> to tensor<8x8xf16>
// CHECK: %[[UF:.*]] = tg.cast %[[H]] : tensor<8x8xf16> to tensor<8x8xf32>
// CHECK: tg.matmul %[[XH]], %[[H]] compute(f32)
// CHECK-NOT: tg.cast
func.func @existing_casts(%x: tensor<8x8xf32>, %h: tensor<8x8xf16>) -> tensor<8x8xf32> {
  %xh = tg.cast %x : tensor<8x8xf32> to tensor<8x8xf16>
  %hf = tg.cast %h : tensor<8x8xf16> to tensor<8x8xf32>
  %xf = tg.cast %xh : tensor<8x8xf16> to tensor<8x8xf32>
  %a = tg.matmul %xf, %hf : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %a : tensor<8x8xf32>
}

// -----

// TF "MixedFanout": one allow op feeding an allow op, an infer op, a deny
// op and a full-precision consumer (an optimizer gradient). The matmul
// writes f32, since a consumer needs it, and one cast feeds the f16
// consumer; the infer op, whose only user is the f32 result, computes in f32.
// CHECK-LABEL: func @mixed_fanout
// CHECK: %[[A:.*]] = tg.matmul {{.*}} -> tensor<8x8xf32>
// CHECK: %[[AH:.*]] = tg.cast %[[A]] : tensor<8x8xf32> to tensor<8x8xf16>
// CHECK: tg.matmul %[[AH]], %{{.*}} compute(f32)
// CHECK: tg.tanh %[[A]] : tensor<8x8xf32>
// CHECK: tg.softmax %[[A]] axis = 1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: tg.sgd_update %{{.*}}, %[[A]]
func.func @mixed_fanout(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %a = tg.matmul %x, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %b = tg.matmul %a, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %t = tg.tanh %a : tensor<8x8xf32>
  %s = tg.softmax %a axis = 1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %u = tg.sgd_update %w, %a {lr = 0.1 : f32} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %b, %t, %s, %u : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// TF "NoAllowOps": with no allow op anywhere nothing changes.
// CHECK-LABEL: func @no_allow_ops
// CHECK-NOT: tg.cast
// CHECK-NOT: compute(
// CHECK: return
func.func @no_allow_ops(%x: tensor<8x8xf32>, %b: tensor<8xf32>) -> tensor<8x8xf32> {
  %0 = tg.add %x, %b : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %1 = tg.relu %0 : tensor<8x8xf32>
  %2 = tg.softmax %1 axis = 1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %3 = tg.tanh %2 : tensor<8x8xf32>
  return %3 : tensor<8x8xf32>
}

// -----

// TF "InferFollowsAllow" / "DenyThroughInfer": an infer op between a deny op
// and an allow op stays f32 when deny reaches it first; the chain after the
// allow op follows it.
// CHECK-LABEL: func @deny_then_allow
// CHECK: %[[E:.*]] = tg.exp %arg0 : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %[[T:.*]] = tg.tanh %[[E]] : tensor<8x8xf32>
// CHECK: %[[TH:.*]] = tg.cast %[[T]]
// CHECK: %[[S:.*]] = tg.softmax %[[T]]
// CHECK: %[[A:.*]] = tg.matmul %[[TH]]
// CHECK: tg.sigmoid %[[A]] compute(f16)
func.func @deny_then_allow(%x: tensor<8x8xf32>) -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %e = tg.exp %x : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %t = tg.tanh %e : tensor<8x8xf32>
  %s = tg.softmax %t axis = 1 : (tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = tg.matmul %t, %t : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %g = tg.sigmoid %a : tensor<8x8xf32>
  %b = tg.matmul %g, %g : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %s, %b : tensor<8x8xf32>, tensor<8x8xf32>
}
