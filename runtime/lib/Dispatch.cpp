//===- Dispatch.cpp - The runtime's C entry points ------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2rt_<name> for every entry point of ABI.def, generated from it: each
// checks that the descriptor passes the operands and attribute words the
// entry's signature declares (Signature.h), then runs the entry of the
// context's backend (Backend.h; the CPU backend when the context names
// none). It knows no backend but the default.
//
// With INFIR2_PROFILE=1 in the environment, every call is timed (the
// backend synchronized after it, so that a GPU call's time is its own) and
// at exit each entry point's calls and seconds are printed, most first.
// With INFIR2_PROFILE=gpu a backend that has a `mark` (the CUDA backend's
// CUDA events, runtime/lib/cuda/Profile.h) times its stream instead,
// without synchronizing, and prints the table itself.
//
//===----------------------------------------------------------------------===//

#include "infir2/runtime/Backend.h"
#include "infir2/runtime/Descriptor.h"
#include "infir2/runtime/Error.h"
#include "infir2/runtime/Signature.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

struct Profile {
  bool on = false, gpu = false;
  int64_t marked = 0; ///< calls a backend timed itself (INFIR2_PROFILE=gpu)
  int64_t calls[INFIR2RT_NUM_ENTRIES] = {};
  double seconds[INFIR2RT_NUM_ENTRIES] = {};

  Profile() {
    const char *v = std::getenv("INFIR2_PROFILE");
    on = v && *v && *v != '0';
    gpu = on && std::string(v) == "gpu";
  }
  ~Profile() {
    if (!on || (marked > 0 && std::all_of(calls, calls + INFIR2RT_NUM_ENTRIES,
                                          [](int64_t n) { return n == 0; })))
      return;
    static const char *names[] = {
#define INFIR2RT_ENTRY(name, operands, attributes, doc) #name,
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
int32_t timed(int index, const infir2rt_backend *backend, infir2rt_context *ctx,
              const char *where, Fn fn) {
  if (!profile.on)
    return fn();
  if (profile.gpu && backend->mark) {
    backend->mark(ctx->stream, index);
    ++profile.marked;
    return fn();
  }
  auto start = std::chrono::steady_clock::now();
  int32_t status = fn();
  // The wait is where a GPU reports what the call's work found (a refusal
  // it deferred names its call first: "where: ..."), so the call fails here
  // as it would at the step's read-back.
  char why[512];
  if (status == 0) {
    if (int32_t rc = backend->synchronize(ctx->stream, why, sizeof why)) {
      bool named = where && std::strncmp(why, where, std::strlen(where)) == 0;
      infir2::rt::setCallError(ctx, named ? nullptr : where, "%s", why);
      status = rc;
    }
  }
  profile.seconds[index] +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ++profile.calls[index];
  return status;
}

/// A descriptor (ABI.h) as checkSignature sees it.
struct DescriptorView {
  const int64_t *desc;
  int64_t operandCount() const { return infir2::rt::descOperandCount(desc); }
  int64_t attrCount() const { return infir2::rt::descAttrCount(desc); }
  int64_t rank(int64_t i) const {
    return desc[2 + i * INFIR2RT_OPERAND_WORDS + 2];
  }
  double attr(int64_t i) const { return infir2::rt::descAttr(desc, i); }
};

/// Runs entry `index` of the context's backend, once the descriptor has
/// the operands and attribute words ABI.def declares for it.
int32_t dispatch(int index, infir2rt_context *ctx, const int64_t *desc,
                 const char *where) {
  std::string why;
  if (!infir2::rt::checkSignature(index, DescriptorView{desc}, why))
    return infir2::rt::setCallError(ctx, where, "the call does not match its "
                                    "entry point: %s", why.c_str());
  const infir2rt_backend *backend =
      ctx->backend ? ctx->backend : infir2rt_cpu_backend();
  return timed(index, backend, ctx, where,
               [&] { return backend->entries[index](ctx, desc, where); });
}

} // namespace

#define INFIR2RT_ENTRY(name, operands, attributes, doc)                        \
  extern "C" int32_t infir2rt_##name(infir2rt_context *ctx,                    \
                                     const int64_t *desc, const char *where) { \
    return dispatch(INFIR2RT_ENTRY_##name, ctx, desc, where);                  \
  }
#include "infir2/runtime/ABI.def"
