// Input of mx-spec-oracle.test: the MX quantization it checks.
func.func @q(%x: tensor<64x512xf32>) -> (tensor<64x512xf8E4M3FN>, tensor<64x16xf8E8M0FNU>) {
  %q, %s = fp8.quantize %x to e4m3 by #fp8.mx<dim = 1> scale pow2 : tensor<64x512xf32> -> tensor<64x512xf8E4M3FN>, tensor<64x16xf8E8M0FNU>
  return %q, %s : tensor<64x512xf8E4M3FN>, tensor<64x16xf8E8M0FNU>
}
