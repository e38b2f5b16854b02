//===- CublasLtLoader.cpp - cuBLASLt, loaded when a GPU step needs it -----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A trainer carries both backends and chooses one at run time. Linked
// against libcublasLt, every process, a CPU run's too, would load it, and
// its static constructors write most of its data: about 0.14 GiB resident
// (50 MB of code and 84 MB of .bss touched, measured with /proc/PID/smaps on
// CUDA 13.0), before the first step, on every rank. So the entry points
// the CUDA backend calls are defined here, with the signatures cublasLt.h
// declares: the first call opens the library (by its soname, then by the
// path this build found) and resolves each one once. A library that cannot
// be opened makes every call return CUBLAS_STATUS_NOT_INITIALIZED, and
// cublasLtGetStatusString says why; infir2rt_cuda_select refuses the
// device with that reason first (cublasLtLoadError below).
//
//===----------------------------------------------------------------------===//

#include "CublasLtLoader.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include <string>

namespace {

#define INFIR2_STRINGIFY2(x) #x
#define INFIR2_STRINGIFY(x) INFIR2_STRINGIFY2(x)

struct Library {
  void *handle = nullptr;
  std::string error;
};

const Library &library() {
  static Library lib = [] {
    Library l;
    const char *names[] = {
        "libcublasLt.so." INFIR2_STRINGIFY(CUBLAS_VER_MAJOR),
#ifdef INFIR2_CUBLASLT_PATH
        INFIR2_CUBLASLT_PATH,
#endif
    };
    for (const char *name : names) {
      if ((l.handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)))
        return l;
      const char *why = dlerror();
      l.error += l.error.empty() ? "cannot load cuBLASLt: " : "; ";
      l.error += why ? why : name;
    }
    return l;
  }();
  return lib;
}

/// `name` in the library, or null when it cannot be loaded.
template <typename F> F *resolve(const char *name) {
  void *handle = library().handle;
  return handle ? reinterpret_cast<F *>(dlsym(handle, name)) : nullptr;
}

} // namespace

const char *infir2::rt::cublasLtLoadError() {
  const Library &l = library();
  return l.handle ? nullptr : l.error.c_str();
}

// Each entry point: resolved on its first call, then called through.
#define INFIR2_FORWARD(name, params, args)                                     \
  cublasStatus_t name params {                                                 \
    static auto *f = resolve<decltype(name)>(#name);                           \
    return f ? f args : CUBLAS_STATUS_NOT_INITIALIZED;                         \
  }

extern "C" {

INFIR2_FORWARD(cublasLtCreate, (cublasLtHandle_t * handle), (handle))
INFIR2_FORWARD(cublasLtMatmulDescCreate,
               (cublasLtMatmulDesc_t * desc, cublasComputeType_t compute,
                cudaDataType_t scale),
               (desc, compute, scale))
INFIR2_FORWARD(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t desc), (desc))
INFIR2_FORWARD(cublasLtMatmulDescSetAttribute,
               (cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                const void *buf, size_t size),
               (desc, attr, buf, size))
INFIR2_FORWARD(cublasLtMatrixLayoutCreate,
               (cublasLtMatrixLayout_t * layout, cudaDataType type,
                uint64_t rows, uint64_t cols, int64_t ld),
               (layout, type, rows, cols, ld))
INFIR2_FORWARD(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t layout),
               (layout))
INFIR2_FORWARD(cublasLtMatmulPreferenceCreate,
               (cublasLtMatmulPreference_t * pref), (pref))
INFIR2_FORWARD(cublasLtMatmulPreferenceDestroy,
               (cublasLtMatmulPreference_t pref), (pref))
INFIR2_FORWARD(cublasLtMatmulPreferenceSetAttribute,
               (cublasLtMatmulPreference_t pref,
                cublasLtMatmulPreferenceAttributes_t attr, const void *buf,
                size_t size),
               (pref, attr, buf, size))
INFIR2_FORWARD(cublasLtMatmulAlgoGetHeuristic,
               (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                cublasLtMatmulPreference_t pref, int requested,
                cublasLtMatmulHeuristicResult_t results[], int *returned),
               (handle, desc, a, b, c, d, pref, requested, results, returned))
INFIR2_FORWARD(cublasLtMatmul,
               (cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                const void *alpha, const void *a, cublasLtMatrixLayout_t aDesc,
                const void *b, cublasLtMatrixLayout_t bDesc, const void *beta,
                const void *c, cublasLtMatrixLayout_t cDesc, void *d,
                cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t *algo,
                void *workspace, size_t workspaceBytes, cudaStream_t stream),
               (handle, desc, alpha, a, aDesc, b, bDesc, beta, c, cDesc, d,
                dDesc, algo, workspace, workspaceBytes, stream))

const char *cublasLtGetStatusString(cublasStatus_t status) {
  if (const char *error = infir2::rt::cublasLtLoadError())
    return error;
  static auto *f =
      resolve<decltype(cublasLtGetStatusString)>("cublasLtGetStatusString");
  return f ? f(status) : "cublasLtGetStatusString is missing from cuBLASLt";
}

} // extern "C"
