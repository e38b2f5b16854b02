// Bad input must give a diagnostic at the source location and exit code 1,
// never a crash or an assertion (`not` fails on a crash).
// RUN: not infir2-opt %s --split-input-file 2>&1 | FileCheck %s
// RUN: sh -c 'infir2-opt %s --split-input-file >/dev/null 2>&1; test $? -eq 1'
// RUN: not infir2-opt %t.does-not-exist.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: sh -c 'infir2-opt %t.does-not-exist.mlir >/dev/null 2>&1; test $? -eq 1'
// MISSING: cannot open input file '{{.*}}does-not-exist.mlir': No such file or directory

// Tests malformed syntax.
func.func @syntax(%x: tensor<4xf32>) {
  // CHECK: bad-input.mlir:[[@LINE+1]]:22: error: expected ':'
  %0 = infir2.silu %x tensor<4xf32>
  return
}

// -----

// Tests an unknown op of a known dialect.
func.func @unknown_op(%x: tensor<4xf32>) {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: custom op 'infir2.bogus' is unknown
  %0 = infir2.bogus %x : tensor<4xf32>
  return
}

// -----

// Tests an op of an unknown dialect.
func.func @unknown_dialect(%x: tensor<4xf32>) {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: Dialect `foo' not found for custom op 'foo.bar'
  %0 = foo.bar %x : tensor<4xf32>
  return
}

// -----

// Tests an unknown attribute of a known dialect.
// CHECK: bad-input.mlir:[[@LINE+1]]:48: error: unknown attribute `bogus` in dialect `fp8`
func.func @unknown_attr() attributes {g = #fp8.bogus<1>} {
  return
}

// -----

// Tests mismatched shapes caught by a verifier.
func.func @mismatched(%x: tensor<2x32x64xbf16>, %w: tensor<176x32xbf16>) {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: 'infir2.matmul' op expects the contraction dimensions to match, got 64 in 'lhs' [2, 32, 64] and 32 in 'rhs' [176, 32]
  %0 = infir2.matmul %x, %w {transpose_rhs} : tensor<2x32x64xbf16>, tensor<176x32xbf16> -> tensor<2x32x176xbf16>
  return
}

// -----

// Tests an operand used at the wrong type.
func.func @wrong_type(%x: tensor<4xf32>) {
  // CHECK: bad-input.mlir:[[@LINE+1]]:20: error: use of value '%x' expects different type than prior uses: 'tensor<4xbf16>' vs 'tensor<4xf32>'
  %0 = infir2.silu %x : tensor<4xbf16>
  return
}

// -----

// Tests an attribute of the wrong kind in generic form.
func.func @wrong_attr_kind(%x: tensor<2x8xbf16>, %w: tensor<8xbf16>) {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: 'infir2.rms_norm' op attribute 'epsilon' failed to satisfy constraint: 64-bit float attribute
  %0 = "infir2.rms_norm"(%x, %w) {epsilon = "small"} : (tensor<2x8xbf16>, tensor<8xbf16>) -> tensor<2x8xbf16>
  return
}

// -----

// Tests a dynamically shaped tensor, which the model dialect does not accept.
func.func @dynamic(%x: tensor<?x8xf32>) {
  // CHECK: bad-input.mlir:[[@LINE+1]]:8: error: 'infir2.silu' op operand #0 must be statically shaped tensor
  %0 = infir2.silu %x : tensor<?x8xf32>
  return
}
