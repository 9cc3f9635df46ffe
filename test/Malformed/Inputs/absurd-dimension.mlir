func.func @f(%x: tensor<99999999999999999999999xf32>) {
  return
}
