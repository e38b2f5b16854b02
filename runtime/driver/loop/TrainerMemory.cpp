//===- TrainerMemory.cpp - Planned against measured memory ----------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// What the process holds beside what the compiler planned: its resident set
// before the regions exist, and at the end of a run its peak against the
// plan and the CPU kernels' reused temporaries.
//
//===----------------------------------------------------------------------===//

#include "loop/Trainer.h"

#include "infir2/runtime/ABI.h"

#include <cstdio>

#include <sys/resource.h>
#include <unistd.h>

using namespace infir2::rt;

/// This process's resident bytes now (/proc/self/statm), 0 if unknown.
double Trainer::residentBytes() {
  long pages = 0, resident = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2)
      resident = 0;
    std::fclose(f);
  }
  return double(resident) * double(sysconf(_SC_PAGESIZE));
}

void Trainer::reportMemory() const {
  // The compiler's plan (state and scratch regions) beside what the process
  // holds: its peak resident set, and, on the CPU, the kernels' reused
  // temporaries, which the plan does not count.
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  double gib = 1024.0 * 1024.0 * 1024.0;
  double planned = double(s_.m.stateBytes + s_.m.scratchBytes) / gib;
  double peak = double(usage.ru_maxrss) * 1024.0 / gib;
  if (s_.device.onGpu()) {
    // The regions stay for the run and the backend's workspace is only
    // ever replaced by a larger one, so what the GPU holds at the end is
    // its peak (other processes on the same GPU counted too).
    double held = double(s_.device.bytesInUse()) / gib,
           before = double(s_.device.bytesInUseBeforeRegions()) / gib;
    std::fprintf(stderr,
                 "trainer: memory: planned %.2f GiB on the device; the GPU "
                 "holds %.2f GiB (%+.1f%% of the plan beside the %.2f GiB "
                 "held before the regions: the CUDA context and libraries)\n",
                 planned, held,
                 planned > 0 ? 100.0 * ((held - before) / planned - 1.0) : 0.0,
                 before);
    return;
  }
  std::fprintf(stderr,
               "trainer: memory: planned %.2f GiB (state %.2f + scratch %.2f), "
               "kernel temporaries %.2f GiB, peak resident %.2f GiB "
               "(%+.1f%% of the plan; %.2f GiB of it the process before its "
               "regions)\n",
               planned, double(s_.m.stateBytes) / gib,
               double(s_.m.scratchBytes) / gib,
               double(infir2rt_cpu_pool_bytes()) / gib, peak,
               100.0 * (peak / planned - 1.0), residentAtOpen_ / gib);
}
