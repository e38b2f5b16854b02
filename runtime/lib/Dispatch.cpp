//===- Dispatch.cpp - The runtime's C entry points ------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2rt_<name> for every entry point of ABI.def, generated from it: each
// runs the entry of the context's backend (Backend.h; the CPU backend when
// the context names none). It knows no backend but the default.
//
// With INFIR2_PROFILE=1 in the environment, every call is timed (the
// backend synchronized after it, so that a GPU call's time is its own) and
// at exit each entry point's calls and seconds are printed, most first.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Backend.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

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

template <typename Fn>
int32_t timed(int index, const infir2rt_backend *backend,
              const infir2rt_context *ctx, Fn fn) {
  if (!profile.on)
    return fn();
  auto start = std::chrono::steady_clock::now();
  int32_t status = fn();
  char why[256];
  if (status == 0 && backend->synchronize(ctx->stream, why, sizeof why))
    std::fprintf(stderr, "profile: %s\n", why);
  profile.seconds[index] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ++profile.calls[index];
  return status;
}

} // namespace

#define INFIR2RT_ENTRY(name, attributes)                                       \
  extern "C" int32_t infir2rt_##name(infir2rt_context *ctx,                    \
                                     const int64_t *desc, const char *where) { \
    const infir2rt_backend *backend =                                          \
        ctx->backend ? ctx->backend : infir2rt_cpu_backend();                  \
    return timed(INFIR2RT_ENTRY_##name, backend, ctx, [&] {                    \
      return backend->entries[INFIR2RT_ENTRY_##name](ctx, desc, where);        \
    });                                                                        \
  }
#include "infir2/runtime/ABI.def"
