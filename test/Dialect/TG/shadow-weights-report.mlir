// tg-shadow-weights' report: one entry per parameter of each step it
// rewrites, with its shadow or why it has none, and the steps it leaves.
// RUN: mp-opt %s --tg-shadow-weights="report=%t.json" -o %t.mlir
// RUN: FileCheck %s --input-file=%t.json
// RUN: %python %S/check-pass-report.py shadows %t.json --ir %t.mlir | FileCheck %s --check-prefix=SUM
// The report is written only when asked for, and changes nothing.
// RUN: mp-opt %s --tg-shadow-weights -o %t.plain.mlir
// RUN: diff %t.mlir %t.plain.mlir
// A report that cannot be written is an error that names the file.
// RUN: not mp-opt %s --tg-shadow-weights="report=%t.missing/r.json" 2>&1 | FileCheck %s --check-prefix=NOFILE

// SUM: 6 parameters, 1 shadows, 2 casts replaced, 1 steps kept: consistent with the IR
// NOFILE: error: tg-shadow-weights: report: {{.*}}missing/r.json

// Keys print in alphabetical order; the totals come after the decisions.
// CHECK: "casts_replaced": 2,
// CHECK-NEXT: "decisions": [

// CHECK: "casts_replaced": 2,
// CHECK-NEXT: "function": "step",
// CHECK-NEXT: "location": "{{.*}}shadow-weights-report.mlir:{{[0-9]+}}:{{[0-9]+}}",
// CHECK-NEXT: "param": "w",
// CHECK-NEXT: "shadow": "amp.shadow.w",
// CHECK-NEXT: "shadow_type": "tensor<4xbf16>",
// CHECK-NEXT: "shadowed": true,
// CHECK-NEXT: "type": "tensor<4xf32>",
// CHECK-NEXT: "update": "tg.sgd_update"

// CHECK: "param": "b",
// CHECK-NEXT: "reason": "the step never casts it to f16 or bf16",
// CHECK-NEXT: "shadowed": false,
// CHECK: "param": "low",
// CHECK-NEXT: "reason": "only f32 master weights get a shadow",
// CHECK: "param": "both",
// CHECK-NEXT: "reason": "the step casts it to both f16 and bf16",
// CHECK: "param": "twice",
// CHECK-NEXT: "reason": "no single tg.sgd_update or tg.adam_update updates it",
// CHECK: "param": "other",
// CHECK-NEXT: "reason": "the step returns another value than its optimizer update's as its new value",

// CHECK: "params": 6,
// CHECK-NEXT: "shadows": 1,
// CHECK-NEXT: "steps_kept": [
// CHECK-NEXT: {
// CHECK-NEXT: "function": "called",
// CHECK-NEXT: "reason": "it is called, so its signature stays"
func.func @step(%w: tensor<4xf32> {tg.param = "w"}, %b: tensor<4xf32> {tg.param = "b"},
                %low: tensor<4xbf16> {tg.param = "low"},
                %both: tensor<4xf32> {tg.param = "both"}, %twice: tensor<4xf32> {tg.param = "twice"},
                %other: tensor<4xf32> {tg.param = "other"}, %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xf32> {tg.update = "b"},
        tensor<4xbf16> {tg.update = "low"}, tensor<4xf32> {tg.update = "both"},
        tensor<4xf32> {tg.update = "twice"}, tensor<4xf32> {tg.update = "other"})
    attributes {tg.train_step} {
  %wb = tg.cast %w : tensor<4xf32> to tensor<4xbf16>
  %wb2 = tg.cast %w : tensor<4xf32> to tensor<4xbf16>
  %bb = tg.cast %both : tensor<4xf32> to tensor<4xbf16>
  %bh = tg.cast %both : tensor<4xf32> to tensor<4xf16>
  %tb = tg.cast %twice : tensor<4xf32> to tensor<4xbf16>
  %ob = tg.cast %other : tensor<4xf32> to tensor<4xbf16>
  %s0 = tg.add %wb, %wb2 : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %s1 = tg.add %s0, %s0 : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %s2 = tg.add %s1, %low : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %s3 = tg.add %s2, %bb : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %s4 = tg.add %s3, %tb : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %s5 = tg.add %s4, %ob : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %hf = tg.cast %bh : tensor<4xf16> to tensor<4xf32>
  %sf = tg.cast %s5 : tensor<4xbf16> to tensor<4xf32>
  %s6 = tg.add %sf, %hf : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %loss = tg.reduce_sum %s6 axes = [0] : (tensor<4xf32>) -> tensor<f32>
  %w1 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %b1 = tg.sgd_update %b, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %gl = tg.cast %g : tensor<4xf32> to tensor<4xbf16>
  %low1 = tg.sgd_update %low, %gl {lr = 0.1 : f32} : (tensor<4xbf16>, tensor<4xbf16>) -> tensor<4xbf16>
  %both1 = tg.sgd_update %both, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t1 = tg.sgd_update %twice, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %t2 = tg.sgd_update %twice, %g {lr = 0.2 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %o1 = tg.sgd_update %other, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %loss, %w1, %b1, %low1, %both1, %t1, %other
      : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

func.func @called(%w: tensor<4xf32> {tg.param = "w"}, %g: tensor<4xf32> {tg.input = "g"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"})
    attributes {tg.train_step} {
  %wb = tg.cast %w : tensor<4xf32> to tensor<4xbf16>
  %wf = tg.cast %wb : tensor<4xbf16> to tensor<4xf32>
  %l = tg.reduce_sum %wf axes = [0] : (tensor<4xf32>) -> tensor<f32>
  %w1 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %l, %w1 : tensor<f32>, tensor<4xf32>
}
func.func @caller(%w: tensor<4xf32>, %g: tensor<4xf32>) -> tensor<f32> {
  %l, %w1 = func.call @called(%w, %g) : (tensor<4xf32>, tensor<4xf32>) -> (tensor<f32>, tensor<4xf32>)
  return %l : tensor<f32>
}
