// RUN: infir2-opt %s --split-input-file --verify-diagnostics

// Tests that cache_write's cache is [batch, length, width].
func.func @cache_rank(%u: tensor<1x1x8xf32>, %c: tensor<16x8xf32>, %p: tensor<1x1xi32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{expects 'cache' of rank 3 ([batch, seq, width]), got shape [16, 8]}}
  %r = infir2.cache_write %u into %c at %p : tensor<1x1x8xf32> into tensor<16x8xf32>, tensor<1x1xi32>
  return %r : tensor<16x8xf32>
}

// -----

// Tests that cache_write's update is [batch, new rows, width].
func.func @update_rank(%u: tensor<1x8xf32>, %c: tensor<1x16x8xf32>, %p: tensor<1x1xi32>) -> tensor<1x16x8xf32> {
  // expected-error @+1 {{expects 'update' of rank 3 ([batch, seq, width]), got shape [1, 8]}}
  %r = infir2.cache_write %u into %c at %p : tensor<1x8xf32> into tensor<1x16x8xf32>, tensor<1x1xi32>
  return %r : tensor<1x16x8xf32>
}

// -----

// Tests that the update has the cache's batch and width.
func.func @cache_width(%u: tensor<1x1x4xf32>, %c: tensor<1x16x8xf32>, %p: tensor<1x1xi32>) -> tensor<1x16x8xf32> {
  // expected-error @+1 {{expects 'update' [1, 1, 4] to have the batch and width of 'cache' [1, 16, 8]}}
  %r = infir2.cache_write %u into %c at %p : tensor<1x1x4xf32> into tensor<1x16x8xf32>, tensor<1x1xi32>
  return %r : tensor<1x16x8xf32>
}

// -----

// Tests that an update has no more rows than the cache.
func.func @cache_rows(%u: tensor<1x32x8xf32>, %c: tensor<1x16x8xf32>, %p: tensor<1x32xi32>) -> tensor<1x16x8xf32> {
  // expected-error @+1 {{expects at most 16 new rows (the cache's length), got 32}}
  %r = infir2.cache_write %u into %c at %p : tensor<1x32x8xf32> into tensor<1x16x8xf32>, tensor<1x32xi32>
  return %r : tensor<1x16x8xf32>
}

// -----

// Tests that update and cache share an element type.
func.func @cache_type(%u: tensor<1x1x8xbf16>, %c: tensor<1x16x8xf32>, %p: tensor<1x1xi32>) -> tensor<1x16x8xf32> {
  // expected-error @+1 {{expects 'update' to have the element type of 'cache' ('f32'), got 'bf16'}}
  %r = infir2.cache_write %u into %c at %p : tensor<1x1x8xbf16> into tensor<1x16x8xf32>, tensor<1x1xi32>
  return %r : tensor<1x16x8xf32>
}

// -----

// Tests that cache_write's positions are [batch, new rows].
func.func @cache_positions(%u: tensor<1x2x8xf32>, %c: tensor<1x16x8xf32>, %p: tensor<1x1xi32>) -> tensor<1x16x8xf32> {
  // expected-error @+1 {{expects 'positions' of shape [1, 2] (the first two dimensions of 'update'), got [1, 1]}}
  %r = infir2.cache_write %u into %c at %p : tensor<1x2x8xf32> into tensor<1x16x8xf32>, tensor<1x1xi32>
  return %r : tensor<1x16x8xf32>
}

// -----

// Tests that cache_attention checks its heads as attention does.
func.func @heads(%q: tensor<1x1x64xf32>, %k: tensor<1x16x32xf32>, %v: tensor<1x16x32xf32>, %p: tensor<1x1xi32>) -> tensor<1x1x64xf32> {
  // expected-error @+1 {{expects num_heads (4) to be a multiple of num_kv_heads (3)}}
  %o = infir2.cache_attention %q, %k, %v at %p {num_heads = 4 : i64, num_kv_heads = 3 : i64, head_dim = 16 : i64}
      : tensor<1x1x64xf32>, tensor<1x16x32xf32>, tensor<1x16x32xf32>, tensor<1x1xi32> -> tensor<1x1x64xf32>
  return %o : tensor<1x1x64xf32>
}

// -----

// Tests that cache_attention's positions are [batch, queries].
func.func @attention_positions(%q: tensor<1x2x64xf32>, %k: tensor<1x16x32xf32>, %v: tensor<1x16x32xf32>, %p: tensor<1x1xi32>) -> tensor<1x2x64xf32> {
  // expected-error @+1 {{expects 'positions' of shape [1, 2] (the first two dimensions of 'query'), got [1, 1]}}
  %o = infir2.cache_attention %q, %k, %v at %p {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<1x2x64xf32>, tensor<1x16x32xf32>, tensor<1x16x32xf32>, tensor<1x1xi32> -> tensor<1x2x64xf32>
  return %o : tensor<1x2x64xf32>
}

// -----

// Tests that cache_attention's result is shaped like its query.
func.func @attention_result(%q: tensor<1x1x64xf32>, %k: tensor<1x16x32xf32>, %v: tensor<1x16x32xf32>, %p: tensor<1x1xi32>) -> tensor<1x1x64xbf16> {
  // expected-error @+1 {{expects the type of 'result' to be the type of 'query'}}
  %o = infir2.cache_attention %q, %k, %v at %p {num_heads = 4 : i64, num_kv_heads = 2 : i64, head_dim = 16 : i64}
      : tensor<1x1x64xf32>, tensor<1x16x32xf32>, tensor<1x16x32xf32>, tensor<1x1xi32> -> tensor<1x1x64xbf16>
  return %o : tensor<1x1x64xbf16>
}

// -----

// Tests the decode step's argument roles.
// expected-error @+1 {{'infir2.decode' on argument #0 must be "input_ids" or "positions"}}
func.func @decode_role(%ids: tensor<1x1xi32> {infir2.decode = "logits"}) {
  return
}

// -----

// Tests the decode step's result role.
// expected-error @+1 {{'infir2.decode' on result #0 must be "logits"}}
func.func @decode_result(%x: tensor<1x1x8xf32>) -> (tensor<1x1x8xf32> {infir2.decode = "input_ids"}) {
  return %x : tensor<1x1x8xf32>
}

// -----

// Tests that a cache is named.
// expected-error @+1 {{'infir2.cache' on argument #0 must name the cache}}
func.func @cache_name(%c: tensor<1x16x8xf32> {infir2.cache = ""}) {
  return
}

// -----

// Tests that a cache is a float tensor [batch, length, width].
// expected-error @+1 {{cache 'k' (result #0) must be a float tensor [batch, length, width], got 'tensor<16x8xf32>'}}
func.func @cache_shape(%c: tensor<16x8xf32>) -> (tensor<16x8xf32> {infir2.cache = "k"}) {
  return %c : tensor<16x8xf32>
}
