func.func @f(%a: tensor<4x8xf32>, %b: tensor<7x3xf32>) -> tensor<4x3xf32> {
  %0 = tg.matmul %a, %b : (tensor<4x8xf32>, tensor<7x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
