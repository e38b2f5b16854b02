//===- ScaledMatmul.cu - FP8 GEMMs through cuBLASLt -----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// fp8.scaled_matmul through cuBLASLt's scaled modes (128-wide blocks on
// Hopper, MXFP8 on Blackwell), following shared/CUBLASLT.md:
// - "TN": our lhs [M, K] and rhs [N, K] (row-major, K contiguous) are
//   cuBLAS's B (op N) and A (op T); D, column-major N x M, is our row-major
//   [M, N]. A rank-3 lhs with a shared rank-2 rhs is one GEMM of M = B·S.
// - Scales: relaid for their mode (ScaleLayout.cuh: 1x128 groups, 128x128
//   blocks, one per tensor, MX blocks of 32 with E8M0 scales). BLK x BLK
//   has no cuBLASLt mode, and MX blocks pair only with MX blocks: both
//   refused, as is a mode the GPU does not have.
// - FP32 compute, split accumulation (FAST_ACCUM 0), BF16 or FP32 output.
// - One handle and one 32 MiB workspace per process; the heuristic is asked
//   once per shape and cached.
// Every status is checked and returned. Run on an H100 (cuBLASLt 13.1):
// the GPU test finds it within 2^-9 of Σ|a·b| of the exact product (the
// tensor cores sum a block's products with ~14 bits), and bit for bit like
// the CPU backend where those sums are exact, which fixes the order the
// scales are applied in (docs/Running.md).
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "DeviceView.cuh"
#include "ScaleLayout.cuh"
#include "Workspace.h"
#include "infir2/runtime/CUDA.h"
#include "infir2/runtime/Descriptor.h"

#include <cublasLt.h>

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace {

using Operand = infir2::rt::DescOperand;
namespace attrs = infir2::rt::attrs;
using infir2::rt::descOperand;
using infir2::rt::setCallError;
using infir2::rt::cuda::cublasScaleMode;
using infir2::rt::cuda::layoutScales;
using infir2::rt::cuda::requireArchitecture;
using infir2::rt::cuda::scaleLayoutBytes;
using infir2::rt::cuda::ScaleMode;
using infir2::rt::cuda::scaleModeOf;

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

Operand descOperand(infir2rt_context *ctx, const int64_t *desc, int64_t i) {
  const int64_t *w = desc + 2 + i * INFIR2RT_OPERAND_WORDS;
  return {ctx->regions[w[0]] + w[3], w[1], w[2], w[4], w + 5};
}

int32_t checkBlas(infir2rt_context *ctx, cublasStatus_t status,
                  const char *call, const char *where) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return 0;
  return infir2::rt::setCallError(ctx, where, "%s failed: %s", call,
                                  cublasLtGetStatusString(status));
}

#define BLAS_CHECK(expr)                                                       \
  do {                                                                         \
    if (int32_t _rc = checkBlas(ctx, (expr), #expr, where))                    \
      return _rc;                                                              \
  } while (0)

/// The process's cuBLASLt handle, workspace and heuristic cache.
struct Lt {
  using Key = std::tuple<int64_t, int64_t, int64_t, int, int, int, int, int>;
  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  std::map<Key, cublasLtMatmulAlgo_t> algos;
  std::mutex mutex;

  /// Creates the handle and the workspace on first use.
  int32_t init(infir2rt_context *ctx, const char *where) {
    std::lock_guard<std::mutex> lock(mutex);
    if (handle)
      return 0;
    BLAS_CHECK(cublasLtCreate(&handle));
    INFIR2_CUDA_CHECK(ctx, cudaMalloc(&workspace, kWorkspaceBytes), where);
    return 0;
  }

  /// The best algorithm for a GEMM, asked of the heuristic once per `key`.
  int32_t algorithm(infir2rt_context *ctx, const char *where, const Key &key,
                    cublasLtMatmulDesc_t op, cublasLtMatrixLayout_t a,
                    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d,
                    cublasLtMatmulAlgo_t &algo) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = algos.find(key);
    if (it == algos.end()) {
      cublasLtMatmulPreference_t pref = nullptr;
      BLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
      size_t ws = kWorkspaceBytes;
      cublasStatus_t st = cublasLtMatmulPreferenceSetAttribute(
          pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
      cublasLtMatmulHeuristicResult_t result = {};
      int found = 0;
      if (st == CUBLAS_STATUS_SUCCESS)
        st = cublasLtMatmulAlgoGetHeuristic(handle, op, a, b, d, d, pref, 1,
                                            &result, &found);
      cublasLtMatmulPreferenceDestroy(pref);
      BLAS_CHECK(st);
      if (found == 0)
        return setCallError(
            ctx, where, "%s",
            "cuBLASLt has no algorithm for this GEMM (128-wide "
            "block scaling needs Hopper and cuBLAS >= 12.9, MXFP8 "
            "Blackwell and cuBLAS >= 12.8)");
      it = algos.emplace(key, result.algo).first;
    }
    algo = it->second;
    return 0;
  }
};

Lt &lt() {
  static Lt instance;
  return instance;
}

cudaDataType_t fp8Type(int64_t dtype) {
  return dtype == INFIR2RT_E5M2 ? CUDA_R_8F_E5M2 : CUDA_R_8F_E4M3;
}

/// out = acc + product, element by element, rounded once to out's type
/// (out may be acc itself).
__global__ void addProductKernel(infir2::rt::cuda::View acc,
                                 const float *product,
                                 infir2::rt::cuda::View out) {
  int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < out.numel)
    out.set(i, acc.get(i) + product[i]);
}

/// A GEMM's accumulator (operand `at`, when the call has one): an operand
/// of the result's type (f32 or bf16) and size; null without one.
int32_t accumulatorOf(infir2rt_context *ctx, const int64_t *desc,
                      const char *where, bool hasAcc, int64_t at,
                      const Operand &out, const uint8_t **acc) {
  *acc = nullptr;
  if (!hasAcc)
    return 0;
  Operand a = descOperand(ctx, desc, at);
  if ((out.dtype != INFIR2RT_F32 && out.dtype != INFIR2RT_BF16) ||
      a.dtype != out.dtype || a.numel != out.numel)
    return setCallError(ctx, where, "%s",
                        "a GEMM accumulates into an f32 or bf16 result of "
                        "the accumulator's type and shape");
  *acc = a.ptr;
  return 0;
}

} // namespace

extern "C" int32_t infir2rt_cuda_scaled_matmul(infir2rt_context *ctx,
                                               const int64_t *desc,
                                               const char *where) {
  Operand a = descOperand(ctx, desc, 0), sa = descOperand(ctx, desc, 1),
          b = descOperand(ctx, desc, 2), sb = descOperand(ctx, desc, 3),
          d = descOperand(ctx, desc, 4);
  if (b.rank != 2)
    return setCallError(ctx, where, "%s",
                    "the CUDA FP8 GEMM takes a rank-2 rhs (shared weights)");
  if (a.dtype == INFIR2RT_E5M2 && b.dtype == INFIR2RT_E5M2)
    return setCallError(ctx, where, "%s", "cuBLASLt has no E5M2 x E5M2 FP8 GEMM");
  if (d.dtype != INFIR2RT_BF16 && d.dtype != INFIR2RT_F32)
    return setCallError(ctx, where, "%s", "the CUDA FP8 GEMM writes bf16 or f32");
  auto attributes = attrs::decode<attrs::scaled_matmul>(desc);
  int64_t blockA[INFIR2RT_MAX_RANK], blockB[2];
  for (int64_t i = 0; i < a.rank; ++i)
    blockA[i] = attributes.lhs_block[i];
  for (int64_t i = 0; i < 2; ++i)
    blockB[i] = attributes.rhs_block[i];
  ScaleMode ma, mb;
  if (!scaleModeOf(a, sa, blockA, ma) || !scaleModeOf(b, sb, blockB, mb))
    return setCallError(
        ctx, where, "%s",
        "cuBLASLt takes 1x128 groups along K, 128x128 blocks, one scale "
        "per tensor (f32) or MX blocks of 32 along K (E8M0)");
  if ((ma == ScaleMode::Mx32) != (mb == ScaleMode::Mx32))
    return setCallError(ctx, where, "%s",
                        "cuBLASLt's MXFP8 mode scales both operands in MX "
                        "blocks, not one");
  if (ma != ScaleMode::Scalar || mb != ScaleMode::Scalar)
    if (int32_t rc = requireArchitecture(ctx, where, ma == ScaleMode::Mx32))
      return rc;
  if (ma == ScaleMode::Blk128 && mb == ScaleMode::Blk128)
    return setCallError(ctx, where, "%s",
                    "cuBLASLt has no 128x128 x 128x128 block mode");
  if ((ma == ScaleMode::Scalar) != (mb == ScaleMode::Scalar))
    return setCallError(ctx, where, "%s",
                    "cuBLASLt cannot mix a per-tensor scale with block scales");

  int64_t K = a.shape[a.rank - 1], M = a.numel / K, N = b.shape[0];
  // With an accumulator the product goes to the workspace, then
  // out = acc + product (one rounding, as the CPU backend does). The
  // workspace then holds an M x N FP32 product (outside the plan: 17 MiB
  // for Qwen2.5-0.5B's largest weight gradient, 271 MiB for 7B's; for a
  // BF16 residual M is the tokens: 512 MiB at 16k tokens x 8192); beta = 1
  // in the block-scaled modes would avoid it, once measured on a GPU.
  const uint8_t *acc = nullptr;
  if (int32_t rc =
          accumulatorOf(ctx, desc, where, attributes.has_acc, 5, d, &acc))
    return rc;
  // The product's type: FP32 in the workspace with an accumulator.
  int64_t productType = acc ? INFIR2RT_F32 : d.dtype;

  Lt &lib = lt();
  if (int32_t rc = lib.init(ctx, where))
    return rc;

  // Scales in cuBLASLt's layouts (cuBLAS A = our rhs, B = our lhs), in the
  // workspace; a per-tensor scale is used where it is.
  void *scaleA = nullptr, *scaleB = nullptr;
  float *product = nullptr;
  INFIR2_CUDA_CHECK(ctx,
                    infir2::rt::cuda::takeWorkspace(
                        {{&scaleA, scaleLayoutBytes(mb, N, K)},
                         {&scaleB, scaleLayoutBytes(ma, M, K)},
                         {&product, acc ? M * N * int64_t(sizeof(float)) : 0}}),
                    where);
  uint8_t *dPtr = acc ? reinterpret_cast<uint8_t *>(product) : d.ptr;
  int32_t rc = layoutScales(ctx, where, sb, mb, N, K, &scaleA);
  if (!rc)
    rc = layoutScales(ctx, where, sa, ma, M, K, &scaleB);

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, ld = nullptr;
  auto run = [&]() -> int32_t {
    BLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t transA = CUBLAS_OP_T, transB = CUBLAS_OP_N;
    int8_t fastAccum = 0;
    int32_t modeA = cublasScaleMode(mb), modeB = cublasScaleMode(ma);
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA,
                                              &transA, sizeof transA));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB,
                                              &transB, sizeof transB));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(
        op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fastAccum, sizeof fastAccum));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(
        op, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &modeA, sizeof modeA));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(
        op, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &modeB, sizeof modeB));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(
        op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &scaleA, sizeof scaleA));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(
        op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &scaleB, sizeof scaleB));
    // A: our rhs [N, K] = column-major K x N; B: our lhs [M, K] = column-major
    // K x M; D: column-major N x M = our row-major [M, N].
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&la, fp8Type(b.dtype), K, N, K));
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&lb, fp8Type(a.dtype), K, M, K));
    cudaDataType_t dType =
        productType == INFIR2RT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&ld, dType, N, M, N));

    cublasLtMatmulAlgo_t algo;
    if (int32_t rc = lib.algorithm(ctx, where,
                                   {M, N, K, int(a.dtype), int(b.dtype),
                                    int(productType), modeA, modeB},
                                   op, la, lb, ld, algo))
      return rc;
    float alpha = 1.0f, beta = 0.0f;
    BLAS_CHECK(cublasLtMatmul(lib.handle, op, &alpha, b.ptr, la, a.ptr, lb,
                              &beta, dPtr, ld, dPtr, ld, &algo, lib.workspace,
                              kWorkspaceBytes,
                              infir2::rt::cuda::streamOf(ctx)));
    if (acc)
      addProductKernel<<<unsigned((M * N + 255) / 256), 256, 0,
                         infir2::rt::cuda::streamOf(ctx)>>>(
          {const_cast<uint8_t *>(acc), d.dtype, M * N}, product,
          {d.ptr, d.dtype, M * N});
    return infir2::rt::cuda::finishLaunch(ctx, where);
  };
  if (!rc)
    rc = run();
  if (ld)
    cublasLtMatrixLayoutDestroy(ld);
  if (lb)
    cublasLtMatrixLayoutDestroy(lb);
  if (la)
    cublasLtMatrixLayoutDestroy(la);
  if (op)
    cublasLtMatmulDescDestroy(op);
  return rc;
}

namespace {

cudaDataType_t denseType(int64_t dtype) {
  return dtype == INFIR2RT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

} // namespace

// infir2.matmul (BF16 or FP32, FP32 accumulation) through cuBLASLt, with the
// same row-major-to-column-major mapping: C[M, N] row-major is column-major
// N x M = op(rhs)ᵀ·op(lhs)ᵀ, so cuBLAS A is our rhs (op N when it is [K, N],
// T when it is [N, K]) and B our lhs (op N when [M, K], T when [K, M]).
extern "C" int32_t infir2rt_cuda_matmul(infir2rt_context *ctx,
                                        const int64_t *desc,
                                        const char *where) {
  Operand a = descOperand(ctx, desc, 0), b = descOperand(ctx, desc, 1),
          c = descOperand(ctx, desc, 2);
  auto attributes = attrs::decode<attrs::matmul>(desc);
  bool ta = attributes.transpose_lhs, tb = attributes.transpose_rhs;
  // With an accumulator: the result starts as it, and beta = 1.
  const uint8_t *acc = nullptr;
  if (int32_t rc =
          accumulatorOf(ctx, desc, where, attributes.has_acc, 3, c, &acc))
    return rc;
  if (acc && acc != c.ptr)
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpyAsync(c.ptr, acc,
                                      c.numel * infir2rt_dtype_size(c.dtype),
                                      cudaMemcpyDeviceToDevice,
                                      infir2::rt::cuda::streamOf(ctx)),
                      where);
  for (const Operand *o : {&a, &b, &c})
    if (o->dtype != INFIR2RT_BF16 && o->dtype != INFIR2RT_F32)
      return setCallError(ctx, where, "%s",
                      "the CUDA GEMM takes bf16 or f32 operands");
  if (a.dtype != b.dtype)
    return setCallError(ctx, where, "%s",
                    "the CUDA GEMM takes operands of one type");
  int64_t M = a.shape[a.rank - (ta ? 1 : 2)],
          K = a.shape[a.rank - (ta ? 2 : 1)];
  int64_t N = b.shape[b.rank - (tb ? 2 : 1)];
  int64_t batch = a.numel / (M * K);
  bool shared = b.rank == 2;
  // One GEMM over all rows when the weight is shared and lhs is [.., M, K].
  int64_t calls = shared && !ta ? 1 : batch,
          rows = shared && !ta ? batch * M : M;

  Lt &lib = lt();
  if (int32_t rc = lib.init(ctx, where))
    return rc;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  auto run = [&]() -> int32_t {
    BLAS_CHECK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t opA = tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                      opB = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA,
                                              &opA, sizeof opA));
    BLAS_CHECK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB,
                                              &opB, sizeof opB));
    // Column-major shapes as stored: rhs [K, N] is N x K (ld N), [N, K] is
    // K x N (ld K); lhs [M, K] is K x M (ld K), [K, M] is M x K (ld M).
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&la, denseType(b.dtype), tb ? K : N,
                                          tb ? N : K, tb ? K : N));
    BLAS_CHECK(cublasLtMatrixLayoutCreate(
        &lb, denseType(a.dtype), ta ? rows : K, ta ? K : rows, ta ? rows : K));
    BLAS_CHECK(cublasLtMatrixLayoutCreate(&lc, denseType(c.dtype), N, rows, N));
    // Dense GEMMs share the cache: their key marks the transposes instead
    // of scale modes (which are below 100).
    cublasLtMatmulAlgo_t algo;
    if (int32_t rc = lib.algorithm(ctx, where,
                                   {rows, N, K, int(a.dtype), int(b.dtype),
                                    int(c.dtype), 100 + int(ta), 100 + int(tb)},
                                   op, la, lb, lc, algo))
      return rc;
    float alpha = 1.0f, beta = acc ? 1.0f : 0.0f;
    int64_t ea = infir2rt_dtype_size(a.dtype),
            eb = infir2rt_dtype_size(b.dtype),
            ec = infir2rt_dtype_size(c.dtype);
    for (int64_t p = 0; p < calls; ++p)
      BLAS_CHECK(cublasLtMatmul(
          lib.handle, op, &alpha, b.ptr + (shared ? 0 : p * K * N * eb), la,
          a.ptr + p * M * K * ea, lb, &beta, c.ptr + p * M * N * ec, lc,
          c.ptr + p * M * N * ec, lc, &algo, lib.workspace, kWorkspaceBytes,
          infir2::rt::cuda::streamOf(ctx)));
    return infir2::rt::cuda::finishLaunch(ctx, where);
    return 0;
  };
  int32_t rc = run();
  if (lc)
    cublasLtMatrixLayoutDestroy(lc);
  if (lb)
    cublasLtMatrixLayoutDestroy(lb);
  if (la)
    cublasLtMatrixLayoutDestroy(la);
  if (op)
    cublasLtMatmulDescDestroy(op);
  return rc;
}
