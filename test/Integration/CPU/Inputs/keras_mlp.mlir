// The model of the Keras mixed-precision guide, forward only: Dense(784 ->
// 128, relu), then Dense(10) whose logits the guide keeps in f32 (see
// keras-policy.json); the loss (sparse softmax cross-entropy, from the
// integer labels), the backward pass and Adam come from tg-make-train-step.
func.func @keras_mlp(%x: tensor<64x784xf32> {tg.input = "x"},
                     %labels: tensor<64xi32> {tg.label = "labels"},
                     %w1: tensor<784x128xf32> {tg.param = "dense_1.kernel"},
                     %b1: tensor<128xf32> {tg.param = "dense_1.bias"},
                     %w2: tensor<128x10xf32> {tg.param = "dense_logits.kernel"},
                     %b2: tensor<10xf32> {tg.param = "dense_logits.bias"})
    -> (tensor<64x10xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w1 : (tensor<64x784xf32>, tensor<784x128xf32>) -> tensor<64x128xf32> loc("dense_1.matmul")
  %1 = tg.add %0, %b1 : (tensor<64x128xf32>, tensor<128xf32>) -> tensor<64x128xf32> loc("dense_1.bias_add")
  %2 = tg.relu %1 : tensor<64x128xf32> loc("dense_1.relu")
  %3 = tg.matmul %2, %w2 : (tensor<64x128xf32>, tensor<128x10xf32>) -> tensor<64x10xf32> loc("dense_logits.matmul")
  %4 = tg.add %3, %b2 : (tensor<64x10xf32>, tensor<10xf32>) -> tensor<64x10xf32> loc("dense_logits.bias_add")
  return %4 : tensor<64x10xf32>
}
