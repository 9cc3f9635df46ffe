func.func @f(%x: tensor<4xf32>) {
  %y = tg.relu %x : tensor<5xf32>
  return
}
