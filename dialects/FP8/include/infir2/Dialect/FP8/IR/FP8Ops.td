//===- FP8Ops.td - Operations of the fp8 dialect -----------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_FP8_IR_FP8OPS_TD
#define INFIR2_DIALECT_FP8_IR_FP8OPS_TD

include "infir2/Dialect/FP8/IR/FP8Dialect.td"
include "infir2/Dialect/FP8/IR/FP8Attrs.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def FP8_HighPrecisionTensor : StaticShapeTensorOf<[BF16, F16, F32]>;
def FP8_DataTensor : StaticShapeTensorOf<[F8E4M3FN, F8E5M2]>;
def FP8_ScaleTensor : StaticShapeTensorOf<[F32, F8E8M0FNU]>;
def FP8_AccumulatorTensor : StaticShapeTensorOf<[BF16, F32]>;

def FP8_QuantizeOp : FP8_Op<"quantize", [Pure]> {
  let summary = "Quantizes a tensor to FP8 data and per-block dequantization scales.";
  let description = [{
    For every block of the granularity, `amax` is the largest magnitude in the
    block and `scale = amax / fmt_max` (448 for e4m3, 57344 for e5m2), rounded
    up to a power of two under the `pow2` rule (so nothing overflows and the
    scale is exact in E8M0). A block with `amax == 0` gets scale 1; a block
    whose scale would underflow is given a floored scale and flushes to zero.
    Then `data = saturate_rne(input / scale)`. The results satisfy
    `input ≈ data · scale`.

    `data` has the input's shape and the element type of `format`; `scale` has
    the shape the granularity implies and type `f32` (or `f8E8M0FNU` under the
    `pow2` rule).

    ```mlir
    %q, %s = fp8.quantize %x to e4m3 by #fp8.groups<128, dim = 1> scale pow2
        : tensor<64x256xbf16> -> tensor<64x256xf8E4M3FN>, tensor<64x2xf32>
    ```
  }];
  let arguments = (ins FP8_HighPrecisionTensor:$input,
                       FP8_FormatAttr:$format,
                       FP8_GranularityAttrInterface:$granularity,
                       FP8_ScaleRuleAttr:$scale_rule);
  let results = (outs FP8_DataTensor:$data, FP8_ScaleTensor:$scale);
  let assemblyFormat = [{
    $input `to` `` $format `by` $granularity `scale` `` $scale_rule attr-dict
    `:` type($input) `->` type($data) `,` type($scale)
  }];
  let hasVerifier = 1;
}

def FP8_DequantizeOp : FP8_Op<"dequantize", [Pure]> {
  let summary = "Multiplies FP8 data by its per-block scales back to high precision.";
  let description = [{
    `result[i] = data[i] · scale[block(i)]`, rounded to the result's element
    type. The granularity must be the one the data was quantized with.

    ```mlir
    %x = fp8.dequantize (%q, %s by #fp8.groups<128, dim = 1>)
        : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>) -> tensor<64x256xbf16>
    ```
  }];
  let arguments = (ins FP8_DataTensor:$data, FP8_ScaleTensor:$scale,
                       FP8_GranularityAttrInterface:$granularity);
  let results = (outs FP8_HighPrecisionTensor:$result);
  let assemblyFormat = [{
    ` ` `(` $data `,` $scale `by` $granularity `)` attr-dict
    `:` `(` type($data) `,` type($scale) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def FP8_ScaledMatmulOp : FP8_Op<"scaled_matmul", [Pure]> {
  let summary = "Multiplies two scaled FP8 matrices with FP32 accumulation.";
  let description = [{
    `result[b..., m, n] = Σ_k (lhs[b..., m, k] · lhs_scale[…]) · (rhs[b..., n, k] · rhs_scale[…])`,
    accumulated in FP32 and rounded once to the result type (BF16 or FP32).
    Both operands are stored with the contraction dimension `K` last — `lhs` is
    `[b..., M, K]` and `rhs` is `[b..., N, K]` (or a rank-2 `[N, K]` shared by
    every batch element) — because that "TN" layout is the only one Hopper's
    FP8 tensor cores and cuBLASLt's block-scaled modes accept. Transposed uses
    of a tensor are therefore separate, physically transposed quantizations.

    Each operand carries its scales and the granularity they were made with;
    the blocks must tile the operand and the scale shapes must follow from
    them. A linear layer's forward GEMM with 1×128 activation groups and
    128×128 weight blocks:

    ```mlir
    %y = fp8.scaled_matmul (%xq, %xs by #fp8.groups<128, dim = 1>), (%wq, %ws by #fp8.blocks<128, 128>)
        : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<512x256xf8E4M3FN>, tensor<4x2xf32>)
        -> tensor<64x512xbf16>
    ```
  }];
  let arguments = (ins FP8_DataTensor:$lhs, FP8_ScaleTensor:$lhs_scale,
                       FP8_GranularityAttrInterface:$lhs_granularity,
                       FP8_DataTensor:$rhs, FP8_ScaleTensor:$rhs_scale,
                       FP8_GranularityAttrInterface:$rhs_granularity);
  let results = (outs FP8_AccumulatorTensor:$result);
  let assemblyFormat = [{
    ` ` `(` $lhs `,` $lhs_scale `by` $lhs_granularity `)` `,`
    `(` $rhs `,` $rhs_scale `by` $rhs_granularity `)` attr-dict
    `:` `(` type($lhs) `,` type($lhs_scale) `)` `,`
        `(` type($rhs) `,` type($rhs_scale) `)` `->` type($result)
  }];
  let hasVerifier = 1;
}

def FP8_AmaxOp : FP8_Op<"amax", [Pure]> {
  let summary = "Computes the largest magnitude in every block of a granularity.";
  let description = [{
    The statistic a scale is derived from. NaN propagates, so that a
    non-finite block is reported rather than silently turned into a number.
    The result has the scale shape of the granularity.

    ```mlir
    %a = fp8.amax (%x by #fp8.tensorwise) : tensor<64x256xbf16> -> tensor<1x1xf32>
    ```
  }];
  let arguments = (ins FP8_HighPrecisionTensor:$input,
                       FP8_GranularityAttrInterface:$granularity);
  let results = (outs StaticShapeTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    ` ` `(` $input `by` $granularity `)` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // INFIR2_DIALECT_FP8_IR_FP8OPS_TD
