func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = tg.softmax %x axis = "last" : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
