func.func @f(%w: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.sgd_update %w, %w {lr = 0x7FC00000 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
