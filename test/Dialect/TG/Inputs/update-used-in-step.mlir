// A step that uses an updated parameter inside the step.
func.func @step(%w: tensor<4xf32> {tg.param = "w"}, %x: tensor<4xf32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xf32> {tg.output = "r"})
    attributes {tg.train_step} {
  %loss = tg.mse_loss %w, %x : (tensor<4xf32>, tensor<4xf32>) -> tensor<f32>
  %seed = tg.constant dense<1.0> : tensor<f32>
  %g = tg.mse_loss_grad %seed, %w, %x : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %w1 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %r = tg.relu %w1 : tensor<4xf32>
  return %loss, %w1, %r : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}
