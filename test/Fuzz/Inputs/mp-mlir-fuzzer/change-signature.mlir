// tg-auto-mixed-precision{change-signature=true} erased the casts it folded
// into the signature, then handed them to the greedy folder
// (heap-use-after-free, found by the sanitized suite). The bytes of this
// file make mp-mlir-fuzzer pick that variant: PAD
func.func @mlp(%x: tensor<8x16xf32> {tg.input = "x"},
               %labels: tensor<8xi32> {tg.label = "labels"},
               %w: tensor<16x4xf32> {tg.param = "fc.weight"})
    -> (tensor<8x4xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %y = tg.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc("fc")
  return %y : tensor<8x4xf32>
}
