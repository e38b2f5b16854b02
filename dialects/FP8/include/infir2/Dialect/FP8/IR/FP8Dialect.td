//===- FP8Dialect.td - The fp8 quantization dialect --------*- tablegen -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_DIALECT_FP8_IR_FP8DIALECT_TD
#define INFIR2_DIALECT_FP8_IR_FP8DIALECT_TD

include "mlir/IR/OpBase.td"

def FP8_Dialect : Dialect {
  let name = "fp8";
  let cppNamespace = "::infir2::fp8";
  let summary = "Scaled FP8 quantization and GEMMs, on any dialect's tensors.";
  let description = [{
    The ops the FP8 recipe inserts: `quantize` (high precision → FP8 data plus
    FP32 dequantization scales), `dequantize`, `scaled_matmul` (FP8 operands and
    their scales → FP32 accumulation → BF16 or FP32) and `amax`. They work on
    builtin tensors, so any dialect's graph can carry them.

    Every op names its scaling **granularity** with an attribute implementing
    `GranularityAttrInterface`, which gives the block of elements that share one
    scale:

    | attribute                 | block (one scale per block)                     |
    |---------------------------|-------------------------------------------------|
    | `#fp8.tensorwise`         | the whole tensor                                |
    | `#fp8.groups<128, dim = 1>` | 128 consecutive elements along dimension 1   |
    | `#fp8.blocks<128, 128>`   | 128×128 tiles of the last two dimensions        |
    | `#fp8.mx<dim = 1>`        | 32 consecutive elements along dimension 1, with an E8M0 scale (OCP MX) |

    The scale tensor has the data's rank and shape `shape[i] / block[i]`;
    blocks must tile the tensor exactly. Scales are dequantization multipliers
    (`x ≈ data · scale`), as cuBLASLt's block-scaled modes take them. FP8 data
    uses MLIR's builtin `f8E4M3FN` and `f8E5M2` types; `f8E8M0FNU` may hold
    power-of-two scales, and holds every MX block's.
  }];
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let extraClassDeclaration = [{
    void registerAttributes();

    /// The name of the discardable attribute that records a GEMM's
    /// precision decision (a #fp8.decision).
    static constexpr ::llvm::StringLiteral getDecisionAttrName() {
      return ::llvm::StringLiteral("fp8.decision");
    }
  }];
}

class FP8_Op<string mnemonic, list<Trait> traits = []>
    : Op<FP8_Dialect, mnemonic, traits>;

#endif // INFIR2_DIALECT_FP8_IR_FP8DIALECT_TD
