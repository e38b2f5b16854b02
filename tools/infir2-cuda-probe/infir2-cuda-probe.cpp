//===- infir2-cuda-probe.cpp - Can this machine run the CUDA backend? -----===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Prints the GPU a trainer would use (the one of this node-local rank), or
// why there is none; exits 0 only when the CUDA backend can run on it. The
// lit suite asks it whether to run the GPU tests.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/CUDA.h"

#include <cstdio>
#include <cstdlib>

int main() {
  const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int32_t device = 0, major = 0, minor = 0;
  char why[512] = {0};
  int32_t rc = infir2rt_cuda_select(local ? std::atoi(local) : 0, &device,
                                    &major, &minor, why, sizeof why);
  std::printf("%s\n", why);
  return rc ? 1 : 0;
}
