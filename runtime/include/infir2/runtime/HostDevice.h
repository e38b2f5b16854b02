//===- HostDevice.h - Functions for both the CPU and the GPU ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// INFIR2_HD marks the math both backends run: inline C++ for the host
// compiler, __host__ __device__ under nvcc. mulRn/addRn/subRn are one
// IEEE operation each that nvcc may not contract into an FMA (it does so
// with plain `a * b + c`), so that update rules built from them give the
// same bits on both backends (the host build targets x86-64 without FMA).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_HOSTDEVICE_H
#define INFIR2_RUNTIME_HOSTDEVICE_H

#if defined(__CUDACC__)
#define INFIR2_HD __host__ __device__ __forceinline__
#else
#define INFIR2_HD inline
#endif

namespace infir2::rt {
#if defined(__CUDA_ARCH__)
INFIR2_HD float mulRn(float a, float b) { return __fmul_rn(a, b); }
INFIR2_HD float addRn(float a, float b) { return __fadd_rn(a, b); }
INFIR2_HD float subRn(float a, float b) { return __fsub_rn(a, b); }
#else
INFIR2_HD float mulRn(float a, float b) { return a * b; }
INFIR2_HD float addRn(float a, float b) { return a + b; }
INFIR2_HD float subRn(float a, float b) { return a - b; }
#endif
} // namespace infir2::rt

#endif // INFIR2_RUNTIME_HOSTDEVICE_H
