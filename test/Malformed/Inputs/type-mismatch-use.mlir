func.func @f(%a: tensor<4xf32>) -> tensor<4xf16> {
  %0 = tg.relu %a : tensor<4xf16>
  return %0 : tensor<4xf16>
}
