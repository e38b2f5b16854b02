//===- Infir2DecodeOps.td - Decoding ops of infir2 ---------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The ops of the decode step --infir2-derive-decode builds from a model's
// forward function: the key/value cache update, and attention of new tokens
// over the cache. They are not differentiable; training never sees them.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2DECODEOPS_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2DECODEOPS_TD

include "infir2/Dialect/Infir2/IR/Infir2OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Infir2_CacheWriteOp : Infir2_Op<"cache_write",
    [Pure, AllTypesMatch<["cache", "result"]>]> {
  let summary = "Writes new keys or values into a key/value cache at their positions.";
  let description = [{
    `cache` has shape `[B, L, W]` (`L` the longest sequence the cache holds),
    `update` shape `[B, T, W]` and `positions` shape `[B, T]`. The result is
    `cache` with row `positions[b, t]` of sequence `b` replaced by
    `update[b, t]`. A position outside `[0, L)` is an error when the op runs.

    The memory planner updates the cache in place when the cache is a
    function argument with no other use, as in a decode step, so a step costs
    `T` rows, not a copy of the cache.

    ```mlir
    %kc2 = infir2.cache_write %k into %kc at %pos
        : tensor<1x1x32xbf16> into tensor<1x64x32xbf16>, tensor<1x1xi32>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$update, Infir2_FloatTensor:$cache,
                       Infir2_IdTensor:$positions);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $update `into` $cache `at` $positions attr-dict `:` type($update) `into`
    type($cache) `,` type($positions)
  }];
  let hasVerifier = 1;
}

def Infir2_CacheAttentionOp : Infir2_Op<"cache_attention", [Pure]> {
  let summary = "Attention of new tokens over a key/value cache, each seeing the cache up to its own position.";
  let description = [{
    `query` has shape `[B, T, num_heads * head_dim]`, `key_cache` and
    `value_cache` shape `[B, L, num_kv_heads * head_dim]`, and `positions`
    shape `[B, T]`. Query `t` of sequence `b` attends to cache rows
    `0 ..= positions[b, t]` (causal attention of a token at that position over
    everything before it), with grouped-query heads and `scale` as in
    `infir2.attention`. The result is shaped like `query`. It equals causal
    `infir2.attention` over the whole sequence, row for row, when the cache
    holds the sequence's keys and values.

    ```mlir
    %o = infir2.cache_attention %q, %kc, %vc at %pos {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
        : tensor<1x1x64xbf16>, tensor<1x64x32xbf16>, tensor<1x64x32xbf16>, tensor<1x1xi32> -> tensor<1x1x64xbf16>
    ```
  }];
  let arguments = (ins Infir2_FloatTensor:$query, Infir2_FloatTensor:$key_cache,
                       Infir2_FloatTensor:$value_cache,
                       Infir2_IdTensor:$positions,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$num_kv_heads,
                       ConfinedAttr<I64Attr, [IntPositive]>:$head_dim,
                       OptionalAttr<PositiveF64Attr>:$scale);
  let results = (outs Infir2_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key_cache `,` $value_cache `at` $positions attr-dict `:`
    type($query) `,` type($key_cache) `,` type($value_cache) `,`
    type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The softmax scale: the `scale` attribute, or 1/sqrt(head_dim).
    double getEffectiveScale();
  }];
}

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2DECODEOPS_TD
