// tg-fuse-epilogues' report: one entry per matmul, saying what joined its
// epilogue and what reads the value where its chain stopped.
// RUN: mp-opt %s --tg-fuse-epilogues="report=%t.json" -o %t.mlir
// RUN: FileCheck %s --input-file=%t.json
// RUN: %python %S/check-pass-report.py fusion %t.json --ir %t.mlir | FileCheck %s --check-prefix=SUM
// The options are recorded, and what they turn off is not fused.
// RUN: mp-opt %s --tg-fuse-epilogues="report=%t.off.json activation=false bias-grad=false" -o %t.off.mlir
// RUN: FileCheck %s --input-file=%t.off.json --check-prefix=OFF
// RUN: %python %S/check-pass-report.py fusion %t.off.json --ir %t.off.mlir | FileCheck %s --check-prefix=SUMOFF
// A report that cannot be written is an error that names the file.
// RUN: not mp-opt %s --tg-fuse-epilogues="report=%t.missing/r.json" 2>&1 | FileCheck %s --check-prefix=NOFILE

// Keys print in alphabetical order.
// CHECK: "bias_grads": 1,
// CHECK: "decisions": [

// The dense layer: the bias joins, the GELU does not (its gradient reads
// the pre-activation).
// CHECK: "compute": "f32",
// CHECK-NEXT: "epilogue": [
// CHECK-NEXT: "tg.add (bias)"
// CHECK-NEXT: ],
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "fused": true,
// CHECK-NEXT: "location": "dense",
// CHECK-NEXT: "result": "tensor<8x3xf32>",
// CHECK-NEXT: "stopped_before": [
// CHECK-NEXT: "tg.gelu",
// CHECK-NEXT: "tg.gelu_grad"
// CHECK-NEXT: ]

// A product accumulated in f16 is left alone, and says why.
// CHECK: "compute": "f16",
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "fused": false,
// CHECK-NEXT: "location": "half",
// CHECK-NEXT: "reason": "the product accumulates in f16; an epilogue in that type would round where the ops after it do not",

// The attention scores: the scaling joins as alpha; the softmax stops it.
// CHECK: "alpha": 0.125,
// CHECK-NEXT: "compute": "f32",
// CHECK-NEXT: "epilogue": [
// CHECK-NEXT: "tg.mul (alpha)"
// CHECK-NEXT: ],
// CHECK: "location": "scores",
// CHECK: "stopped_before": [
// CHECK-NEXT: "tg.softmax"
// CHECK-NEXT: ]

// The weight gradient: its SGD update and its layer's bias gradient.
// CHECK: "alpha": -0.5,
// CHECK-NEXT: "bias_grad_of": "rhs",
// CHECK-NEXT: "compute": "f32",
// CHECK-NEXT: "epilogue": [
// CHECK-NEXT: "tg.sgd_update (residual (the parameter) and alpha (-lr))"
// CHECK-NEXT: ],
// CHECK: "location": "weight_grad",
// CHECK: "stopped_before": [
// CHECK-NEXT: "func.return"
// CHECK-NEXT: ]

// The ReLU joins; its gradient now reads the fused op's output.
// CHECK: "epilogue": [
// CHECK-NEXT: "tg.add (bias)",
// CHECK-NEXT: "tg.relu (activation)"
// CHECK-NEXT: ],
// CHECK: "location": "relu_layer",
// CHECK-NEXT: "relu_grads_moved_to_output": 1,
// CHECK: "stopped_before": [
// CHECK-NEXT: "func.return"
// CHECK-NEXT: ]

// A product read by two ops: nothing joins.
// CHECK: "fused": false,
// CHECK-NEXT: "location": "shared",
// CHECK-NEXT: "result": "tensor<8x3xf32>",
// CHECK-NEXT: "stopped_before": [
// CHECK-NEXT: "tg.exp",
// CHECK-NEXT: "tg.relu"
// CHECK-NEXT: ]
// CHECK: ],
// CHECK-NEXT: "fused": 4,
// CHECK-NEXT: "matmuls": 6,
// CHECK-NEXT: "operand_scalings_removed": 0,
// CHECK-NEXT: "ops_folded": 6,
// CHECK-NEXT: "options": {
// CHECK-NEXT: "activation": true,
// CHECK-NEXT: "bias-grad": true,
// CHECK-NEXT: "optimizer": true,
// CHECK-NEXT: "residual": true,
// CHECK-NEXT: "scale": true
// CHECK-NEXT: }

// SUM: 6 matmuls, 4 fused, 6 ops folded, 1 bias gradients: consistent with the IR

// OFF: "bias_grads": 0,
// OFF: "location": "relu_layer",
// OFF-NEXT: "result": "tensor<8x3xf32>",
// OFF-NEXT: "stopped_before": [
// OFF-NEXT: "tg.relu",
// OFF-NEXT: "tg.relu_grad"
// OFF-NEXT: ]
// OFF: "activation": false,
// OFF-NEXT: "bias-grad": false,
// SUMOFF: 6 matmuls, 4 fused, 4 ops folded, 0 bias gradients: consistent with the IR

// NOFILE: error: tg-fuse-epilogues: report: {{.*}}r.json

func.func @report(%x: tensor<8x4xf32>, %w: tensor<4x3xf32>, %b: tensor<3xf32>,
                  %dh: tensor<8x3xf32>, %xh: tensor<8x4xf16>,
                  %wh: tensor<4x3xf16>, %q: tensor<2x4x8xf32>,
                  %k: tensor<2x4x8xf32>, %dy: tensor<8x3xf32>)
    -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf16>, tensor<2x4x4xf32>,
        tensor<4x3xf32>, tensor<3xf32>, tensor<8x3xf32>, tensor<8x3xf32>,
        tensor<8x3xf32>, tensor<8x3xf32>) {
  %mm = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32> loc("dense")
  %z = tg.add %mm, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %h = tg.gelu %z : tensor<8x3xf32>
  %dz = tg.gelu_grad %dh, %z : tensor<8x3xf32>
  %half = tg.matmul %xh, %wh : (tensor<8x4xf16>, tensor<4x3xf16>) -> tensor<8x3xf16> loc("half")
  %c = tg.constant dense<1.250000e-01> : tensor<f32>
  %s = tg.matmul %q, %k transpose_rhs : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x4xf32> loc("scores")
  %scaled = tg.mul %s, %c : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4x4xf32>
  %p = tg.softmax %scaled axis = 2 : (tensor<2x4x4xf32>) -> tensor<2x4x4xf32>
  %db = tg.reduce_sum %dy axes = [0] : (tensor<8x3xf32>) -> tensor<3xf32>
  %g = tg.matmul %x, %dy transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("weight_grad")
  %w1 = tg.sgd_update %w, %g {lr = 0.5 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
  %mm2 = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32> loc("relu_layer")
  %z2 = tg.add %mm2, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %h2 = tg.relu %z2 : tensor<8x3xf32>
  %dz2 = tg.relu_grad %dh, %z2 : tensor<8x3xf32>
  %mm3 = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32> loc("shared")
  %e = tg.exp %mm3 : (tensor<8x3xf32>) -> tensor<8x3xf32>
  %r = tg.relu %mm3 : tensor<8x3xf32>
  return %h, %dz, %half, %p, %w1, %db, %h2, %dz2, %e, %r : tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf16>, tensor<2x4x4xf32>, tensor<4x3xf32>, tensor<3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>, tensor<8x3xf32>
}
