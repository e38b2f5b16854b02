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
    scale is exact in E8M0). Under the `floor` rule, the conversion of the
    OCP MX specification (v1.0, section 6.3), `scale = 2^(floor(log2 amax) -
    emax)` with `emax` the format's largest exponent (8 for e4m3, 15 for
    e5m2): a power of two too, equal to `pow2`'s unless amax's significand
    exceeds 1.75 (448 = 1.75 · 2^8, 57344 = 1.75 · 2^15), when it is half
    of it and the block's largest values may saturate. A block with
    `amax == 0` gets scale 1; an amax below 1e-12 is taken as 1e-12, so a
    scale never underflows (such a block flushes to zero).
    Then `data = saturate_rne(input / scale)`. The results satisfy
    `input ≈ data · scale`.

    `data` has the input's shape and the element type of `format`; `scale` has
    the shape the granularity implies and type `f32` (or `f8E8M0FNU` under the
    power-of-two rules, `pow2` and `floor`).

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

def FP8_QuantizeDualOp : FP8_Op<"quantize_dual", [Pure]> {
  let summary = "Quantizes a tensor in both layouts in one pass: row-wise and column-wise copies.";
  let description = [{
    A tensor that a training step reads in both layouts — an activation
    (forward GEMM: contraction over features; weight-gradient GEMM:
    contraction over tokens), an output gradient, or a weight (forward and
    data-gradient GEMMs) — is quantized once, producing two FP8 copies with
    their scales:

    - `data`, `scale`: `input` quantized by `granularity`, exactly as
      `fp8.quantize` would;
    - `data_t`, `scale_t`: the transpose of `input` viewed as a matrix of rows
      (`[T, K]`, `T` the product of the leading dimensions, `K` the last one),
      so of shape `[K, T]`, quantized by `transposed_granularity`, exactly as
      `fp8.quantize` of that explicit transpose would.

    Both copies keep the contraction dimension last, the layout
    `fp8.scaled_matmul` takes: a `[batch, seq, hidden]` activation is read
    per token by its forward GEMM and per feature (all tokens of the step
    contracted) by its weight-gradient GEMM. One kernel reads the
    high-precision tensor once and writes both copies, instead of two passes
    over the data with a transpose in between.

    ```mlir
    %q, %s, %qt, %st = fp8.quantize_dual %x to e4m3 by #fp8.groups<128, dim = 2>
        and transposed by #fp8.groups<128, dim = 1> scale pow2
        : tensor<2x128x512xbf16> -> tensor<2x128x512xf8E4M3FN>,
          tensor<2x128x4xf32>, tensor<512x256xf8E4M3FN>, tensor<512x2xf32>
    ```
  }];
  let arguments = (ins FP8_HighPrecisionTensor:$input,
                       FP8_FormatAttr:$format,
                       FP8_GranularityAttrInterface:$granularity,
                       FP8_GranularityAttrInterface:$transposed_granularity,
                       FP8_ScaleRuleAttr:$scale_rule);
  let results = (outs FP8_DataTensor:$data, FP8_ScaleTensor:$scale,
                      FP8_DataTensor:$data_t, FP8_ScaleTensor:$scale_t);
  let assemblyFormat = [{
    $input `to` `` $format `by` $granularity `and` `transposed` `by`
    $transposed_granularity `scale` `` $scale_rule attr-dict
    `:` type($input) `->` type($data) `,` type($scale) `,` type($data_t) `,`
    type($scale_t)
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
    them. With an accumulator `acc` (of the result's type, `f32` or `bf16`)
    the result is `acc + Σ_k …`, the product added in FP32 before the one
    rounding (a weight gradient added to its FP32 accumulator; a residual or
    a sum of gradients in BF16, as cuBLASLt adds C with beta = 1). A linear layer's forward GEMM with 1×128
    activation groups and 128×128 weight blocks, and a weight gradient:

    ```mlir
    %y = fp8.scaled_matmul (%xq, %xs by #fp8.groups<128, dim = 1>), (%wq, %ws by #fp8.blocks<128, 128>)
        : (tensor<64x256xf8E4M3FN>, tensor<64x2xf32>), (tensor<512x256xf8E4M3FN>, tensor<4x2xf32>)
        -> tensor<64x512xbf16>
    %g = fp8.scaled_matmul (%dyq, %dys by #fp8.groups<128, dim = 1>), (%xq, %xs by #fp8.groups<128, dim = 1>)
        acc(%gw : tensor<512x256xf32>)
        : (tensor<512x128xf8E4M3FN>, tensor<512x1xf32>), (tensor<256x128xf8E4M3FN>, tensor<256x1xf32>)
        -> tensor<512x256xf32>
    ```
  }];
  let arguments = (ins FP8_DataTensor:$lhs, FP8_ScaleTensor:$lhs_scale,
                       FP8_GranularityAttrInterface:$lhs_granularity,
                       FP8_DataTensor:$rhs, FP8_ScaleTensor:$rhs_scale,
                       FP8_GranularityAttrInterface:$rhs_granularity,
                       Optional<FP8_AccumulatorTensor>:$acc);
  let results = (outs FP8_AccumulatorTensor:$result);
  let assemblyFormat = [{
    ` ` `(` $lhs `,` $lhs_scale `by` $lhs_granularity `)` `,`
    `(` $rhs `,` $rhs_scale `by` $rhs_granularity `)`
    (`acc` `(` $acc^ `:` type($acc) `)`)? attr-dict
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

def FP8_FusedOp : FP8_Op<"fused", [
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "A producer and the quantizations of its result, run as one kernel.";
  let description = [{
    Marks cast fusion: the body holds one single-result producer op followed
    by `fp8.quantize` / `fp8.quantize_dual` ops of its result, and yields
    what the rest of the step reads. A backend runs the body as one kernel
    that writes FP8 data and scales straight from its registers: the
    high-precision result is yielded only when something else still reads it,
    and a `scaled_matmul` is fused only when every reader of its result is
    such a quantization (FP8 output for the next FP8 GEMM).
    `--infir2-fuse-casts` creates it for `infir2.rms_norm`, `infir2.swiglu`
    and `fp8.scaled_matmul` producers.

    The body reads values from the enclosing region directly; the semantics
    are those of the body's ops run in order.

    ```mlir
    %y, %q, %s, %qt, %st = fp8.fused -> (tensor<256x512xbf16>,
        tensor<256x512xf8E4M3FN>, tensor<256x4xf32>,
        tensor<512x256xf8E4M3FN>, tensor<512x2xf32>) {
      %n = infir2.rms_norm %x, %w epsilon = 1.0e-06 : ...
      %a, %b, %c, %d = fp8.quantize_dual %n to e4m3 by ... : ...
      fp8.yield %n, %a, %b, %c, %d : ...
    }
    ```
  }];
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`->` `(` type($results)^ `)`)? $body attr-dict
  }];
  let extraClassDeclaration = [{
    /// The op whose result the body quantizes.
    ::mlir::Operation *getProducer() { return &getBody().front().front(); }
  }];
  let hasVerifier = 1;
}

def FP8_YieldOp : FP8_Op<"yield", [
    Pure, Terminator, HasParent<"FusedOp">]> {
  let summary = "Returns the values an fp8.fused body makes visible.";
  let description = [{
    ```mlir
    fp8.yield %q, %s : tensor<256x512xf8E4M3FN>, tensor<256x4xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // INFIR2_DIALECT_FP8_IR_FP8OPS_TD
