//===- CublasLtLoader.h - cuBLASLt, loaded when a GPU step needs it -------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_CUBLASLTLOADER_H
#define INFIR2_RUNTIME_CUDA_CUBLASLTLOADER_H

namespace infir2::rt {

/// Why cuBLASLt cannot be loaded (opening it on the first call), or null
/// when it is.
const char *cublasLtLoadError();

} // namespace infir2::rt

#endif
