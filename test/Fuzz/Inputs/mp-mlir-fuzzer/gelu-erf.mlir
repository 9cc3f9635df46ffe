// tg-raise-decomposed-ops read the location of the op its replacement had
// just erased (heap-use-after-free, found by the sanitized suite).
func.func @mlp(%x: tensor<8x16xf32> {tg.input = "x"},
               %labels: tensor<8xi32> {tg.label = "labels"},
               %w: tensor<16x4xf32> {tg.param = "fc.weight"})
    -> (tensor<8x4xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %half = tg.constant dense<5.000000e-01> : tensor<f32>
  %one = tg.constant dense<1.000000e+00> : tensor<f32>
  %r2 = tg.constant dense<1.41421354> : tensor<f32>
  %a = tg.div %x, %r2 : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32> loc("act/Div")
  %e = tg.erf %a : tensor<8x16xf32> loc("act/Erf")
  %p = tg.add %e, %one : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32> loc("act/Add")
  %m = tg.mul %x, %p : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> loc("act/Mul")
  %g = tg.mul %m, %half : (tensor<8x16xf32>, tensor<f32>) -> tensor<8x16xf32> loc("act/Mul_1")
  %y = tg.matmul %g, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32> loc("fc")
  return %y : tensor<8x4xf32>
}
