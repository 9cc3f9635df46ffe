// RUN: mp-opt %s --split-input-file --convert-tg-to-runtime --verify-diagnostics

func.func @foreign_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{convert-tg-to-runtime cannot lower 'arith.addf'}}
  %b = arith.addf %a, %a : tensor<4xf32>
  return %b : tensor<4xf32>
}

// -----

// expected-error @+1 {{convert-tg-to-runtime needs a function with one block}}
func.func @two_blocks(%a: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^bb1
^bb1:
  return %a : tensor<4xf32>
}

// -----

// expected-error @+1 {{argument #0 must be a statically shaped tensor, got 'tensor<?xf32>'}}
func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}

// -----

// expected-error @+1 {{argument #0 has rank 9, above the runtime's maximum of 8}}
func.func @rank9(%a: tensor<1x1x1x1x1x1x1x1x2xf32>) -> tensor<1x1x1x1x1x1x1x1x2xf32> {
  %b = tg.relu %a : tensor<1x1x1x1x1x1x1x1x2xf32>
  return %b : tensor<1x1x1x1x1x1x1x1x2xf32>
}

// -----

// expected-error @+1 {{argument #0 has element type 'i8', which the runtime does not support}}
func.func @i8(%a: tensor<4xi8>) -> tensor<4xi8> {
  return %a : tensor<4xi8>
}
