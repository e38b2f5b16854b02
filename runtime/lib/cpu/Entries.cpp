//===- Entries.cpp - The runtime's C entry points -------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2rt_<name> for every entry point of ABI.def, generated from it: each
// runs the CPU backend's version (declared in Operand.h, defined by family in
// this directory), or forwards to the context's device backend when the
// regions live there (ctx->device, a table in INFIR2RT_ENTRY_<name> order).
//
// A kernel that cannot get memory for its temporary copies fails its call
// with a message (std::bad_alloc from the pool, outside parallel regions).
// With INFIR2_PROFILE=1 in the environment, every call is timed (a GPU call
// synchronized) and at exit each entry point's calls and seconds are
// printed, most first.
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/ABI.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

struct Profile {
  bool on = false;
  int64_t calls[INFIR2RT_NUM_ENTRIES] = {};
  double seconds[INFIR2RT_NUM_ENTRIES] = {};

  Profile() {
    const char *v = std::getenv("INFIR2_PROFILE");
    on = v && *v && *v != '0';
  }
  ~Profile() {
    if (!on)
      return;
    static const char *names[] = {
#define INFIR2RT_ENTRY(name, attributes) #name,
#include "infir2/runtime/ABI.def"
    };
    int order[INFIR2RT_NUM_ENTRIES];
    double total = 0.0;
    for (int i = 0; i < INFIR2RT_NUM_ENTRIES; ++i) {
      order[i] = i;
      total += seconds[i];
    }
    std::sort(order, order + INFIR2RT_NUM_ENTRIES,
              [&](int a, int b) { return seconds[a] > seconds[b]; });
    std::fprintf(stderr, "profile: %.3f s in the runtime's entry points\n",
                 total);
    for (int i : order)
      if (calls[i])
        std::fprintf(stderr, "profile: %-22s %8lld calls %9.3f s %5.1f%%\n",
                     names[i], (long long)calls[i], seconds[i],
                     100.0 * seconds[i] / std::max(total, 1e-12));
  }
};

Profile profile;

template <typename Fn> int32_t timed(int index, Fn fn) {
  if (!profile.on)
    return fn();
  auto start = std::chrono::steady_clock::now();
  int32_t status = fn();
  profile.seconds[index] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ++profile.calls[index];
  return status;
}

/// A GPU call; when profiling, on the default stream, which the CUDA backend
/// synchronizes after every call, so that its time is its own.
int32_t onDevice(int index, infir2rt_context *ctx, const int64_t *desc,
                 const char *where) {
  if (!profile.on)
    return ctx->device[index](ctx, desc, where);
  void *stream = ctx->stream;
  ctx->stream = nullptr;
  int32_t status =
      timed(index, [&] { return ctx->device[index](ctx, desc, where); });
  ctx->stream = stream;
  return status;
}

} // namespace

#define INFIR2RT_ENTRY(name, attributes)                                       \
  extern "C" int32_t infir2rt_##name(infir2rt_context *ctx,                    \
                                     const int64_t *desc, const char *where) { \
    if (ctx->device)                                                           \
      return onDevice(INFIR2RT_ENTRY_##name, ctx, desc, where);                \
    return timed(INFIR2RT_ENTRY_##name, [&] {                                  \
      infir2::rt::cpu::Call call{ctx, desc, where};                            \
      try {                                                                    \
        return infir2::rt::cpu::name(call);                                    \
      } catch (const std::bad_alloc &) {                                       \
        return call.fail("out of memory for the kernel's temporary copies");   \
      }                                                                        \
    });                                                                        \
  }
#include "infir2/runtime/ABI.def"
