// Two dense layers wide enough for the CPU's packed GEMM under AVX2
// (test/Runner/bias-grad-fusion.test): fc1 stores its weight [out, in]
// as PyTorch does (y = x w^T + b, whose weight gradient dy^T x sums its lhs
// into the bias gradient), head [in, out] (y = x w + b: x^T dy, its rhs).
module {
  func.func @wide(
      %x: tensor<256x128xf32> {tg.input = "x"},
      %labels: tensor<256xi32> {tg.label = "labels"},
      %fc1_w: tensor<256x128xf32> {tg.param = "fc1.weight"},
      %fc1_b: tensor<256xf32> {tg.param = "fc1.bias"},
      %head_w: tensor<256x64xf32> {tg.param = "head.weight"},
      %head_b: tensor<64xf32> {tg.param = "head.bias"})
      -> (tensor<256x64xf32> {tg.output = "logits"})
      attributes {tg.forward} {
    %fc1_mm = tg.matmul %x, %fc1_w transpose_rhs : (tensor<256x128xf32>, tensor<256x128xf32>) -> tensor<256x256xf32>
    %fc1_z = tg.add %fc1_mm, %fc1_b : (tensor<256x256xf32>, tensor<256xf32>) -> tensor<256x256xf32>
    %fc1_h = tg.relu %fc1_z : tensor<256x256xf32>
    %head_mm = tg.matmul %fc1_h, %head_w : (tensor<256x256xf32>, tensor<256x64xf32>) -> tensor<256x64xf32>
    %logits = tg.add %head_mm, %head_b : (tensor<256x64xf32>, tensor<64xf32>) -> tensor<256x64xf32>
    return %logits : tensor<256x64xf32>
  }
}
