func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = tg.relu %x : tensor<4xf32>
