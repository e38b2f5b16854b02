//===- Mma.cuh - Warp-level BF16 tensor-core building blocks ----*- CUDA -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The pieces the tiled kernels (FlashAttention.cu) are built of: 16-byte
// asynchronous copies into shared memory, ldmatrix, and the m16n8k16 BF16
// tensor-core product with FP32 accumulators (mma.sync, sm_80 and later).
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"), with
// g = lane / 4 and c = 2 * (lane % 4):
//   A (16 x 16, row-major): a[0] = (g, c..c+1), a[1] = (g+8, c..c+1),
//                           a[2] = (g, c+8..c+9), a[3] = (g+8, c+8..c+9);
//   B (16 x 8, k x n):      b[0] = (k = c..c+1, n = g), b[1] = (k = c+8..c+9, n = g);
//   C (16 x 8, FP32):       d[0..1] = (g, c..c+1), d[2..3] = (g+8, c..c+1);
// each 32-bit register holds two BF16 values, the lower index in the lower
// half. So the C fragments of two neighbouring 8-column tiles, rounded to
// BF16, are the A fragment of a 16-wide step (the scores become P without
// leaving registers).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_MMA_CUH
#define INFIR2_RUNTIME_CUDA_MMA_CUH

#include <cuda_bf16.h>

#include <cstdint>

namespace infir2::rt::cuda::mma {

__device__ inline uint32_t sharedAddress(const void *p) {
  return uint32_t(__cvta_generic_to_shared(p));
}

/// 16 bytes from global to shared memory, asynchronously; zeros instead
/// when `valid` is false (nothing is read then, but `src` must still be a
/// mapped address).
__device__ inline void copy16(void *dst, const void *src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                   sharedAddress(dst)),
               "l"(src), "r"(valid ? 16 : 0)
               : "memory");
}
__device__ inline void commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
/// Waits until at most `N` committed groups of this thread are in flight.
template <int N> __device__ inline void waitGroups() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

/// Four 8 x 8 BF16 matrices from shared memory: lane l gives the address of
/// row l % 8 of matrix l / 8; register i holds this lane's pair of matrix i
/// (row g, columns c..c+1).
__device__ inline void load4(uint32_t (&r)[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(row)));
}
/// The same, transposed: register i holds (rows c..c+1, column g) of
/// matrix i.
__device__ inline void load4T(uint32_t (&r)[4], const void *row) {
  asm volatile(
      "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
      : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
      : "r"(sharedAddress(row)));
}

/// d += a·b on the tensor cores: 16 x 16 BF16 times 16 x 8 BF16, FP32.
__device__ inline void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                           uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0),
                 "r"(b1));
}

/// Two FP32 values as a BF16 pair (round to nearest even), `lo` in the
/// lower half.
__device__ inline uint32_t pack(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<uint32_t *>(&v);
}

/// The A fragment of 16-wide step `j` from FP32 C fragments `c` (row g and
/// g+8 of 8-column tiles 2j and 2j+1), rounded to BF16.
template <int N>
__device__ inline void aFromC(uint32_t (&a)[4], const float (&c)[N][4],
                              int j) {
  a[0] = pack(c[2 * j][0], c[2 * j][1]);
  a[1] = pack(c[2 * j][2], c[2 * j][3]);
  a[2] = pack(c[2 * j + 1][0], c[2 * j + 1][1]);
  a[3] = pack(c[2 * j + 1][2], c[2 * j + 1][3]);
}

} // namespace infir2::rt::cuda::mma

#endif // INFIR2_RUNTIME_CUDA_MMA_CUH
