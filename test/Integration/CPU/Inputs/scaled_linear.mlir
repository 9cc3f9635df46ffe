// A small regression step for the loss-scaling execution tests:
// p = x * w + b, MSE against t; w trained by SGD with momentum, b by Adam, so
// both kinds of optimizer state are checked. Without a matmul nothing is on
// the allow list and the step stays f32: the gradients only become
// non-finite where the test puts an inf or a NaN into x.
module {
  func.func @scaled_linear(
      %x: tensor<8x4xf32> {tg.input = "x"},
      %t: tensor<8x4xf32> {tg.label = "t"},
      %w: tensor<4xf32> {tg.init = dense<[0.5, -0.25, 1.0, 0.125]> : tensor<4xf32>, tg.param = "w"},
      %b: tensor<4xf32> {tg.param = "b"},
      %wm: tensor<4xf32> {tg.state = "w.momentum"},
      %bm: tensor<4xf32> {tg.state = "b.exp_avg"},
      %bv: tensor<4xf32> {tg.state = "b.exp_avg_sq"},
      %bt: tensor<i64> {tg.state = "b.step"})
      -> (tensor<f32> {tg.loss},
          tensor<4xf32> {tg.update = "w"}, tensor<4xf32> {tg.update = "w.momentum"},
          tensor<4xf32> {tg.update = "b"}, tensor<4xf32> {tg.update = "b.exp_avg"},
          tensor<4xf32> {tg.update = "b.exp_avg_sq"}, tensor<i64> {tg.update = "b.step"})
      attributes {tg.train_step} {
    %xw = tg.mul %x, %w : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %p = tg.add %xw, %b : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<8x4xf32>
    %loss = tg.mse_loss %p, %t : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<f32>
    %seed = tg.constant dense<1.0> : tensor<f32>
    %dp = tg.mse_loss_grad %seed, %p, %t : (tensor<f32>, tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %dpx = tg.mul %dp, %x : (tensor<8x4xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
    %dw = tg.reduce_sum %dpx axes = [0] : (tensor<8x4xf32>) -> tensor<4xf32>
    %db = tg.reduce_sum %dp axes = [0] : (tensor<8x4xf32>) -> tensor<4xf32>
    %w1, %wm1 = tg.sgd_update %w, %dw momentum_buffer(%wm)
        {lr = 0.05 : f32, momentum = 0.9 : f32}
        : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    %b1, %bm1, %bv1, %bt1 = tg.adam_update %b, %db, %bm, %bv, %bt {lr = 0.01 : f32}
        : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
        -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
    return %loss, %w1, %wm1, %b1, %bm1, %bv1, %bt1
        : tensor<f32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>
  }
}
