// RUN: mp-opt %s --split-input-file --verify-diagnostics

// One case per verifier rule of the tg ops, named after the rule.
// Rule: element types are f16, bf16, f32 or f64.
func.func @element_types_are_f16_bf16_f32_or_f64(%a: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of f16, bf16, f32 or f64 values}}
  %0 = tg.relu %a : tensor<4xi32>
  return
}

// -----

// Rule: shapes are static.
func.func @shapes_are_static(%a: tensor<?x4xf32>) {
  // expected-error @+1 {{must be statically shaped tensor}}
  %0 = tg.relu %a : tensor<?x4xf32>
  return
}

// -----

// Rule: the compute type is a float type.
func.func @the_compute_type_is_a_float_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'compute' failed to satisfy constraint}}
  %0 = tg.relu %a compute(i32) : tensor<4xf32>
  return
}

// -----

// Rule: tensors hold at most 2^48 elements.
func.func @tensors_hold_at_most_2_48_elements(%a: tensor<65536x65536x65537xf32>) {
  // expected-error @+1 {{operand #0 of type 'tensor<65536x65536x65537xf32>' has more than 2^48 elements}}
  %0 = tg.relu %a : tensor<65536x65536x65537xf32>
  return
}

// -----

// Rule: binary: operands share the element type.
func.func @binary_operands_share_the_element_type(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{failed to verify that all of {lhs, rhs, result} have same element type}}
  %0 = tg.add %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// Rule: binary: shapes broadcast.
func.func @binary_shapes_broadcast(%a: tensor<4x8xf32>, %b: tensor<3xf32>) {
  // expected-error @+2 {{operand shapes [4, 8] and [3] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.mul %a, %b : (tensor<4x8xf32>, tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: binary: the result has the broadcast shape.
func.func @binary_the_result_has_the_broadcast_shape(%a: tensor<4x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x8xf32>' are incompatible with return type(s) of operation 'tensor<8xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.sub %a, %b : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// Rule: unary: the result has the operand type.
func.func @unary_the_result_has_the_operand_type(%a: tensor<4xf32>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tg.tanh"(%a) : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Rule: activation grad: dy and the saved tensor share a type.
func.func @activation_grad_dy_and_the_saved_tensor_share_a_type(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{requires the same type for all operands and results}}
  %0 = "tg.relu_grad"(%a, %b) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return
}

// -----

// Rule: matmul: lhs has rank >= 2.
func.func @matmul_lhs_has_rank_2(%a: tensor<8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{lhs must have rank >= 2, got rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.matmul %a, %b : (tensor<8xf32>, tensor<8x4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: matmul: rhs has rank >= 2.
func.func @matmul_rhs_has_rank_2(%a: tensor<2x8xf32>, %b: tensor<8xf32>) {
  // expected-error @+2 {{rhs must have rank >= 2, got rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.matmul %a, %b : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2xf32>
  return
}

// -----

// Rule: matmul: contraction dimensions agree.
func.func @matmul_contraction_dimensions_agree(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>) {
  // expected-error @+2 {{contraction dimensions differ: lhs has 8, rhs has 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.matmul %a, %b : (tensor<2x8xf32>, tensor<4x8xf32>) -> tensor<2x8xf32>
  return
}

// -----

// Rule: matmul: transposes are applied before the contraction check.
func.func @matmul_transposes_are_applied_before_the_contraction_check(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{contraction dimensions differ: lhs has 2, rhs has 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.matmul %a, %b transpose_lhs : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<8x4xf32>
  return
}

// -----

// Rule: matmul: batch dimensions broadcast.
func.func @matmul_batch_dimensions_broadcast(%a: tensor<3x2x8xf32>, %b: tensor<4x8x4xf32>) {
  // expected-error @+2 {{batch dimensions [3] and [4] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.matmul %a, %b : (tensor<3x2x8xf32>, tensor<4x8x4xf32>) -> tensor<3x2x4xf32>
  return
}

// -----

// Rule: matmul: operands share the element type.
func.func @matmul_operands_share_the_element_type(%a: tensor<2x8xf16>, %b: tensor<8x4xf32>) {
  // expected-error @+1 {{failed to verify that all of {lhs, rhs} have same element type}}
  %0 = tg.matmul %a, %b : (tensor<2x8xf16>, tensor<8x4xf32>) -> tensor<2x4xf16>
  return
}

// -----

// Rule: matmul: the result shape is [..., M, N].
func.func @matmul_the_result_shape_is_m_n(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<2x4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.matmul %a, %b : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<4x2xf32>
  return
}

// -----

// Rule: softmax: the axis is in range.
func.func @softmax_the_axis_is_in_range(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{attribute 'axis' = 2 is out of range for rank 2}}
  %0 = tg.softmax %a axis = 2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: softmax: the axis is non-negative.
func.func @softmax_the_axis_is_non_negative(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
  %0 = tg.log_softmax %a axis = -1 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: softmax_grad: the axis is in range.
func.func @softmax_grad_the_axis_is_in_range(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{attribute 'axis' = 5 is out of range for rank 2}}
  %0 = tg.softmax_grad %a, %a axis = 5 : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: log_softmax_grad: the axis is in range.
func.func @log_softmax_grad_the_axis_is_in_range(%a: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'axis' = 1 is out of range for rank 1}}
  %0 = tg.log_softmax_grad %a, %a axis = 1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: layer_norm: the axis is in range.
func.func @layer_norm_the_axis_is_in_range(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{attribute 'axis' = 2 is out of range for rank 2}}
  %0:3 = tg.layer_norm %x, %g, %g axis = 2 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: layer_norm: scale has the normalised shape.
func.func @layer_norm_scale_has_the_normalised_shape(%x: tensor<4x8xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{scale shape [4] must equal the normalised shape [8]}}
  %0:3 = tg.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: layer_norm: scale and bias share a type.
func.func @layer_norm_scale_and_bias_share_a_type(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{failed to verify that all of {scale, bias} have same type}}
  %0:3 = tg.layer_norm %x, %g, %b axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf16>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: layer_norm: epsilon is positive.
func.func @layer_norm_epsilon_is_positive(%x: tensor<4x8xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{attribute 'epsilon' failed to satisfy constraint: 32-bit float attribute whose value is positive}}
  %0:3 = tg.layer_norm %x, %g, %g axis = 1 epsilon = 0.0 : (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: layer_norm: statistics have the leading shape.
func.func @layer_norm_statistics_have_the_leading_shape(%x: tensor<4x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{mean and rstd shape [8] must equal the leading shape [4]}}
  %0:3 = tg.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 compute(f32) : (tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Rule: layer_norm: the result has the input shape.
func.func @layer_norm_result_has_input_shape(%x: tensor<4x8xf16>, %g: tensor<8xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same shape}}
  %0:3 = tg.layer_norm %x, %g, %g axis = 1 epsilon = 1.0e-05 : (tensor<4x8xf16>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x4xf16>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: layer_norm_grad: dy and input share a shape.
func.func @layer_norm_grad_dy_and_input_share_a_shape(%dy: tensor<4x4xf16>, %x: tensor<4x8xf32>, %g: tensor<8xf32>, %m: tensor<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {grad, input} have same shape}}
  %0:3 = tg.layer_norm_grad %dy, %x, %g, %m, %m axis = 1 : (tensor<4x4xf16>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Rule: layer_norm_grad: statistics have the leading shape.
func.func @layer_norm_grad_statistics_have_the_leading_shape(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %m: tensor<8xf32>) {
  // expected-error @+2 {{mean and rstd shape [8] must equal the leading shape [4]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0:3 = tg.layer_norm_grad %x, %x, %g, %m, %m axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Rule: layer_norm_grad: mean and rstd share a type.
func.func @layer_norm_grad_mean_and_rstd_share_a_type(%x: tensor<4x8xf32>, %g: tensor<8xf32>, %m: tensor<4xf32>, %r: tensor<4xf16>) {
  // expected-error @+1 {{failed to verify that all of {mean, rstd} have same type}}
  %0:3 = tg.layer_norm_grad %x, %x, %g, %m, %r axis = 1 : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf16>) -> (tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

// Rule: reductions: axes are in range.
func.func @reductions_axes_are_in_range(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{axes[0] = 2 is out of range for rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.reduce_sum %a axes = [2] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: reductions: axes are strictly increasing.
func.func @reductions_axes_are_strictly_increasing(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{axes must be strictly increasing, got [1, 0]}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.reduce_mean %a axes = [1, 0] : (tensor<4x8xf32>) -> tensor<f32>
  return
}

// -----

// Rule: reductions: the result drops or keeps the reduced dimensions.
func.func @reductions_the_result_drops_or_keeps_the_reduced_dimensions(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.reduce_max %a axes = [1] : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return
}

// -----

// Rule: transpose: one permutation entry per dimension.
func.func @transpose_one_permutation_entry_per_dimension(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation has 1 entries but the input has rank 2}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.transpose %a permutation = [0] : (tensor<4x8xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: transpose: the permutation is a permutation.
func.func @transpose_the_permutation_is_a_permutation(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{permutation [1, 1] is not a permutation of [0, 2)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.transpose %a permutation = [1, 1] : (tensor<4x8xf32>) -> tensor<8x8xf32>
  return
}

// -----

// Rule: reshape: the element count is preserved.
func.func @reshape_the_element_count_is_preserved(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{input has 32 elements but the result has 30}}
  %0 = tg.reshape %a : (tensor<4x8xf32>) -> tensor<30xf32>
  return
}

// -----

// Rule: reshape: the element type is preserved.
func.func @reshape_the_element_type_is_preserved(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same element type}}
  %0 = tg.reshape %a : (tensor<4x8xf32>) -> tensor<32xf16>
  return
}

// -----

// Rule: broadcast_to: shapes are compatible.
func.func @broadcast_to_shapes_are_compatible(%a: tensor<3xf32>) {
  // expected-error @+1 {{input shape [3] cannot be broadcast to [4, 8]}}
  %0 = tg.broadcast_to %a : (tensor<3xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: broadcast_to: the input rank is at most the result rank.
func.func @broadcast_to_the_input_rank_is_at_most_the_result_rank(%a: tensor<1x8xf32>) {
  // expected-error @+1 {{input shape [1, 8] cannot be broadcast to [8]}}
  %0 = tg.broadcast_to %a : (tensor<1x8xf32>) -> tensor<8xf32>
  return
}

// -----

// Rule: concat: at least one input.
func.func @concat_at_least_one_input() {
  // expected-error @+2 {{needs at least one input}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = "tg.concat"() {axis = 0 : i64} : () -> tensor<4xf32>
  return
}

// -----

// Rule: concat: the axis is in range.
func.func @concat_the_axis_is_in_range(%a: tensor<4xf32>) {
  // expected-error @+2 {{attribute 'axis' = 1 is out of range for rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.concat %a, %a axis = 1 : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

// Rule: concat: inputs share the element type.
func.func @concat_inputs_share_the_element_type(%a: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+2 {{input #1 has element type 'f16' but input #0 has 'f32'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.concat %a, %b axis = 0 : (tensor<4xf32>, tensor<4xf16>) -> tensor<8xf32>
  return
}

// -----

// Rule: concat: inputs share the rank.
func.func @concat_inputs_share_the_rank(%a: tensor<4xf32>, %b: tensor<4x1xf32>) {
  // expected-error @+2 {{input #1 has rank 2 but input #0 has rank 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.concat %a, %b axis = 0 : (tensor<4xf32>, tensor<4x1xf32>) -> tensor<8xf32>
  return
}

// -----

// Rule: concat: inputs agree off the axis.
func.func @concat_inputs_agree_off_the_axis(%a: tensor<4x2xf32>, %b: tensor<3x2xf32>) {
  // expected-error @+2 {{input #1 has size 3 in dimension 0 but input #0 has 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.concat %a, %b axis = 1 : (tensor<4x2xf32>, tensor<3x2xf32>) -> tensor<4x4xf32>
  return
}

// -----

// Rule: slice: one entry per dimension.
func.func @slice_one_entry_per_dimension(%a: tensor<4x8xf32>) {
  // expected-error @+2 {{offsets, sizes and strides need 2 entries each (the input rank)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.slice %a offsets = [0] sizes = [2] : (tensor<4x8xf32>) -> tensor<2xf32>
  return
}

// -----

// Rule: slice: strides are positive.
func.func @slice_strides_are_positive(%a: tensor<4xf32>) {
  // expected-error @+2 {{strides[0] = 0 must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.slice %a offsets = [0] sizes = [2] strides = [0] : (tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

// Rule: slice: offsets and sizes are non-negative.
func.func @slice_offsets_and_sizes_are_non_negative(%a: tensor<4xf32>) {
  // expected-error @+2 {{dimension 0: offset -1 and size 2 must be non-negative and within 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.slice %a offsets = [-1] sizes = [2] : (tensor<4xf32>) -> tensor<2xf32>
  return
}

// -----

// Rule: slice: the selection lies inside the input.
func.func @slice_the_selection_lies_inside_the_input(%a: tensor<8xf32>) {
  // expected-error @+2 {{dimension 0: slice of 4 elements from offset 2 with stride 2 runs past the size 8}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.slice %a offsets = [2] sizes = [4] strides = [2] : (tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: slice: the selection lies inside the input (one element at the
// end, with a stride: -1 / 2 rounds to 0, which once let it through).
func.func @slice_one_element_at_the_end(%a: tensor<4xf32>) {
  // expected-error @+2 {{dimension 0: slice of 1 elements from offset 4 with stride 2 runs past the size 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.slice %a offsets = [4] sizes = [1] strides = [2] : (tensor<4xf32>) -> tensor<1xf32>
  return
}

// -----

// Rule: slice_grad: grad has the rank of the result.
func.func @slice_grad_rank(%a: tensor<4xf32>) {
  // expected-error @+1 {{'tg.slice_grad' op grad has rank 1, the result 2}}
  %0 = tg.slice_grad %a offsets = [0, 0] : (tensor<4xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: slice_grad: the selection lies inside the result.
func.func @slice_grad_the_selection_lies_inside_the_result(%a: tensor<4xf32>) {
  // expected-error @+1 {{dimension 0: slice of 4 elements from offset 2 with stride 2 runs past the size 8}}
  %0 = tg.slice_grad %a offsets = [2] strides = [2] : (tensor<4xf32>) -> tensor<8xf32>
  return
}

// -----

// Rule: gather: the table has rank >= 1.
func.func @gather_the_table_has_rank_1(%t: tensor<f32>, %i: tensor<4xi32>) {
  // expected-error @+2 {{table must have rank >= 1}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.gather %t[%i] : (tensor<f32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

// Rule: gather: ids are integers.
func.func @gather_ids_are_integers(%t: tensor<8x4xf32>, %i: tensor<4xf32>) {
  // expected-error @+1 {{operand #1 must be statically shaped tensor of i32 or i64 values}}
  %0 = tg.gather %t[%i] : (tensor<8x4xf32>, tensor<4xf32>) -> tensor<4x4xf32>
  return
}

// -----

// Rule: gather: the result is ids shape followed by the row shape.
func.func @gather_the_result_is_ids_shape_followed_by_the_row_shape(%t: tensor<8x4xf32>, %i: tensor<4xi32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<4x4xf32>' are incompatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.gather %t[%i] : (tensor<8x4xf32>, tensor<4xi32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: constant: the value has the result type.
func.func @constant_the_value_has_the_result_type() {
  // expected-error @+1 {{failed to verify that all of {value, result} have same type}}
  %0 = "tg.constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf16>
  return
}

// -----

// Rule: cast: the shape does not change.
func.func @cast_the_shape_does_not_change(%a: tensor<4xf32>) {
  // expected-error @+1 {{operand type 'tensor<4xf32>' and result type 'tensor<2xf16>' are cast incompatible}}
  %0 = tg.cast %a : tensor<4xf32> to tensor<2xf16>
  return
}

// -----

// Rule: softmax_cross_entropy: labels drop the class dimension of the logits.
func.func @softmax_cross_entropy_labels_drop_the_class_dimension_of_the_logits(%l: tensor<4x10xf32>, %y: tensor<10xi32>) {
  // expected-error @+1 {{labels shape [10] must equal the logits shape without the class dimension [4]}}
  %0 = tg.softmax_cross_entropy %l, %y : (tensor<4x10xf32>, tensor<10xi32>) -> tensor<f32>
  return
}

// -----

// Rule: softmax_cross_entropy: logits have a class dimension.
func.func @softmax_cross_entropy_logits_have_a_class_dimension(%l: tensor<f32>, %y: tensor<i32>) {
  // expected-error @+1 {{logits must have rank >= 1 (classes last)}}
  %0 = tg.softmax_cross_entropy %l, %y : (tensor<f32>, tensor<i32>) -> tensor<f32>
  return
}

// -----

// Rule: softmax_cross_entropy: the loss is rank 0.
func.func @softmax_cross_entropy_the_loss_is_rank_0(%l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{result #0 must be 0D tensor of f16, bf16, f32 or f64 values}}
  %0 = tg.softmax_cross_entropy %l, %y : (tensor<4x10xf32>, tensor<4xi32>) -> tensor<4xf32>
  return
}

// -----

// Rule: softmax_cross_entropy_grad: labels drop the class dimension.
func.func @softmax_cross_entropy_grad_labels_drop_the_class_dimension(%s: tensor<f32>, %l: tensor<4x10xf32>, %y: tensor<4x10xi32>) {
  // expected-error @+1 {{labels shape [4, 10] must equal the logits shape without the class dimension [4]}}
  %0 = tg.softmax_cross_entropy_grad %s, %l, %y : (tensor<f32>, tensor<4x10xf32>, tensor<4x10xi32>) -> tensor<4x10xf32>
  return
}

// -----

// Rule: softmax_cross_entropy_grad: the seed is rank 0.
func.func @softmax_cross_entropy_grad_the_seed_is_rank_0(%s: tensor<1xf32>, %l: tensor<4x10xf32>, %y: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be 0D tensor}}
  %0 = tg.softmax_cross_entropy_grad %s, %l, %y : (tensor<1xf32>, tensor<4x10xf32>, tensor<4xi32>) -> tensor<4x10xf32>
  return
}

// -----

// Rule: mse_loss: prediction and target share a shape.
func.func @mse_loss_prediction_and_target_share_a_shape(%p: tensor<4xf32>, %t: tensor<5xf16>) {
  // expected-error @+1 {{failed to verify that all of {prediction, target} have same shape}}
  %0 = tg.mse_loss %p, %t : (tensor<4xf32>, tensor<5xf16>) -> tensor<f32>
  return
}

// -----

// Rule: mse_loss_grad: the result has the prediction shape.
func.func @mse_loss_grad_the_result_has_the_prediction_shape(%s: tensor<f32>, %p: tensor<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {prediction, target, result} have same shape}}
  %0 = tg.mse_loss_grad %s, %p, %p : (tensor<f32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x2xf32>
  return
}

// -----

// Rule: gather_grad: grad is the ids shape followed by the row shape.
func.func @gather_grad_grad_is_the_ids_shape_followed_by_the_row_shape(%g: tensor<4x3xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{grad shape [4, 3] must be the ids shape followed by the row shape [4, 8]}}
  %0 = tg.gather_grad %g[%i] : (tensor<4x3xf32>, tensor<4xi32>) -> tensor<10x8xf32>
  return
}

// -----

// Rule: gather_grad: the table has rank >= 1.
func.func @gather_grad_the_table_has_rank_1(%g: tensor<4xf32>, %i: tensor<4xi32>) {
  // expected-error @+1 {{result table must have rank >= 1}}
  %0 = tg.gather_grad %g[%i] : (tensor<4xf32>, tensor<4xi32>) -> tensor<f32>
  return
}

// -----

// Rule: sgd_update: lr is finite and non-negative.
func.func @sgd_update_lr_is_finite_and_non_negative(%w: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'lr' = -0.1 must be in [0, inf)}}
  %0 = tg.sgd_update %w, %w {lr = -0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: sgd_update: momentum is in [0, 1).
func.func @sgd_update_momentum_is_in_0_1(%w: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'momentum' = 1 must be in [0, 1)}}
  %0:2 = tg.sgd_update %w, %w momentum_buffer(%w) {lr = 0.1 : f32, momentum = 1.0 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: sgd_update: weight decay is non-negative.
func.func @sgd_update_weight_decay_is_non_negative(%w: tensor<4xf32>) {
  // expected-error @+1 {{attribute 'weight_decay' = -1 must be in [0, inf)}}
  %0 = tg.sgd_update %w, %w {lr = 0.1 : f32, weight_decay = -1.0 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: sgd_update: grad has the param shape.
func.func @sgd_update_grad_has_the_param_shape(%w: tensor<4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{grad shape [8] must equal the param shape [4]}}
  %0 = tg.sgd_update %w, %g {lr = 0.1 : f32} : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: sgd_update: momentum needs a buffer.
func.func @sgd_update_momentum_needs_a_buffer(%w: tensor<4xf32>) {
  // expected-error @+1 {{a momentum_buffer operand is required exactly when 'momentum' is non-zero (momentum = 0.9)}}
  %0 = tg.sgd_update %w, %w {lr = 0.1 : f32, momentum = 0.9 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: sgd_update: a buffer needs momentum.
func.func @sgd_update_a_buffer_needs_momentum(%w: tensor<4xf32>) {
  // expected-error @+1 {{a momentum_buffer operand is required exactly when 'momentum' is non-zero (momentum = 0)}}
  %0:2 = tg.sgd_update %w, %w momentum_buffer(%w) {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: sgd_update: a buffer operand comes with a buffer result.
func.func @sgd_update_a_buffer_operand_comes_with_a_buffer_result(%w: tensor<4xf32>) {
  // expected-error @+1 {{the new momentum buffer result must be present exactly when a momentum_buffer operand is}}
  %0 = tg.sgd_update %w, %w momentum_buffer(%w) {lr = 0.1 : f32, momentum = 0.5 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: sgd_update: the buffer has the param type.
func.func @sgd_update_the_buffer_has_the_param_type(%w: tensor<4xf32>, %b: tensor<4xf16>) {
  // expected-error @+1 {{momentum buffer and its result must have the param type}}
  %0:2 = tg.sgd_update %w, %w momentum_buffer(%b) {lr = 0.1 : f32, momentum = 0.5 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>) -> (tensor<4xf32>, tensor<4xf16>)
  return
}

// -----

// Rule: sgd_update: nesterov needs momentum.
func.func @sgd_update_nesterov_needs_momentum(%w: tensor<4xf32>) {
  // expected-error @+1 {{'nesterov' needs a non-zero 'momentum'}}
  %0 = tg.sgd_update %w, %w {lr = 0.1 : f32, nesterov} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}

// -----

// Rule: sgd_update: the skip predicate is a rank-0 i1 tensor.
func.func @sgd_update_the_skip_predicate_is_a_rank_0_i1_tensor(%w: tensor<4xf32>, %p: tensor<i32>) {
  // expected-error @+1 {{operand #2 must be 0D tensor of 1-bit signless integer values}}
  %0 = tg.sgd_update %w, %w skip_if(%p) {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  return
}

// -----

// Rule: sgd_update: the result has the param type.
func.func @sgd_update_the_result_has_the_param_type(%w: tensor<4xf32>) {
  // expected-error @+1 {{failed to verify that all of {param, new_param} have same type}}
  %0 = tg.sgd_update %w, %w {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Rule: adam_update: lr is non-negative.
func.func @adam_update_lr_is_non_negative(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{attribute 'lr' = -1 must be in [0, inf)}}
  %0:4 = tg.adam_update %w, %w, %w, %w, %t {lr = -1.0 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: beta1 is in [0, 1).
func.func @adam_update_beta1_is_in_0_1(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{attribute 'beta1' = 1 must be in [0, 1)}}
  %0:4 = tg.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f32, beta1 = 1.0 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: beta2 is in [0, 1).
func.func @adam_update_beta2_is_in_0_1(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{attribute 'beta2' = -0.5 must be in [0, 1)}}
  %0:4 = tg.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f32, beta2 = -0.5 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: epsilon is non-negative.
func.func @adam_update_epsilon_is_non_negative(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{attribute 'epsilon' = -1 must be in [0, inf)}}
  %0:4 = tg.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f32, epsilon = -1.0 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: weight decay is non-negative.
func.func @adam_update_weight_decay_is_non_negative(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{attribute 'weight_decay' = -0.5 must be in [0, inf)}}
  %0:4 = tg.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f32, weight_decay = -0.5 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: grad has the param shape.
func.func @adam_update_grad_has_the_param_shape(%w: tensor<4xf32>, %g: tensor<2xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{grad shape [2] must equal the param shape [4]}}
  %0:4 = tg.adam_update %w, %g, %w, %w, %t {lr = 0.1 : f32} : (tensor<4xf32>, tensor<2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: moments have the param shape.
func.func @adam_update_moments_have_the_param_shape(%w: tensor<4xf32>, %m: tensor<2xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{first_moment shape [2] must equal the param shape [4]}}
  %0:4 = tg.adam_update %w, %w, %m, %m, %t {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<i64>) -> (tensor<4xf32>, tensor<2xf32>, tensor<2xf32>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: both moments share a type.
func.func @adam_update_both_moments_share_a_type(%w: tensor<4xf32>, %m: tensor<4xf16>, %t: tensor<i64>) {
  // expected-error @+1 {{failed to verify that all of {first_moment, second_moment, new_first_moment, new_second_moment} have same type}}
  %0:4 = tg.adam_update %w, %w, %w, %m, %t {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<i64>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf16>, tensor<i64>)
  return
}

// -----

// Rule: adam_update: the step counter is a rank-0 i64 tensor.
func.func @adam_update_the_step_counter_is_a_rank_0_i64_tensor(%w: tensor<4xf32>, %t: tensor<i32>) {
  // expected-error @+1 {{operand #4 must be 0D tensor of 64-bit signless integer values}}
  %0:4 = tg.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i32>)
  return
}

// -----

// Rule: apply_loss_scale: the scale is a rank-0 f32 tensor.
func.func @apply_loss_scale_the_scale_is_a_rank_0_f32_tensor(%x: tensor<f32>, %s: tensor<f16>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 32-bit float values}}
  %0 = tg.apply_loss_scale %x, %s : (tensor<f32>, tensor<f16>) -> tensor<f32>
  return
}

// -----

// Rule: unscale_grads: at least one gradient.
func.func @unscale_grads_at_least_one_gradient(%s: tensor<f32>) {
  // expected-error @+1 {{needs at least one gradient}}
  %0 = tg.unscale_grads by %s : (tensor<f32>) -> tensor<i1>
  return
}

// -----

// Rule: unscale_grads: one unscaled result per gradient.
func.func @unscale_grads_one_unscaled_result_per_gradient(%g: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{has 1 gradients but 2 unscaled results}}
  %0:3 = tg.unscale_grads %g by %s : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<i1>)
  return
}

// -----

// Rule: unscale_grads: each unscaled result has its gradient's type.
func.func @unscale_grads_each_unscaled_result_has_its_gradient_s_type(%g: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{unscaled result #0 has type 'tensor<4xf16>' but gradient #0 has type 'tensor<4xf32>'}}
  %0:2 = tg.unscale_grads %g by %s : (tensor<4xf32>, tensor<f32>) -> (tensor<4xf16>, tensor<i1>)
  return
}

// -----

// Rule: all_reduce: at least one input.
func.func @all_reduce_at_least_one_input() {
  // expected-error @+1 {{needs at least one input}}
  tg.all_reduce mean : () -> ()
  return
}

// -----

// Rule: all_reduce: one result per input.
func.func @all_reduce_one_result_per_input(%g: tensor<4xf32>) {
  // expected-error @+1 {{has 1 inputs but 2 results}}
  %0:2 = tg.all_reduce sum %g : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: all_reduce: each result has its input's type.
func.func @all_reduce_each_result_has_its_input_s_type(%g: tensor<4xf32>) {
  // expected-error @+1 {{result #0 has type 'tensor<4xf16>' but input #0 has type 'tensor<4xf32>'}}
  %0 = tg.all_reduce mean %g : (tensor<4xf32>) -> tensor<4xf16>
  return
}

// -----

// Rule: all_reduce: one element type for all inputs.
func.func @all_reduce_one_element_type_for_all_inputs(%a: tensor<4xf32>, %b: tensor<2xf16>) {
  // expected-error @+1 {{input #1 has element type 'f16' but input #0 has 'f32': one all-reduce sends one element type}}
  %0:2 = tg.all_reduce mean %a, %b : (tensor<4xf32>, tensor<2xf16>) -> (tensor<4xf32>, tensor<2xf16>)
  return
}

// -----

// Rule: update_loss_scale: growth factor > 1.
func.func @update_loss_scale_growth_factor_1(%s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{attribute 'growth_factor' = 1 must be finite and greater than 1}}
  %0:2 = tg.update_loss_scale %s, %n, %p {growth_factor = 1.0 : f32} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Rule: update_loss_scale: backoff factor < 1.
func.func @update_loss_scale_backoff_factor_1(%s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{attribute 'backoff_factor' = 1 must be in (0, 1)}}
  %0:2 = tg.update_loss_scale %s, %n, %p {backoff_factor = 1.0 : f32} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Rule: update_loss_scale: backoff factor > 0.
func.func @update_loss_scale_backoff_factor_0(%s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{attribute 'backoff_factor' = 0 must be in (0, 1)}}
  %0:2 = tg.update_loss_scale %s, %n, %p {backoff_factor = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Rule: update_loss_scale: growth interval >= 1.
func.func @update_loss_scale_growth_interval_1(%s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{attribute 'growth_interval' = 0 must be at least 1}}
  %0:2 = tg.update_loss_scale %s, %n, %p {growth_interval = 0 : i64} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Rule: update_loss_scale: min scale is positive.
func.func @update_loss_scale_min_scale_is_positive(%s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{attribute 'min_scale' = 0 must be positive and finite}}
  %0:2 = tg.update_loss_scale %s, %n, %p {min_scale = 0.0 : f32} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Rule: update_loss_scale: max scale is finite.
func.func @update_loss_scale_max_scale_is_finite(%s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{attribute 'max_scale' = inf must be positive and finite}}
  %0:2 = tg.update_loss_scale %s, %n, %p {max_scale = 0x7F800000 : f32} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Rule: update_loss_scale: min scale <= max scale.
func.func @update_loss_scale_min_scale_max_scale(%s: tensor<f32>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{'min_scale' = 4 exceeds 'max_scale' = 2}}
  %0:2 = tg.update_loss_scale %s, %n, %p {min_scale = 4.0 : f32, max_scale = 2.0 : f32} : (tensor<f32>, tensor<i64>, tensor<i1>) -> (tensor<f32>, tensor<i64>)
  return
}

// -----

// Rule: apply_loss_scale: the result has the input type.
func.func @apply_loss_scale_keeps_the_type(%x: tensor<f32>, %s: tensor<f32>) {
  // expected-error @+1 {{failed to verify that all of {input, result} have same type}}
  %0 = tg.apply_loss_scale %x, %s : (tensor<f32>, tensor<f32>) -> tensor<f16>
  return
}

// -----

// Rule: adam_update: results have the types of the inputs they replace.
func.func @adam_update_results_keep_types(%w: tensor<4xf32>, %t: tensor<i64>) {
  // expected-error @+1 {{failed to verify that all of {param, new_param} have same type}}
  %0:4 = tg.adam_update %w, %w, %w, %w, %t {lr = 0.1 : f32} : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<i64>) -> (tensor<4xf16>, tensor<4xf32>, tensor<4xf32>, tensor<i64>)
  return
}

// -----

// Rule: update_loss_scale: the scale is a rank-0 f32 tensor.
func.func @update_loss_scale_scale_is_f32(%s: tensor<f16>, %n: tensor<i64>, %p: tensor<i1>) {
  // expected-error @+1 {{operand #0 must be 0D tensor of 32-bit float values}}
  %0:2 = tg.update_loss_scale %s, %n, %p : (tensor<f16>, tensor<i64>, tensor<i1>) -> (tensor<f16>, tensor<i64>)
  return
}

// -----

// Rule: tensor sizes are bounded for results too.
func.func @result_sizes_are_bounded(%a: tensor<1x65537xf32>) {
  // expected-error @+1 {{result #0 of type 'tensor<4294967296x65537xf32>' has more than 2^48 elements}}
  %0 = tg.broadcast_to %a : (tensor<1x65537xf32>) -> tensor<4294967296x65537xf32>
  return
}

// -----

// Rule: conv2d activations are rank 4.
func.func @conv_activations_are_rank_4(%x: tensor<2x3x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{input must be a rank-4 tensor}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<2x3x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// Rule: groups divide the input and output channels.
func.func @conv_groups_divide_channels(%x: tensor<2x3x8x8xf32>, %w: tensor<4x3x3x3xf32>) {
  // expected-error @+2 {{groups = 2 must divide the input channels (3) and the output channels (4)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2 : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// Rule: the filter's input channels times groups are the input's channels.
func.func @conv_filter_channels(%x: tensor<2x4x8x8xf32>, %w: tensor<4x4x3x3xf32>) {
  // expected-error @+2 {{expects 8 input channels with groups = 2, the input has 4}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 2 : (tensor<2x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<2x4x6x6xf32>
  return
}

// -----

// Rule: the dilated window fits the padded input.
func.func @conv_window_fits(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{the window (5) does not fit in the height (4 plus padding 0)}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [2, 1] groups = 1 : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x1x2xf32>
  return
}

// -----

// Rule: strides are positive.
func.func @conv_strides_positive(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{strides, dilations and the window must be positive}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.conv2d %x, %w strides = [0, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

// Rule: padding has four entries.
func.func @conv_padding_has_four_entries(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{attribute 'padding' failed to satisfy constraint}}
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0] dilations = [1, 1] groups = 1 : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return
}

// -----

// Rule: a convolution's result has the geometry's shape.
func.func @conv_result_shape(%x: tensor<1x1x4x4xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+2 {{inferred type(s) 'tensor<1x1x2x2xf32>' are incompatible with return type(s) of operation 'tensor<1x1x3x3xf32>'}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.conv2d %x, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  return
}

// -----

// Rule: a convolution gradient's grad has the forward result's shape.
func.func @conv_grad_shape(%dy: tensor<1x1x3x3xf32>, %w: tensor<1x1x3x3xf32>) {
  // expected-error @+1 {{grad (the forward result) must have shape [1, 1, 2, 2]}}
  %0 = tg.conv2d_grad_input %dy, %w strides = [1, 1] padding = [0, 0, 0, 0] dilations = [1, 1] groups = 1 : (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// Rule: pooling padding is smaller than the window.
func.func @pool_padding_smaller_than_window(%x: tensor<1x1x4x4xf32>) {
  // expected-error @+2 {{padding must be smaller than the window}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.max_pool2d %x window = [2, 2] strides = [1, 1] padding = [2, 0, 0, 0] : (tensor<1x1x4x4xf32>) -> tensor<1x1x5x3xf32>
  return
}

// -----

// Rule: a pooling gradient's grad has the forward result's shape.
func.func @pool_grad_shape(%dy: tensor<1x1x3x3xf32>, %x: tensor<1x1x4x4xf32>) {
  // expected-error @+1 {{grad (the forward result) must have shape [1, 1, 2, 2]}}
  %0 = tg.max_pool2d_grad %dy, %x window = [2, 2] strides = [2, 2] padding = [0, 0, 0, 0] : (tensor<1x1x3x3xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return
}

// -----

// Rule: batch norm parameters and statistics have one value per channel.
func.func @batch_norm_per_channel(%x: tensor<2x3x4x4xf32>, %g: tensor<4xf32>, %r: tensor<3xf32>) {
  // expected-error @+1 {{scale must have shape [3] (one value per channel)}}
  %y, %m, %s, %rm, %rv = tg.batch_norm %x, %g, %g, %r, %r epsilon = 1.0e-05 momentum = 1.0e-01 : (tensor<2x3x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// Rule: the batch norm momentum is in [0, 1].
func.func @batch_norm_momentum(%x: tensor<2x3x4x4xf32>, %g: tensor<3xf32>) {
  // expected-error @+1 {{momentum must be in [0, 1]}}
  %y, %m, %s, %rm, %rv = tg.batch_norm %x, %g, %g, %g, %g epsilon = 1.0e-05 momentum = 1.5 : (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>)
  return
}

// -----

// Rule: channels_last reads the channels from the last dimension.
func.func @batch_norm_channels_last(%x: tensor<2x4x4x3xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{scale must have shape [3] (one value per channel)}}
  %y = tg.batch_norm_inference %x, %g, %g, %g, %g epsilon = 1.0e-05 channels_last : (tensor<2x4x4x3xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x4x3xf32>
  return
}

// -----

// Rule: dropout's rate is in [0, 1).
func.func @dropout_rate_one(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{rate must be in [0, 1), got 1}}
  %0 = tg.dropout %x, %s rate = 1.0 stream = 0 : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

func.func @dropout_rate_negative(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{rate must be in [0, 1), got -1.000000e-01}}
  %0 = tg.dropout %x, %s rate = -0.1 stream = 0 : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// Rule: the seed is a rank-0 i64 tensor.
func.func @dropout_seed_type(%x: tensor<4xf32>, %s: tensor<i32>) {
  // expected-error @+1 {{operand #1 must be 0D tensor of 64-bit signless integer values}}
  %0 = tg.dropout %x, %s rate = 0.5 stream = 0 : (tensor<4xf32>, tensor<i32>) -> tensor<4xf32>
  return
}

// -----

// Rule: streams are non-negative.
func.func @dropout_stream(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{attribute 'stream' failed to satisfy constraint}}
  %0 = tg.dropout %x, %s rate = 0.5 stream = -1 : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// Rule: dropout keeps its input's type.
func.func @dropout_type(%x: tensor<4xf32>, %s: tensor<i64>) {
  // expected-error @+1 {{all of {input, result} have same type}}
  %0 = tg.dropout %x, %s rate = 0.5 stream = 0 : (tensor<4xf32>, tensor<i64>) -> tensor<4xf16>
  return
}

// -----

// Rule: tensor_stats returns one row of six statistics.
func.func @tensor_stats_one_row(%x: tensor<4xf16>) {
  // expected-error @+1 {{result must be tensor<1x6xf32> (rows of min, max, amax, smallest non-zero magnitude, NaN count, infinity count), got 'tensor<2x6xf32>'}}
  %0 = tg.tensor_stats %x : tensor<4xf16> -> tensor<2x6xf32>
  return
}

// -----

// Rule: tensor_stats reads floating-point tensors.
func.func @tensor_stats_float_input(%x: tensor<4xi32>) {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of}}
  %0 = tg.tensor_stats %x : tensor<4xi32> -> tensor<1x6xf32>
  return
}

// -----

// Rule: record_nonfinite needs at least one row of statistics.
func.func @record_nonfinite_needs_rows(%s: tensor<i64>) {
  // expected-error @+1 {{needs at least one row of statistics}}
  %0 = tg.record_nonfinite %s, {op_id = 0 : i64} : (tensor<i64>) -> tensor<i64>
  return
}

// -----

// Rule: record_nonfinite reads rows of six statistics.
func.func @record_nonfinite_rows_of_six(%s: tensor<i64>, %r: tensor<1x5xf32>) {
  // expected-error @+1 {{statistics #0 must be tensor<Kx6xf32> with K >= 1}}
  %0 = tg.record_nonfinite %s, %r {op_id = 0 : i64} : (tensor<i64>, tensor<1x5xf32>) -> tensor<i64>
  return
}

// -----

// Rule: op ids are non-negative.
func.func @record_nonfinite_op_id(%s: tensor<i64>, %r: tensor<1x6xf32>) {
  // expected-error @+1 {{attribute 'op_id' failed to satisfy constraint}}
  %0 = tg.record_nonfinite %s, %r {op_id = -1 : i64} : (tensor<i64>, tensor<1x6xf32>) -> tensor<i64>
  return
}

// -----

// Rule: tg.numerics is a table of entries with an id and a name.
// expected-error @+1 {{'tg.numerics' must be an array of dictionaries with an integer 'id' and a string 'name', on a function}}
func.func @numerics_table(%s: tensor<i64>) attributes {tg.numerics = [{id = 0 : i64}]} {
  return
}

// -----

// Rule: tg.compare's operands share an element type and broadcast.
func.func @compare_types(%a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xi1> {
  // expected-error @+1 {{failed to verify that all of {lhs, rhs} have same element type}}
  %0 = tg.compare eq, %a, %b : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @compare_shapes(%a: tensor<4xf32>, %b: tensor<3xf32>) -> tensor<4xi1> {
  // expected-error @+2 {{operand shapes [4] and [3] are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.compare lt, %a, %b : (tensor<4xf32>, tensor<3xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// Rule: tg.compare gives i1.
func.func @compare_result(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{result #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tg.compare lt, %a, %a : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Rule: tg.select's condition is i1 and its values share a type.
func.func @select_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{operand #0 must be statically shaped tensor of 1-bit signless integer values}}
  %0 = tg.select %c, %a, %a : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_values(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{failed to verify that all of {on_true, on_false, result} have same element type}}
  %0 = tg.select %c, %a, %b : (tensor<4xi1>, tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @select_shapes(%c: tensor<3xi1>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+2 {{are not broadcast-compatible}}
  // expected-error @+1 {{failed to infer returned types}}
  %0 = tg.select %c, %a, %a : (tensor<3xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Rule: cumsum: the axis is in range.
func.func @cumsum_the_axis_is_in_range(%a: tensor<4x8xf32>) {
  // expected-error @+1 {{attribute 'axis' = 2 is out of range for rank 2}}
  %0 = tg.cumsum %a axis = 2 : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return
}

// -----

// Rule: random_uniform: finite bounds, low <= high.
func.func @random_uniform_bounds(%seed: tensor<i64>) {
  // expected-error @+1 {{needs finite bounds with low <= high, got [2.000000e+00, 1.000000e+00)}}
  %0 = tg.random_uniform %seed stream = 0 low = 2.0 high = 1.0 : (tensor<i64>) -> tensor<4xf32>
  return
}

// -----

// Rule: fused_matmul: the result has the product's shape.
func.func @fused_matmul_result_shape(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{result shape [4, 6] is not the product's [4, 5]}}
  %0 = tg.fused_matmul %a, %b : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x6xf32>
  return
}

// -----

// Rule: fused_matmul: the bias is a vector of the last dimension.
func.func @fused_matmul_bias_length(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>, %bias: tensor<4xf32>) {
  // expected-error @+1 {{bias of shape [4] is not a vector of the result's last dimension (5)}}
  %0 = tg.fused_matmul %a, %b bias(%bias) : (tensor<4x3xf32>, tensor<3x5xf32>, tensor<4xf32>) -> tensor<4x5xf32>
  return
}

// -----

// Rule: fused_matmul: the residual has the result's type.
func.func @fused_matmul_residual_type(%a: tensor<4x3xbf16>, %b: tensor<3x5xbf16>, %r: tensor<4x5xf32>) {
  // expected-error @+1 {{residual of type 'tensor<4x5xf32>' is not of the result's type 'tensor<4x5xbf16>'}}
  %0 = tg.fused_matmul %a, %b residual(%r) compute(f32) : (tensor<4x3xbf16>, tensor<3x5xbf16>, tensor<4x5xf32>) -> tensor<4x5xbf16>
  return
}

// -----

// Rule: fused_matmul: the epilogue runs on f32 or f64 accumulators.
func.func @fused_matmul_wide_accumulators(%a: tensor<4x3xf16>, %b: tensor<3x5xf16>) {
  // expected-error @+1 {{accumulates in 'f16': the epilogue needs f32 or f64 accumulators}}
  %0 = tg.fused_matmul %a, %b activation(relu) : (tensor<4x3xf16>, tensor<3x5xf16>) -> tensor<4x5xf16>
  return
}

// -----

// Rule: fused_matmul: a finite alpha.
func.func @fused_matmul_alpha(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{alpha must be finite}}
  %0 = tg.fused_matmul %a, %b {alpha = 0x7FF8000000000000 : f64} : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// Rule: fused_matmul: a bias_grad result names the operand it sums.
func.func @fused_matmul_bias_grad_operand(%a: tensor<6x4xf32>, %b: tensor<6x5xf32>) {
  // expected-error @+1 {{has a bias_grad result but no bias_grad(lhs or rhs) to sum}}
  %0:2 = tg.fused_matmul %a, %b transpose_lhs : (tensor<6x4xf32>, tensor<6x5xf32>) -> (tensor<4x5xf32>, tensor<4xf32>)
  return
}

// -----

// Rule: fused_matmul: bias_grad(...) comes with its result.
func.func @fused_matmul_bias_grad_result(%a: tensor<6x4xf32>, %b: tensor<6x5xf32>) {
  // expected-error @+1 {{has bias_grad(lhs) but no bias_grad result}}
  %0 = tg.fused_matmul %a, %b transpose_lhs bias_grad(lhs) : (tensor<6x4xf32>, tensor<6x5xf32>) -> tensor<4x5xf32>
  return
}

// -----

// Rule: fused_matmul: bias_grad(lhs) is a vector of the result's rows.
func.func @fused_matmul_bias_grad_rows(%a: tensor<6x4xf32>, %b: tensor<6x5xf32>) {
  // expected-error @+1 {{bias_grad of shape [5] is not a vector of the result's rows (4)}}
  %0:2 = tg.fused_matmul %a, %b transpose_lhs bias_grad(lhs) : (tensor<6x4xf32>, tensor<6x5xf32>) -> (tensor<4x5xf32>, tensor<5xf32>)
  return
}

// -----

// Rule: fused_matmul: bias_grad(rhs) is a vector of the result's columns.
func.func @fused_matmul_bias_grad_columns(%a: tensor<6x4xf32>, %b: tensor<6x5xf32>) {
  // expected-error @+1 {{bias_grad of shape [4, 5] is not a vector of the result's columns (5)}}
  %0:2 = tg.fused_matmul %a, %b transpose_lhs bias_grad(rhs) : (tensor<6x4xf32>, tensor<6x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>)
  return
}

// -----

// Rule: fused_matmul: a bias gradient only from 2-D operands.
func.func @fused_matmul_bias_grad_batched(%a: tensor<2x6x4xf32>, %b: tensor<2x6x5xf32>) {
  // expected-error @+1 {{sums a bias gradient only from 2-D operands}}
  %0:2 = tg.fused_matmul %a, %b transpose_lhs bias_grad(rhs) : (tensor<2x6x4xf32>, tensor<2x6x5xf32>) -> (tensor<2x4x5xf32>, tensor<5xf32>)
  return
}

// -----

// Rule: fused_matmul: a known activation.
func.func @fused_matmul_activation(%a: tensor<4x3xf32>, %b: tensor<3x5xf32>) {
  // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'activation' [none, relu, gelu, gelu_tanh]}}
  %0 = tg.fused_matmul %a, %b activation(swish) : (tensor<4x3xf32>, tensor<3x5xf32>) -> tensor<4x5xf32>
  return
}
