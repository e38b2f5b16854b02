//===- HostDevice.h - Functions for both the CPU and the GPU ----*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// INFIR2_HD marks the math both backends run: inline C++ for the host
// compiler, __host__ __device__ under nvcc.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_HOSTDEVICE_H
#define INFIR2_RUNTIME_HOSTDEVICE_H

#if defined(__CUDACC__)
#define INFIR2_HD __host__ __device__ __forceinline__
#else
#define INFIR2_HD inline
#endif

#endif // INFIR2_RUNTIME_HOSTDEVICE_H
