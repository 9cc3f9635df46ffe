// tg-fold-transposes' report: one entry per transpose that had readers,
// saying whether it was folded into the matmuls, computed as a swapped
// product, or kept, and why.
// RUN: mp-opt %s --tg-fold-transposes="report=%t.json" -o %t.mlir
// RUN: FileCheck %s --input-file=%t.json
// RUN: %python %S/check-pass-report.py transposes %t.json --ir %t.mlir | FileCheck %s --check-prefix=SUM
// The report is written only when asked for, and changes nothing.
// RUN: mp-opt %s --tg-fold-transposes -o %t.plain.mlir
// RUN: diff %t.mlir %t.plain.mlir
// A report that cannot be written is an error that names the file.
// RUN: not mp-opt %s --tg-fold-transposes="report=%t.missing/r.json" 2>&1 | FileCheck %s --check-prefix=NOFILE

// SUM: 9 transposes, 4 erased, 1 products swapped, 5 operands folded: consistent with the IR
// NOFILE: error: tg-fold-transposes: report: {{.*}}missing/r.json

// Keys print in alphabetical order; the totals come after the decisions.
// CHECK: "decisions": [

// The weight of a linear layer as PyTorch exports it: read through the
// rhs flag by both products.
// CHECK: "erased": true,
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "location": "weight_t",
// CHECK-NEXT: "operands_folded": 2,
// CHECK-NEXT: "permutation": [
// CHECK-NEXT: 1,
// CHECK-NEXT: 0
// CHECK-NEXT: ],
// CHECK-NEXT: "result": "tensor<4x3xf32>"

// The weight gradient, transposed after the product: computed swapped.
// CHECK: "erased": true,
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "location": "grad_t",
// CHECK: "product_swapped": "tg.matmul",

// A product that something else reads too stays, and so does its
// transpose.
// CHECK: "erased": false,
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "kept_for": [
// CHECK-NEXT: "func.return"
// CHECK-NEXT: ],
// CHECK-NEXT: "location": "shared_t",
// CHECK: "product_not_swapped": "the product has other readers: swapped, it would be computed twice",

// A batched activation times a weight: swapped, it would not be one GEMM.
// CHECK: "location": "batched_t",
// CHECK: "product_not_swapped": "an operand is broadcast over the batch: swapped, the product would run as a GEMM per batch entry",

// A permutation that moves a batch dimension is read as it is.
// CHECK: "erased": false,
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "kept_for": [
// CHECK-NEXT: "tg.matmul"
// CHECK-NEXT: ],
// CHECK-NEXT: "location": "batch_moved",
// CHECK: "reason": "it moves more than the last two dimensions, which no transpose flag reads",

// Read by a matmul (through the flag now) and by an add, which keeps it.
// CHECK: "erased": false,
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "kept_for": [
// CHECK-NEXT: "tg.add"
// CHECK-NEXT: ],
// CHECK-NEXT: "location": "also_added",
// CHECK-NEXT: "operands_folded": 1,

// A swap of a swap: the matmul reads through both, each counts its fold.
// CHECK: "erased": true,
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "location": "chain_inner",
// CHECK-NEXT: "operands_folded": 1,
// CHECK: "erased": true,
// CHECK-NEXT: "function": "report",
// CHECK-NEXT: "location": "chain_outer",
// CHECK-NEXT: "operands_folded": 1,

// A fused product with a bias: the transpose does not commute with it.
// CHECK: "location": "fused_t",
// CHECK: "product_not_swapped": "the fused product's epilogue is more than a scale, and does not commute with the transpose",

// CHECK: "erased": 4,
// CHECK-NEXT: "operands_folded": 5,
// CHECK-NEXT: "products_swapped": 1,
// CHECK-NEXT: "transposes": 9
func.func @report(%x: tensor<8x4xf32>, %w: tensor<3x4xf32>, %dy: tensor<8x3xf32>,
                  %xb: tensor<2x8x4xf32>, %v: tensor<4x6xf32>, %u: tensor<4x4xf32>,
                  %bias: tensor<3xf32>)
    -> (tensor<8x3xf32>, tensor<8x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>,
        tensor<2x6x8xf32>, tensor<8x2x6xf32>, tensor<8x4xf32>, tensor<4x4xf32>,
        tensor<8x4xf32>, tensor<3x8xf32>) {
  %wt = tg.transpose %w permutation = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32> loc("weight_t")
  %y = tg.matmul %x, %wt : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %y2 = tg.matmul %x, %wt : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
  %g = tg.matmul %x, %dy transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %gt = tg.transpose %g permutation = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32> loc("grad_t")
  %s = tg.matmul %x, %dy transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %st = tg.transpose %s permutation = [1, 0] : (tensor<4x3xf32>) -> tensor<3x4xf32> loc("shared_t")
  %b = tg.matmul %xb, %v : (tensor<2x8x4xf32>, tensor<4x6xf32>) -> tensor<2x8x6xf32>
  %bt = tg.transpose %b permutation = [0, 2, 1] : (tensor<2x8x6xf32>) -> tensor<2x6x8xf32> loc("batched_t")
  %p = tg.transpose %xb permutation = [1, 0, 2] : (tensor<2x8x4xf32>) -> tensor<8x2x4xf32> loc("batch_moved")
  %pv = tg.matmul %p, %v : (tensor<8x2x4xf32>, tensor<4x6xf32>) -> tensor<8x2x6xf32>
  %ut = tg.transpose %u permutation = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("also_added")
  %xu = tg.matmul %x, %ut : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %add = tg.add %ut, %u : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %c1 = tg.transpose %u permutation = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("chain_inner")
  %c2 = tg.transpose %c1 permutation = [1, 0] : (tensor<4x4xf32>) -> tensor<4x4xf32> loc("chain_outer")
  %xc = tg.matmul %x, %c2 : (tensor<8x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %f = tg.fused_matmul %x, %w transpose_rhs bias(%bias) : (tensor<8x4xf32>, tensor<3x4xf32>, tensor<3xf32>) -> tensor<8x3xf32>
  %ft = tg.transpose %f permutation = [1, 0] : (tensor<8x3xf32>) -> tensor<3x8xf32> loc("fused_t")
  return %y, %y2, %gt, %s, %st, %bt, %pv, %xu, %add, %xc, %ft
      : tensor<8x3xf32>, tensor<8x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<3x4xf32>,
        tensor<2x6x8xf32>, tensor<8x2x6xf32>, tensor<8x4xf32>, tensor<4x4xf32>,
        tensor<8x4xf32>, tensor<3x8xf32>
}
