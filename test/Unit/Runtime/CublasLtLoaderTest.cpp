//===- CublasLtLoaderTest.cpp - cuBLASLt opened on first use --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The CUDA backend's cuBLASLt entry points are ours (CublasLtLoader.cpp),
// forwarding to the library opened on the first call; no GPU is needed for
// what these tests call.
//
//===----------------------------------------------------------------------===//

#include "CublasLtLoader.h"

#include <gtest/gtest.h>

#include <cublasLt.h>
#include <dlfcn.h>

#include <cstring>
#include <fstream>
#include <string>

namespace {

/// Whether the process has mapped a file whose name contains `name`.
bool mapped(const char *name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos)
      return true;
  return false;
}

// Linking the backend does not load cuBLASLt (this binary is linked with
// it); the first call does, and the calls reach the library: its own status
// strings, and host-side descriptors it creates and destroys.
TEST(CublasLtLoader, OpensTheLibraryOnFirstUseAndForwards) {
  EXPECT_FALSE(mapped("libcublasLt")) << "cuBLASLt is loaded at start-up";
  ASSERT_EQ(infir2::rt::cublasLtLoadError(), nullptr)
      << infir2::rt::cublasLtLoadError();
  EXPECT_TRUE(mapped("libcublasLt"));
  // The library's own wording (CUDA 13's: "the requested functionality is
  // not supported"), which this project does not contain.
  EXPECT_NE(std::strstr(cublasLtGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED),
                        "not supported"),
            nullptr);
  cublasLtMatrixLayout_t layout = nullptr;
  ASSERT_EQ(cublasLtMatrixLayoutCreate(&layout, CUDA_R_8F_E4M3, 256, 128, 256),
            CUBLAS_STATUS_SUCCESS);
  EXPECT_NE(layout, nullptr);
  EXPECT_EQ(cublasLtMatrixLayoutDestroy(layout), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  cublasOperation_t trans = CUBLAS_OP_T;
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &trans, sizeof(trans)),
            CUBLAS_STATUS_SUCCESS);
  // A wrong size is the library's own refusal, passed back.
  EXPECT_EQ(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                           &trans, 1),
            CUBLAS_STATUS_INVALID_VALUE);
  EXPECT_EQ(cublasLtMatmulDescDestroy(desc), CUBLAS_STATUS_SUCCESS);
}

// The process's symbols are ours, not the library's: the library's own
// definitions are other functions.
TEST(CublasLtLoader, ForwardsToTheLibrarysDefinitions) {
  ASSERT_EQ(infir2::rt::cublasLtLoadError(), nullptr);
  void *lib =
      dlopen("libcublasLt.so." CUBLASLT_TEST_SOVERSION, RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr) << dlerror();
  void *theirs = dlsym(lib, "cublasLtMatmul");
  ASSERT_NE(theirs, nullptr);
  EXPECT_NE(theirs, reinterpret_cast<void *>(&cublasLtMatmul));
  dlclose(lib);
}

} // namespace
