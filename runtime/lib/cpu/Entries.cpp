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
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/ABI.h"

#define INFIR2RT_ENTRY(name, attributes)                                       \
  extern "C" int32_t infir2rt_##name(infir2rt_context *ctx,                    \
                                     const int64_t *desc, const char *where) { \
    if (ctx->device)                                                           \
      return ctx->device[INFIR2RT_ENTRY_##name](ctx, desc, where);             \
    return infir2::rt::cpu::name(infir2::rt::cpu::Call{ctx, desc, where});     \
  }
#include "infir2/runtime/ABI.def"
