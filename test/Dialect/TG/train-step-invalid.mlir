// RUN: mp-opt %s --split-input-file --verify-diagnostics

// One case per rule of the training-step convention.

// Rule: tg.train_step is a unit attribute.
// expected-error @+1 {{'tg.train_step' must be a unit attribute}}
func.func @train_step_is_unit() attributes {tg.train_step = 1 : i32} {
  return
}

// -----

// Rule: tg.train_step is on function ops only.
func.func @train_step_on_functions(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tg.train_step' applies to function ops only}}
  %0 = tg.relu %x {tg.train_step} : tensor<4xf32>
  return
}

// -----

// Rule: no other tg attribute exists on operations.
// expected-error @+1 {{unknown tg attribute 'tg.layer' on an operation}}
func.func @unknown_op_attribute() attributes {tg.layer = "x"} {
  return
}

// -----

// Rule: role names are non-empty strings.
// expected-error @+1 {{'tg.param' on argument #0 must be a non-empty string naming it}}
func.func @role_name_is_a_string(%w: tensor<4xf32> {tg.param = 1 : i32}) {
  return
}

// -----

// Rule: role names are not empty.
// expected-error @+1 {{'tg.input' on argument #0 must be a non-empty string naming it}}
func.func @role_name_not_empty(%x: tensor<4xf32> {tg.input = ""}) {
  return
}

// -----

// Rule: argument attributes are the four roles.
// expected-error @+1 {{unknown tg argument attribute 'tg.weight'}}
func.func @unknown_argument_attribute(%w: tensor<4xf32> {tg.weight = "w"}) {
  return
}

// -----

// Rule: tg.loss is a unit attribute.
// expected-error @+1 {{'tg.loss' must be a unit attribute}}
func.func @loss_is_unit(%x: tensor<f32>) -> (tensor<f32> {tg.loss = "l"}) {
  return %x : tensor<f32>
}

// -----

// Rule: tg.update names an argument with a non-empty string.
// expected-error @+1 {{'tg.update' on result #0 must be a non-empty string naming it}}
func.func @update_is_a_string(%x: tensor<f32>) -> (tensor<f32> {tg.update = 0 : i64}) {
  return %x : tensor<f32>
}

// -----

// Rule: result attributes are tg.loss, tg.update and tg.output.
// expected-error @+1 {{unknown tg result attribute 'tg.metric'}}
func.func @unknown_result_attribute(%x: tensor<f32>) -> (tensor<f32> {tg.metric = "m"}) {
  return %x : tensor<f32>
}

// -----

// Rule: every argument has a role.
// expected-error @+1 {{is not a valid training step: argument #1 has no role; give it one of tg.param, tg.state, tg.input or tg.label}}
func.func @every_argument_has_a_role(%x: tensor<f32> {tg.input = "x"}, %y: tensor<f32>)
    -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  return %x : tensor<f32>
}

// -----

// Rule: an argument has one role.
// expected-error @+1 {{argument #0 has more than one role}}
func.func @one_role_per_argument(%x: tensor<f32> {tg.input = "x", tg.label = "y"})
    -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  return %x : tensor<f32>
}

// -----

// Rule: arguments are tensors of static shape.
// expected-error @+1 {{argument #0 ('x') must be a tensor of static shape}}
func.func @arguments_are_static_tensors(%x: tensor<?xf32> {tg.input = "x"}, %l: tensor<f32> {tg.input = "l"})
    -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  return %l : tensor<f32>
}

// -----

// Rule: no argument has a dimension of size 0 (an empty batch).
// expected-error @+1 {{argument #0 ('x') has a dimension of size 0; every input, label, parameter and state must hold at least one element}}
func.func @no_empty_dimensions(%x: tensor<0x4xf32> {tg.input = "x"}, %l: tensor<f32> {tg.input = "l"})
    -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  return %l : tensor<f32>
}

// -----

// Rule: parameters are floating-point.
// expected-error @+1 {{parameter 'w' must have a floating-point element type}}
func.func @parameters_are_float(%w: tensor<4xi32> {tg.param = "w"}, %l: tensor<f32> {tg.input = "l"})
    -> (tensor<f32> {tg.loss}, tensor<4xi32> {tg.update = "w"}) attributes {tg.train_step} {
  return %l, %w : tensor<f32>, tensor<4xi32>
}

// -----

// Rule: argument names are unique.
// expected-error @+1 {{argument #1 reuses the name 'x' of argument #0}}
func.func @names_are_unique(%x: tensor<f32> {tg.input = "x"}, %y: tensor<f32> {tg.label = "x"})
    -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  return %x : tensor<f32>
}

// -----

// Rule: every result has one kind.
// expected-error @+1 {{result #1 needs exactly one of tg.loss, tg.update or tg.output}}
func.func @every_result_has_a_kind(%x: tensor<f32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<f32>) attributes {tg.train_step} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// Rule: a result has one kind only.
// expected-error @+1 {{result #0 needs exactly one of tg.loss, tg.update or tg.output}}
func.func @one_kind_per_result(%x: tensor<f32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss, tg.output = "o"}) attributes {tg.train_step} {
  return %x : tensor<f32>
}

// -----

// Rule: there is one loss.
// expected-error @+1 {{results #0 and #1 are both marked tg.loss}}
func.func @one_loss(%x: tensor<f32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<f32> {tg.loss}) attributes {tg.train_step} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// Rule: the loss is a rank-0 floating-point tensor.
// expected-error @+1 {{the loss (result #0) must be a rank-0 floating-point tensor}}
func.func @loss_is_a_float_scalar(%x: tensor<4xf32> {tg.input = "x"})
    -> (tensor<4xf32> {tg.loss}) attributes {tg.train_step} {
  return %x : tensor<4xf32>
}

// -----

// Rule: there is a loss.
// expected-error @+1 {{no result is marked tg.loss}}
func.func @a_loss_exists(%x: tensor<f32> {tg.input = "x"})
    -> (tensor<f32> {tg.output = "x"}) attributes {tg.train_step} {
  return %x : tensor<f32>
}

// -----

// Rule: an update names an argument.
// expected-error @+1 {{result #1 updates 'v', which is not an argument}}
func.func @update_names_an_argument(%w: tensor<f32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}, tensor<f32> {tg.update = "v"}) attributes {tg.train_step} {
  return %w, %w : tensor<f32>, tensor<f32>
}

// -----

// Rule: only parameters and state are updated.
// expected-error @+1 {{result #1 updates 'x', which is not a tg.param or tg.state argument}}
func.func @inputs_are_not_updated(%x: tensor<f32> {tg.input = "x"})
    -> (tensor<f32> {tg.loss}, tensor<f32> {tg.update = "x"}) attributes {tg.train_step} {
  return %x, %x : tensor<f32>, tensor<f32>
}

// -----

// Rule: an argument is updated once.
// expected-error @+1 {{results #1 and #2 both update 'w'}}
func.func @updated_once(%w: tensor<f32> {tg.param = "w"})
    -> (tensor<f32> {tg.loss}, tensor<f32> {tg.update = "w"}, tensor<f32> {tg.update = "w"})
    attributes {tg.train_step} {
  return %w, %w, %w : tensor<f32>, tensor<f32>, tensor<f32>
}

// -----

// Rule: an update has the argument's type.
// expected-error @+1 {{result #1 updating 'w' must have the argument's type}}
func.func @update_has_argument_type(%w: tensor<4xf32> {tg.param = "w"}, %h: tensor<4xf16> {tg.input = "h"},
                                    %l: tensor<f32> {tg.input = "l"})
    -> (tensor<f32> {tg.loss}, tensor<4xf16> {tg.update = "w"}) attributes {tg.train_step} {
  return %l, %h : tensor<f32>, tensor<4xf16>
}

// -----

// Rule: every parameter and state argument is updated.
// expected-error @+1 {{'m' (tg.state) is never updated; add a result with tg.update = "m"}}
func.func @state_is_updated(%m: tensor<f32> {tg.state = "m"}, %l: tensor<f32> {tg.input = "l"})
    -> (tensor<f32> {tg.loss}) attributes {tg.train_step} {
  return %l : tensor<f32>
}

// -----

// Rule: names are valid UTF-8 (they go into checkpoints and reports).
// expected-error @+1 {{'tg.input' on argument #0 must be valid UTF-8}}
func.func @names_are_utf8(%x: tensor<4xf32> {tg.input = "\FF\FE"}) {
  return
}

// -----

// Rule: only a tg.state argument may be a shadow (tg.shadow_of).
// expected-error @+1 {{is not a valid training step: argument #1 has tg.shadow_of, which only tg.state arguments may have}}
func.func @only_state_is_a_shadow(%w: tensor<4xf32> {tg.param = "w"},
                                  %s: tensor<4xbf16> {tg.input = "s", tg.shadow_of = "w"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}) attributes {tg.train_step} {
  %l = tg.reduce_sum %w axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l, %w : tensor<f32>, tensor<4xf32>
}

// -----

// Rule: a shadow names a tg.param argument.
// expected-error @+1 {{is not a valid training step: 'amp.shadow.x' is a shadow of 'x', which is not a tg.param argument}}
func.func @shadow_of_a_parameter(%x: tensor<4xf32> {tg.input = "x"},
                                 %s: tensor<4xbf16> {tg.state = "amp.shadow.x", tg.shadow_of = "x"})
    -> (tensor<f32> {tg.loss}, tensor<4xbf16> {tg.update = "amp.shadow.x"}) attributes {tg.train_step} {
  %l = tg.reduce_sum %x axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l, %s : tensor<f32>, tensor<4xbf16>
}

// -----

// Rule: a shadow is its f32 parameter's shape in f16 or bf16.
// expected-error @+1 {{is not a valid training step: shadow 'amp.shadow.w' of 'w' must have the parameter's shape and f16 or bf16 elements, and the parameter f32 elements}}
func.func @shadow_is_the_parameter_narrowed(%w: tensor<4xf32> {tg.param = "w"},
                                            %s: tensor<4xf32> {tg.state = "amp.shadow.w", tg.shadow_of = "w"})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xf32> {tg.update = "amp.shadow.w"})
    attributes {tg.train_step} {
  %l = tg.reduce_sum %w axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l, %w, %s : tensor<f32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Rule: a shadow has no tg.init: its value is its parameter's.
// expected-error @+1 {{is not a valid training step: 'amp.shadow.w' has tg.init, but a shadow's value is its parameter's}}
func.func @shadow_has_no_init(%w: tensor<4xf32> {tg.param = "w"},
                              %s: tensor<4xbf16> {tg.state = "amp.shadow.w", tg.shadow_of = "w",
                                                  tg.init = dense<0.0> : tensor<4xbf16>})
    -> (tensor<f32> {tg.loss}, tensor<4xf32> {tg.update = "w"}, tensor<4xbf16> {tg.update = "amp.shadow.w"})
    attributes {tg.train_step} {
  %l = tg.reduce_sum %w axes = [0] : (tensor<4xf32>) -> tensor<f32>
  return %l, %w, %s : tensor<f32>, tensor<4xf32>, tensor<4xbf16>
}
