//===- Bf16Gemm.cpp - BF16 GEMMs through oneDNN ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Bf16Gemm.h"

#include "infir2/runtime/ABI.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace infir2::rt::cpu {

namespace {

struct Engine {
  bool bf16 = false;
  std::string info;
  dnnl::engine engine;
  dnnl::stream stream;

  Engine() {
    const char *choice = std::getenv("INFIR2_CPU_GEMM");
    bool forceFp32 = choice && std::strcmp(choice, "fp32") == 0;
    // Anything but fp32 or auto is named on the start-up line, not ignored
    // silently.
    std::string ignored =
        choice && *choice && !forceFp32 && std::strcmp(choice, "auto") != 0
            ? std::string("; INFIR2_CPU_GEMM=") + choice +
                  " ignored (fp32 or auto)"
            : "";
    dnnl::cpu_isa isa = dnnl::cpu_isa::all;
    try {
      isa = dnnl::get_effective_cpu_isa();
    } catch (const dnnl::error &) {
    }
    // The ISAs with BF16 dot products; oneDNN would emulate them on the
    // others, slower than FP32 SGEMM.
    bool hasBf16 = isa == dnnl::cpu_isa::avx512_core_bf16 ||
                   isa == dnnl::cpu_isa::avx512_core_amx;
    if (forceFp32) {
      info = "FP32 SGEMM through OpenBLAS (INFIR2_CPU_GEMM=fp32)";
    } else if (!hasBf16) {
      info = "FP32 SGEMM through OpenBLAS (this CPU has no BF16 "
             "instructions: BF16 GEMMs are widened to FP32)";
    } else {
      try {
        engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
        stream = dnnl::stream(engine);
      } catch (const dnnl::error &e) {
        info = std::string("FP32 SGEMM through OpenBLAS (oneDNN failed to "
                           "start: ") +
               e.what() + ")";
        info += ignored;
        return;
      }
      bf16 = true;
      info = std::string("BF16 products, FP32 accumulation through oneDNN (") +
             (isa == dnnl::cpu_isa::avx512_core_amx ? "AMX" : "avx512_bf16") +
             "); FP32 operands through OpenBLAS";
    }
    info += ignored;
  }
};

Engine &engine() {
  static Engine e;
  return e;
}

} // namespace

bool bf16GemmEnabled() { return engine().bf16; }

bool bf16Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
              const uint16_t *a, int64_t lda, const uint16_t *b, int64_t ldb,
              void *c, int64_t ldc, bool cIsBf16, bool add) {
  using dt = dnnl::memory::data_type;
  using dims = dnnl::memory::dims;
  Engine &e = engine();
  if (!e.bf16)
    return false;
  try {
    // Row-major [m, k] is strides {lda, 1}; its transpose as stored [k, m]
    // is strides {1, lda}.
    dnnl::memory::desc ad(dims{m, k}, dt::bf16,
                          ta ? dims{1, lda} : dims{lda, 1});
    dnnl::memory::desc bd(dims{k, n}, dt::bf16,
                          tb ? dims{1, ldb} : dims{ldb, 1});
    dnnl::memory::desc cd(dims{m, n}, cIsBf16 ? dt::bf16 : dt::f32,
                          dims{ldc, 1});
    // oneDNN caches the compiled kernels by these descriptors (its
    // primitive cache): after the first step, creating one costs about
    // 10 µs.
    // Adding to C: a sum post-op (dst += A·B).
    dnnl::primitive_attr attr;
    if (add) {
      dnnl::post_ops ops;
      ops.append_sum(1.0f);
      attr.set_post_ops(ops);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(ad, bd, cd), attr,
                                    e.engine);
    dnnl::matmul mm(pd);
    dnnl::memory am(ad, e.engine, const_cast<uint16_t *>(a));
    dnnl::memory bm(bd, e.engine, const_cast<uint16_t *>(b));
    dnnl::memory cm(cd, e.engine, c);
    mm.execute(e.stream, {{DNNL_ARG_SRC, am},
                          {DNNL_ARG_WEIGHTS, bm},
                          {DNNL_ARG_DST, cm}});
    e.stream.wait();
  } catch (const dnnl::error &) {
    return false;
  }
  return true;
}

} // namespace infir2::rt::cpu

extern "C" const char *infir2rt_cpu_gemm_info(void) {
  return infir2::rt::cpu::engine().info.c_str();
}
