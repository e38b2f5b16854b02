//===- Entries.cpp - The CPU backend's entry points -----------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// infir2rt_cpu_<name> for every entry point of ABI.def, generated from it:
// each runs the CPU kernel (declared in Operand.h, defined by family in this
// directory). A kernel that cannot get memory for its temporary copies fails
// its call with a message (std::bad_alloc from the pool, outside parallel
// regions). The table of them is the CPU backend (Backend.cpp).
//
//===----------------------------------------------------------------------===//

#include "Operand.h"

#include "infir2/runtime/ABI.h"

#include <new>

#define INFIR2RT_ENTRY(name, operands, attributes, doc)                                       \
  extern "C" int32_t infir2rt_cpu_##name(                                      \
      infir2rt_context *ctx, const int64_t *desc, const char *where) {         \
    infir2::rt::cpu::Call call{ctx, desc, where};                              \
    try {                                                                      \
      return infir2::rt::cpu::name(call);                                      \
    } catch (const std::bad_alloc &) {                                         \
      return call.fail("out of memory for the kernel's temporary copies");     \
    }                                                                          \
  }
#include "infir2/runtime/ABI.def"
