// A step whose loss composes the ops the example steps do not execute
// (elementwise, unary, movement, log-softmax, mean and max reductions), so
// that the compiled path of each is checked against a float64 reference
// (check-op-zoo.py mirrors this function).
module {
  func.func @op_zoo(
      %x: tensor<8x4xf32> {tg.input = "x"},
      %t: tensor<8x6xf32> {tg.label = "t"},
      %w: tensor<4xf32> {tg.init = dense<[0.5, -1.0, 2.0, 0.25]> : tensor<4xf32>, tg.param = "w"})
      -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<8x6xf32> {tg.output = "p"})
      attributes {tg.train_step} {
    %xw = tg.mul %x, %w : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %a = tg.tanh %xw : tensor<8x4xf32>
    %b = tg.sigmoid %x : tensor<8x4xf32>
    %sq = tg.square %x : tensor<8x4xf32>
    %one = tg.constant dense<1.0> : tensor<f32>
    %sq1 = tg.add %sq, %one : (tensor<8x4xf32>, tensor<f32>) -> tensor<8x4xf32>
    %r = tg.rsqrt %sq1 : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %s = tg.sqrt %sq1 : tensor<8x4xf32>
    %l = tg.log %s : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %e = tg.exp %a : (tensor<8x4xf32>) -> tensor<8x4xf32>
    %nb = tg.neg %b : tensor<8x4xf32>
    %mx = tg.maximum %a, %nb : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %mn = tg.minimum %r, %l : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %d = tg.div %mx, %s : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %sb = tg.sub %d, %mn : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %cat = tg.concat %sb, %e axis = 1 : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x8xf32>
    %sl = tg.slice %cat offsets = [0, 1] sizes = [8, 6] strides = [1, 1] : (tensor<8x8xf32>) -> tensor<8x6xf32>
    %ls = tg.log_softmax %sl axis = 1 : (tensor<8x6xf32>) -> tensor<8x6xf32>
    %rm = tg.reduce_max %sl axes = [1] keep_dims : (tensor<8x6xf32>) -> tensor<8x1xf32>
    %bc = tg.broadcast_to %rm : (tensor<8x1xf32>) -> tensor<8x6xf32>
    %p0 = tg.add %ls, %bc : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<8x6xf32>
    %mean = tg.reduce_mean %p0 axes = [0] keep_dims : (tensor<8x6xf32>) -> tensor<1x6xf32>
    %p = tg.sub %p0, %mean : (tensor<8x6xf32>, tensor<1x6xf32>) -> tensor<8x6xf32>
    %loss = tg.mse_loss %p, %t : (tensor<8x6xf32>, tensor<8x6xf32>) -> tensor<f32>
    %g = tg.reduce_mean %x axes = [0] : (tensor<8x4xf32>) -> tensor<4xf32>
    %w1 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    return %loss, %w1, %p : tensor<f32>, tensor<4xf32>, tensor<8x6xf32>
  }
}
