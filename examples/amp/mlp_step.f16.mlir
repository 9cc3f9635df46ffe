module {
  func.func @mlp(%arg0: tensor<32x64xf32> {tg.input = "x"}, %arg1: tensor<32xi32> {tg.label = "labels"}, %arg2: tensor<64x128xf32> {tg.param = "fc1.weight"}, %arg3: tensor<128xf32> {tg.param = "fc1.bias"}, %arg4: tensor<128x10xf32> {tg.param = "head.weight"}, %arg5: tensor<10xf32> {tg.param = "head.bias"}) -> (tensor<f32> {tg.loss}, tensor<32x10xf32> {tg.output = "logits"}, tensor<64x128xf32> {tg.update = "fc1.weight"}, tensor<128xf32> {tg.update = "fc1.bias"}, tensor<128x10xf32> {tg.update = "head.weight"}, tensor<10xf32> {tg.update = "head.bias"}) attributes {tg.train_step} {
    %0 = tg.cast %arg4 : tensor<128x10xf32> to tensor<128x10xf16>
    %1 = tg.cast %arg3 : tensor<128xf32> to tensor<128xf16>
    %2 = tg.cast %arg2 : tensor<64x128xf32> to tensor<64x128xf16>
    %3 = tg.cast %arg0 : tensor<32x64xf32> to tensor<32x64xf16>
    %4 = tg.matmul %3, %2 compute(f32) : (tensor<32x64xf16>, tensor<64x128xf16>) -> tensor<32x128xf16>
    %5 = tg.add %4, %1 compute(f16) : (tensor<32x128xf16>, tensor<128xf16>) -> tensor<32x128xf16>
    %6 = tg.relu %5 compute(f16) : tensor<32x128xf16>
    %7 = tg.matmul %6, %0 compute(f32) : (tensor<32x128xf16>, tensor<128x10xf16>) -> tensor<32x10xf32>
    %8 = tg.add %7, %arg5 : (tensor<32x10xf32>, tensor<10xf32>) -> tensor<32x10xf32>
    %9 = tg.softmax_cross_entropy %8, %arg1 : (tensor<32x10xf32>, tensor<32xi32>) -> tensor<f32>
    %10 = tg.constant dense<1.000000e+00> : tensor<f32>
    %11 = tg.softmax_cross_entropy_grad %10, %8, %arg1 compute(f32) : (tensor<f32>, tensor<32x10xf32>, tensor<32xi32>) -> tensor<32x10xf16>
    %12 = tg.reduce_sum %11 axes = [0] compute(f32) : (tensor<32x10xf16>) -> tensor<10xf32>
    %13 = tg.matmul %11, %0 transpose_rhs compute(f32) : (tensor<32x10xf16>, tensor<128x10xf16>) -> tensor<32x128xf16>
    %14 = tg.matmul %6, %11 transpose_lhs compute(f32) : (tensor<32x128xf16>, tensor<32x10xf16>) -> tensor<128x10xf32>
    %15 = tg.relu_grad %13, %5 compute(f16) : tensor<32x128xf16>
    %16 = tg.reduce_sum %15 axes = [0] compute(f32) : (tensor<32x128xf16>) -> tensor<128xf32>
    %17 = tg.matmul %3, %15 transpose_lhs compute(f32) : (tensor<32x64xf16>, tensor<32x128xf16>) -> tensor<64x128xf32>
    %new_param = tg.sgd_update %arg2, %17 {lr = 1.000000e-01 : f32} : (tensor<64x128xf32>, tensor<64x128xf32>) -> tensor<64x128xf32>
    %new_param_0 = tg.sgd_update %arg3, %16 {lr = 1.000000e-01 : f32} : (tensor<128xf32>, tensor<128xf32>) -> tensor<128xf32>
    %new_param_1 = tg.sgd_update %arg4, %14 {lr = 1.000000e-01 : f32} : (tensor<128x10xf32>, tensor<128x10xf32>) -> tensor<128x10xf32>
    %new_param_2 = tg.sgd_update %arg5, %12 {lr = 1.000000e-01 : f32} : (tensor<10xf32>, tensor<10xf32>) -> tensor<10xf32>
    return %9, %8, %new_param, %new_param_0, %new_param_1, %new_param_2 : tensor<f32>, tensor<32x10xf32>, tensor<64x128xf32>, tensor<128xf32>, tensor<128x10xf32>, tensor<10xf32>
  }
}

