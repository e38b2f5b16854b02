func.func @bad_ids() -> tensor<2x3xf32> {
  %t = arith.constant dense<1.0> : tensor<4x3xf32>
  %ids = arith.constant dense<[2, 9]> : tensor<2xi32>
  %e = infir2.embedding %t[%ids] : tensor<4x3xf32>[tensor<2xi32>] -> tensor<2x3xf32>
  return %e : tensor<2x3xf32>
}

func.func @inf_amax() -> tensor<1x1xf32> {
  %x = arith.constant dense<[[1.0, 0x7F800000, 2.0, 3.0]]> : tensor<1x4xf32>
  %q, %s = fp8.quantize %x to e4m3 by #fp8.tensorwise scale pow2 : tensor<1x4xf32> -> tensor<1x4xf8E4M3FN>, tensor<1x1xf32>
  return %s : tensor<1x1xf32>
}

func.func @dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  return %x : tensor<?xf32>
}

func.func @unsupported() -> tensor<2xf32> {
  %e = tensor.empty() : tensor<2xf32>
  return %e : tensor<2xf32>
}

// ZeRO-1's collectives over two ranks: the interpreter is one.
func.func @zero1_two_ranks(%g: tensor<4xf32>) -> tensor<2xf32> {
  %s = infir2.reduce_scatter %g {world_size = 2 : i64} : tensor<4xf32> -> tensor<2xf32>
  return %s : tensor<2xf32>
}
