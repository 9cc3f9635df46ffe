// The precision report (JSON) and picture (DOT) name ops by their location
// names and give every decision with its rule.
// RUN: mp-opt %s --tg-auto-mixed-precision="report=%t.json report-dot=%t.dot" -o /dev/null
// RUN: FileCheck %s --input-file=%t.json
// RUN: FileCheck %s --check-prefix=DOT --input-file=%t.dot
// RUN: %python -c "import json, sys; json.load(open(sys.argv[1]))" %t.json
// The report is written only once complete: no temporary file remains.
// RUN: ls %t.json* | count 1

func.func @step(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %v: tensor<8x3xf32>, %y: tensor<4xi32>) -> tensor<f32> {
  %0 = tg.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("encoder.fc")
  %1 = tg.gelu %0 : tensor<4x8xf32> loc("encoder.gelu")
  %2 = tg.matmul %1, %v : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32> loc("classifier")
  %3 = tg.exp %2 : (tensor<4x3xf32>) -> tensor<4x3xf32> loc("classifier.exp")
  %4 = tg.relu %3 : tensor<4x3xf32> loc("classifier.relu")
  %5 = tg.softmax_cross_entropy %4, %y : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<f32> loc(fused["loss", "train.py":12:3])
  return %5 : tensor<f32>
}

// CHECK: "compute_type": "f16",
// CHECK: "target": "generic",
// CHECK: "level": "default",
// CHECK: "function": "step",
// CHECK: "applied": true,
// CHECK: "name": "encoder.fc",
// CHECK-NEXT: "op": "tg.matmul",
// CHECK-NEXT: "list": "allow",
// CHECK-NEXT: "precision": "f16",
// CHECK-NEXT: "compute": "f32",
// CHECK-NEXT: "operands": [
// CHECK-NEXT: "f16",
// CHECK-NEXT: "f16"
// CHECK-NEXT: ],
// CHECK-NEXT: "results": [
// CHECK-NEXT: "f16"
// CHECK-NEXT: ],
// CHECK-NEXT: "rule": "allow list"
// CHECK: "name": "encoder.gelu",
// CHECK: "list": "infer",
// CHECK-NEXT: "precision": "f16",
// CHECK-NEXT: "compute": "f16",
// CHECK: "rule": "between allow ops"
// The classifier's only consumer is exp (deny), which reads f16 directly.
// CHECK: "name": "classifier",
// CHECK: "results": [
// CHECK-NEXT: "f16"
// CHECK: "name": "classifier.exp",
// CHECK: "list": "deny",
// CHECK: "rule": "deny list"
// CHECK: "name": "classifier.relu",
// CHECK: "list": "clear",
// CHECK-NEXT: "precision": "f32",
// CHECK-NEXT: "compute": "f32",
// CHECK: "rule": "deny spread from classifier.exp"
// CHECK: "name": "loss",
// CHECK: "totals": {
// CHECK-NEXT: "ops": 6,
// CHECK-NEXT: "low_precision_ops": 3,
// CHECK-NEXT: "casts_inserted": 3,
// CHECK-NEXT: "activation_bytes_before": 404,
// CHECK-NEXT: "activation_bytes": 252,
// CHECK-NEXT: "activation_bytes_low_precision": 152,
// CHECK-NEXT: "cast_bytes": 240

// DOT: digraph precision {
// DOT: subgraph "cluster_step" {
// DOT: [shape=ellipse, fillcolor="#eeeeee", label="arg0\nf32"];
// DOT: [fillcolor="#f7e08a", label="arg0.to_f16\ntg.cast\nf32 -> f16"];
// DOT: [fillcolor="#9be89b", label="encoder.fc\ntg.matmul\nf16, f16 -> f16 (compute f32)"];
// DOT: [fillcolor="#9be89b", label="encoder.gelu\ntg.gelu\nf16 -> f16 (compute f16)"];
// DOT: [fillcolor="#9be89b", label="classifier.exp\ntg.exp\nf16 -> f32 (compute f32)"];
// DOT: [fillcolor="#a8c8f0", label="classifier.relu\ntg.relu\nf32 -> f32 (compute f32)"];
// DOT: -> n
