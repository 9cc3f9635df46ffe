func.func @f(%x: tensor<4xf32> {tg.input = "x) {
  return
}
