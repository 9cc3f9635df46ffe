// A step whose tensor and function names are not C identifiers: quotes,
// backslashes, spaces, a comment terminator, a keyword, two names that map
// to the same identifier, and a name with a dot.
module {
  func.func @"odd.step"(
      %x: tensor<8x4xf32> {tg.input = "x */ \"in\" put"},
      %y: tensor<8xi32> {tg.label = "int"},
      %w: tensor<4x3xf32> {tg.param = "fc1.weight"},
      %w2: tensor<4x3xf32> {tg.param = "fc1_weight"},
      %b: tensor<3xf32> {tg.param = "b\\ack slash??="})
      -> (tensor<f32> {tg.loss}, tensor<8x3xf32> {tg.output = "logits"},
          tensor<4x3xf32> {tg.update = "fc1.weight"},
          tensor<4x3xf32> {tg.update = "fc1_weight"},
          tensor<3xf32> {tg.update = "b\\ack slash??="})
      attributes {tg.train_step} {
    %h = tg.matmul %x, %w : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %h2 = tg.matmul %x, %w2 : (tensor<8x4xf32>, tensor<4x3xf32>) -> tensor<8x3xf32>
    %s = tg.add %h, %h2 : (tensor<8x3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
    %logits = tg.add %s, %b : (tensor<8x3xf32>, tensor<3xf32>) -> tensor<8x3xf32>
    %loss = tg.softmax_cross_entropy %logits, %y : (tensor<8x3xf32>, tensor<8xi32>) -> tensor<f32>
    %seed = tg.constant dense<1.0> : tensor<f32>
    %dl = tg.softmax_cross_entropy_grad %seed, %logits, %y : (tensor<f32>, tensor<8x3xf32>, tensor<8xi32>) -> tensor<8x3xf32>
    %dw = tg.matmul %x, %dl transpose_lhs : (tensor<8x4xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
    %db = tg.reduce_sum %dl axes = [0] : (tensor<8x3xf32>) -> tensor<3xf32>
    %w1 = tg.sgd_update %w, %dw {lr = 0.1 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %w21 = tg.sgd_update %w2, %dw {lr = 0.1 : f32} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
    %b1 = tg.sgd_update %b, %db {lr = 0.1 : f32} : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    return %loss, %logits, %w1, %w21, %b1 : tensor<f32>, tensor<8x3xf32>, tensor<4x3xf32>, tensor<4x3xf32>, tensor<3xf32>
  }
}
