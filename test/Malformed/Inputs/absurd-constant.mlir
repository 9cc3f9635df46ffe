func.func @f() {
  %0 = tg.constant dense<[1.0, 2.0]> : tensor<1000000000000xf32>
  return
}
