// RUN: mp-opt %s --split-input-file --tg-make-train-step --verify-diagnostics

// One case per way a forward function can be refused (or warned about).

// The loss must be a scalar.
func.func @loss_not_scalar(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3x3xf32> {tg.param = "w"})
    -> (tensor<4x3xf32> {tg.loss}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  // expected-error @+1 {{tg-make-train-step: the loss (result #0) must be a rank-0 floating-point tensor, got 'tensor<4x3xf32>'; to train on logits give loss=softmax-cross-entropy or loss=mse}}
  return %0 : tensor<4x3xf32>
}

// -----

// Without a loss or labels to build one, there is nothing to minimise.
// expected-error @+1 {{tg-make-train-step: the forward function returns no loss: mark its scalar loss tg.loss, or return the logits and give loss=softmax-cross-entropy or loss=mse}}
func.func @no_loss(%x: tensor<4x3xf32> {tg.input = "x"}, %w: tensor<3x3xf32> {tg.param = "w"})
    -> (tensor<4x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// A parameter that does not reach the loss is a warning; it is returned
// unchanged.
func.func @unused_param(%x: tensor<4x3xf32> {tg.input = "x"}, %y: tensor<4xi32> {tg.label = "y"},
                        %w: tensor<3x3xf32> {tg.param = "w"},
                        // expected-warning @+1 {{tg-make-train-step: parameter 'unused' does not reach the loss; it is returned unchanged}}
                        %u: tensor<3xf32> {tg.param = "unused"})
    -> (tensor<4x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// Parameters are floating point (the forward convention).
// expected-error @+1 {{'func.func' op is not a valid forward function: parameter 'w' must have a floating-point element type}}
func.func @integer_param(%x: tensor<4x3xi32> {tg.input = "x"}, %w: tensor<3xi32> {tg.param = "w"})
    -> tensor<f32> attributes {tg.forward} {
  %0 = tg.constant dense<1.0> : tensor<f32>
  return %0 : tensor<f32>
}

// -----

// An op without an adjoint rule between a parameter and the loss.
func.func @not_differentiable(%x: tensor<4x3xf32> {tg.input = "x"}, %y: tensor<4xi32> {tg.label = "y"},
                              %w: tensor<4x3xf32> {tg.param = "w"})
    -> (tensor<4x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  // expected-error @+1 {{'tg.relu_grad' is not differentiable, and it lies between parameter 'w' and the loss; rewrite the forward pass without it, or give it an adjoint rule (docs/Autodiff.md)}}
  %0 = tg.relu_grad %w, %x : tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// The statistics layer_norm saves are not differentiable results.
func.func @statistics_in_loss(%x: tensor<4x3xf32> {tg.param = "x"}, %g: tensor<3xf32> {tg.param = "g"},
                              %b: tensor<3xf32> {tg.param = "b"})
    -> tensor<f32> attributes {tg.forward} {
  // expected-error @+1 {{result #1 of 'tg.layer_norm' is not differentiable, but the loss depends on it}}
  %y, %mean, %rstd = tg.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-05 : (tensor<4x3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4xf32>, tensor<4xf32>)
  %0 = tg.reduce_sum %mean axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// loss=auto with two label arguments needs label=.
// expected-error @+1 {{tg-make-train-step: the function has several tg.label arguments; name the one the loss compares with (label=<name>)}}
func.func @two_labels(%x: tensor<4x3xf32> {tg.input = "x"}, %y: tensor<4xi32> {tg.label = "y"},
                      %z: tensor<4xi32> {tg.label = "z"}, %w: tensor<3x3xf32> {tg.param = "w"})
    -> (tensor<4x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}

// -----

// The loss op must accept the prediction and the labels.
func.func @labels_do_not_fit(%x: tensor<4x3xf32> {tg.input = "x"}, %y: tensor<5xi32> {tg.label = "y"},
                             %w: tensor<3x3xf32> {tg.param = "w"})
    -> (tensor<4x3xf32> {tg.output = "logits"}) attributes {tg.forward} {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  // expected-error @+2 {{tg-make-train-step: the loss cannot compare the prediction ('tensor<4x3xf32>') with 'y' ('tensor<5xi32>'); see the error above}}
  // expected-error @+1 {{'tg.softmax_cross_entropy' op labels shape [5] must equal the logits shape without the class dimension [4]}}
  return %0 : tensor<4x3xf32>
}

// -----

// A forward function is one block.
// expected-error @+1 {{tg-make-train-step: the forward function must be one block}}
func.func @blocks(%x: tensor<f32> {tg.param = "x"}) -> tensor<f32> attributes {tg.forward} {
  cf.br ^bb1
^bb1:
  return %x : tensor<f32>
}

// -----

// No function is marked tg.forward: a warning, not silence.
// expected-warning @+1 {{tg-make-train-step: no function is marked tg.forward, so nothing was differentiated; mark the forward function with the unit attribute `tg.forward` or name it with `entry=<name>`}}
func.func @unmarked(%x: tensor<4x3xf32>, %w: tensor<3x3xf32>) -> tensor<4x3xf32> {
  %0 = tg.matmul %x, %w : (tensor<4x3xf32>, tensor<3x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
