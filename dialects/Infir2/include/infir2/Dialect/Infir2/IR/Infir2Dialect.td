//===- Infir2Dialect.td - The infir2 model-level dialect ---*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_INFIR2_IR_INFIR2DIALECT_TD
#define INFIR2_DIALECT_INFIR2_IR_INFIR2DIALECT_TD

include "mlir/IR/OpBase.td"

def Infir2_Dialect : Dialect {
  let name = "infir2";
  let cppNamespace = "::infir2";
  let summary = "Model-level operations for describing transformer training graphs.";
  let description = [{
    The `infir2` dialect describes a model as a forward function on ranked,
    statically shaped tensors that returns a scalar loss: embedding lookups,
    (batched) matrix multiplications, RMS normalization, rotary position
    embeddings, grouped-query attention, SwiGLU, elementwise arithmetic and
    cross-entropy. It says nothing about precision: the FP8 recipe passes decide
    later which GEMMs run in FP8 and record that decision in the IR.

    Trainable parameters are function arguments that carry an `infir2.param`
    attribute naming the checkpoint tensor and its initialization rule:

    ```mlir
    func.func @forward(
        %w: tensor<64x64xbf16> {infir2.param = #infir2.param<"model.layers.0.self_attn.o_proj.weight", normal(std = 0.02)>},
        %ids: tensor<2x32xi32>) -> tensor<f32>
    ```
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    /// The name of the function-argument attribute that marks a trainable
    /// parameter.
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("infir2.param");
    }

    /// The name of the argument/result attribute that marks an FP32 gradient
    /// accumulator; its value is the parameter's name.
    static constexpr ::llvm::StringLiteral getGradOfAttrName() {
      return ::llvm::StringLiteral("infir2.grad_of");
    }

    /// Argument/result attributes of the optimizer step, each naming the
    /// parameter a tensor belongs to: FP32 master weight, first and second
    /// moments, and the (BF16) working copy the next forward reads.
    static constexpr ::llvm::StringLiteral getMasterOfAttrName() {
      return ::llvm::StringLiteral("infir2.master_of");
    }
    static constexpr ::llvm::StringLiteral getMoment1OfAttrName() {
      return ::llvm::StringLiteral("infir2.moment1_of");
    }
    static constexpr ::llvm::StringLiteral getMoment2OfAttrName() {
      return ::llvm::StringLiteral("infir2.moment2_of");
    }
    static constexpr ::llvm::StringLiteral getWorkingCopyOfAttrName() {
      return ::llvm::StringLiteral("infir2.working_copy_of");
    }

    /// Discardable attributes autodiff puts on gradient GEMMs: their role
    /// ("dgrad" or "wgrad") and the name of the weight they belong to.
    static constexpr ::llvm::StringLiteral getGemmRoleAttrName() {
      return ::llvm::StringLiteral("infir2.gemm_role");
    }
    static constexpr ::llvm::StringLiteral getGemmWeightAttrName() {
      return ::llvm::StringLiteral("infir2.gemm_weight");
    }
    /// Which operand (0 or 1) of a gradient GEMM carries the incoming
    /// gradient.
    static constexpr ::llvm::StringLiteral getGemmGradOperandAttrName() {
      return ::llvm::StringLiteral("infir2.gemm_grad_operand");
    }

    /// The module's Hugging Face config.json (a string holding a JSON
    /// object), put there by infir2-import and carried into the compiled
    /// trainer's manifest, so that saved model folders have a config.json.
    static constexpr ::llvm::StringLiteral getModelConfigAttrName() {
      return ::llvm::StringLiteral("infir2.model_config");
    }

    /// Scalar runtime inputs of the optimizer step, by role
    /// ("learning_rate", "step", "grad_scale").
    static constexpr ::llvm::StringLiteral getInputAttrName() {
      return ::llvm::StringLiteral("infir2.input");
    }

    /// The decode step's roles (--infir2-derive-decode): on arguments
    /// "input_ids" and "positions" (the new tokens), on a result "logits".
    static constexpr ::llvm::StringLiteral getDecodeAttrName() {
      return ::llvm::StringLiteral("infir2.decode");
    }
    /// On a decode step's argument and result: the key/value cache it
    /// reads and the updated cache, by name (one state slot).
    static constexpr ::llvm::StringLiteral getCacheAttrName() {
      return ::llvm::StringLiteral("infir2.cache");
    }
    /// On an argument or result: one tensor of the FP8 weight cache, the
    /// codes or scales of a parameter quantized once per optimizer step
    /// ("NAME:data", "NAME:scale", "NAME.t:data", "NAME.t:scale" for the
    /// transposed copy the backward pass reads); one state slot each.
    static constexpr ::llvm::StringLiteral getFP8CacheAttrName() {
      return ::llvm::StringLiteral("infir2.fp8_cache");
    }

    /// On the infir2.loss_weight --infir2-chunk-loss makes: how the LM head
    /// and the loss were chunked, and why (a sentence).
    static constexpr ::llvm::StringLiteral getChunkedAttrName() {
      return ::llvm::StringLiteral("infir2.chunked");
    }

    /// On an op --infir2-recompute cloned into the backward pass: why (a
    /// sentence).
    static constexpr ::llvm::StringLiteral getRecomputeAttrName() {
      return ::llvm::StringLiteral("infir2.recompute");
    }

    /// On a parameter of a tensor-parallel model (--infir2-tensor-parallel):
    /// the dimension along which each rank holds its contiguous 1/N of the
    /// whole tensor (rank r: indices [r*n, (r+1)*n) of that dimension).
    static constexpr ::llvm::StringLiteral getTPShardAttrName() {
      return ::llvm::StringLiteral("infir2.tp_shard");
    }
    /// On a module: the size N of its tensor-parallel group; the shapes in
    /// the module are one rank's.
    static constexpr ::llvm::StringLiteral getTensorParallelAttrName() {
      return ::llvm::StringLiteral("infir2.tensor_parallel");
    }

    void registerAttributes();
  }];
}

class Infir2_Op<string mnemonic, list<Trait> traits = []>
    : Op<Infir2_Dialect, mnemonic, traits>;

#endif // INFIR2_DIALECT_INFIR2_IR_INFIR2DIALECT_TD
