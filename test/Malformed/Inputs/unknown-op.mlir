func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.conv3d %x : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
