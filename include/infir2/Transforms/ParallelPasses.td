//===- ParallelPasses.td - Steps over several ranks ------ -*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The passes that make a training step run over several ranks: tensor
// parallelism on the forward (before the step is derived), its verifier,
// and data parallelism on the optimizer step. Included by Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_TRANSFORMS_PARALLELPASSES_TD
#define INFIR2_TRANSFORMS_PARALLELPASSES_TD

include "mlir/Pass/PassBase.td"

def TensorParallelPass : Pass<"infir2-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Shards a model's layers over a tensor-parallel group (Megatron-LM's way).";
  let description = [{
    Rewrites `@forward` into one rank's forward of a group of `size` ranks,
    before `--infir2-autodiff`:
    - each `infir2.attention` runs on `num_heads / size` query heads and
      `num_kv_heads / size` key/value heads (a grouped-query group stays
      whole on one rank); the GEMMs that make its query, key and value
      (with their biases and rotary embedding) are column-parallel: each
      rank holds rows `[r·n, (r+1)·n)` of the weight;
    - each `infir2.swiglu` runs on `1/size` of the MLP's width: the gate and
      up GEMMs are column-parallel;
    - the GEMM that reads the attention's or the SwiGLU's output (the
      output and down projections) is row-parallel: each rank holds its
      columns of the weight and makes a partial sum, which `infir2.tp_reduce`
      sums over the group;
    - a column-parallel GEMM's input enters through `infir2.tp_copy`, whose
      gradient is the sum over the group. `--infir2-autodiff` drops the
      entries from `@train_step` once their gradients are built: there they
      are identities, and a norm then fuses with the quantizations of its
      output as without tensor parallelism.

    The vocabulary is split too: the embedding table and the LM head (tied
    or not) by rows, `{vocab_shards = size}` on the embedding (its result
    summed by `infir2.tp_reduce`) and on the loss, computed from each rank's
    columns of the logits. A vocabulary `size` does not divide stays whole
    on every rank instead, with a remark (each rank computes every logit;
    Megatron-LM pads the vocabulary to a multiple instead, which this pass
    does not), except with sequence parallelism, which refuses it.

    With `sequence-parallel=true` (Megatron-LM's sequence parallelism), the
    norms and residual adds between the regions run on each rank's slice of
    the sequence (dimension 1 of `[batch, seq, hidden]`): each
    `infir2.tp_reduce` becomes `infir2.tp_reduce_scatter`, each
    `infir2.tp_copy` of a layer's input `infir2.tp_all_gather`, and a norm's
    weight, whole on every rank, enters through `infir2.tp_copy` (each rank's
    slice of the sequence gives a partial gradient of it).

    The norms and the residual stream stay whole on every rank otherwise.
    Sharded parameters get `infir2.tp_shard` (the
    dimension split) and per-rank shapes; the module gets
    `infir2.tensor_parallel = size`. The result is then checked as
    `--infir2-verify-tensor-parallel` does.

    Errors name what does not divide: heads or key/value heads by `size`, a
    sharded dimension by `size`, or (when `fp8-block` is not 0) a shard
    that is not a whole number of `fp8-block` rows or columns, so that the
    FP8 recipe's 128×128 weight blocks and 1×128 groups would straddle two
    ranks and the scales would differ from the unsharded run's.

    ```mlir
    %q = infir2.matmul %x, %wq {transpose_rhs} : tensor<2x8x256xbf16>, tensor<256x256xbf16> -> tensor<2x8x256xbf16>
    ```

    becomes, at `size=2`,

    ```mlir
    %xin = infir2.tp_copy %x {size = 2 : i64} : tensor<2x8x256xbf16>
    %q = infir2.matmul %xin, %wq {transpose_rhs} : tensor<2x8x256xbf16>, tensor<128x256xbf16> -> tensor<2x8x128xbf16>
    ```
  }];
  let options = [
    Option<"size", "size", "int64_t", "1",
           "Ranks in the tensor-parallel group (1: the pass does nothing)">,
    Option<"fp8Block", "fp8-block", "int64_t", "128",
           "Rows and columns of the FP8 recipe's blocks and groups that a "
           "shard must hold whole (0: no such check, e.g. the bf16 recipe)">,
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The function to shard">,
    Option<"sequenceParallel", "sequence-parallel", "bool", "false",
           "Also split the sequence of the norms and residual adds between "
           "the regions (all-gather in, reduce-scatter out)">
  ];
}

def VerifyTensorParallelPass
    : Pass<"infir2-verify-tensor-parallel", "mlir::ModuleOp"> {
  let summary = "Checks that sharded and whole values meet only through a collective.";
  let description = [{
    On a module with `infir2.tensor_parallel`, follows every value of
    `@forward` from its arguments: whole on every rank (replicated),
    entered into a region (`infir2.tp_copy`), sharded (a parameter with
    `infir2.tp_shard`, or computed from shards) or a partial sum (a GEMM
    over a sharded contraction). It is an error for:
    - a partial sum to reach any op but `infir2.tp_reduce`, or
      `infir2.tp_reduce` to read anything but a partial sum;
    - a sharded value to reach an op that runs on whole tensors (a norm,
      the loss, a residual add with a whole tensor, the result);
    - a column-parallel GEMM to read a whole input that did not enter
      through `infir2.tp_copy` (its gradient would not be summed);
    - a row-parallel GEMM to read a whole input (it would sum `size`
      copies);
    - a value entered through `infir2.tp_copy` to reach anything but a
      column-parallel GEMM (its gradient is summed over the ranks: another
      reader's would be counted `size` times).
    Each error names the op and the operand.
  }];
  let options = [
    Option<"forwardName", "forward", "std::string", "\"forward\"",
           "The function to check">
  ];
}

def DataParallelPass : Pass<"infir2-data-parallel", "mlir::ModuleOp"> {
  let summary = "Sums the gradient accumulators across data-parallel ranks before the optimizer step.";
  let description = [{
    Inserts, at the top of `@optimizer_step`, `infir2.all_reduce` ops on the
    FP32 gradient accumulators (the arguments carrying `infir2.grad_of`), in
    buckets of at most `bucket-mb` MiB taken in argument order (a tensor larger
    than a bucket is a bucket of its own), and makes the rest of the step read
    the sums. Every rank then applies the same update to the same weights.

    The sum over R ranks of K micro-batches each is averaged by the step's
    `grad_scale` input, which the trainer sets to 1/(K·R). Running the pass
    again changes nothing.

    ```mlir
    %r:2 = infir2.all_reduce %arg26, %arg27 : tensor<256x256xf32>, tensor<256xf32>
    ```

    With `zero1=true world-size=N` it shards the optimizer state instead
    (ZeRO stage 1): each FP32 master weight and its moments become the row
    shard `ceil(d0/N)` of the rank that updates them, so their memory is
    divided by N. The step then
    - reduce-scatters the gradient accumulators (`infir2.reduce_scatter`,
      same buckets): each rank gets the summed rows it owns;
    - takes the clipping norm over all ranks' shards
      (`infir2.global_norm {across_ranks}`);
    - updates its shards only;
    - all-gathers the updated working weights (`infir2.all_gather`), so that
      every rank starts the next step with all of them.

    The shard shapes depend on N, so a ZeRO-1 trainer runs at the world
    size it was compiled for (the trainer checks); its checkpoints hold
    whole tensors and load at any world size.

    ```mlir
    %s:2 = infir2.reduce_scatter %arg26, %arg27 {world_size = 2 : i64}
        : tensor<256x256xf32>, tensor<256xf32> -> tensor<128x256xf32>, tensor<128xf32>
    ...
    %w = infir2.all_gather %5, %6 {world_size = 2 : i64}
        : tensor<128x256xbf16>, tensor<128xbf16> -> tensor<256x256xbf16>, tensor<256xbf16>
    ```
  }];
  let options = [
    Option<"stepName", "step-name", "std::string", "\"optimizer_step\"",
           "The optimizer step function">,
    Option<"bucketMB", "bucket-mb", "double", "25.0",
           "Largest bucket, in MiB of FP32 gradients">,
    Option<"zero1", "zero1", "bool", "false",
           "Shard the optimizer state over the ranks (ZeRO-1) instead of "
           "all-reducing the gradients">,
    Option<"worldSize", "world-size", "int64_t", "0",
           "The number of data-parallel ranks (required by zero1)">
  ];
  let dependentDialects = ["infir2::Infir2Dialect"];
}


#endif // INFIR2_TRANSFORMS_PARALLELPASSES_TD
