//===- Error.h - The failure of a runtime call ------------------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A call that fails records two things in its context (ABI.h): a pointer to
// its `where` (the op's location, a constant string of the compiled step, so
// it outlives the call and is never copied) and its message, formatted into
// the context's fixed buffer and cut to fit. No location is copied into a
// fixed-size buffer, so none can overrun it however long it is. Readers get
// "where: message" from callError(). Every backend writes through
// setCallError(); host code only.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_ERROR_H
#define INFIR2_RUNTIME_ERROR_H

#include "infir2/runtime/ABI.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>

namespace infir2::rt {

/// Records that the call at `where` failed with the message `fmt`, ...;
/// returns 1. `where` must outlive every reader of the context (the compiled
/// step's locations are constants); null means "no location". A message
/// longer than the context's buffer is cut, never overrun.
inline int32_t setCallErrorV(infir2rt_context *ctx, const char *where,
                             const char *fmt, va_list args) {
  ctx->error_where = where;
  std::vsnprintf(ctx->error_message, sizeof ctx->error_message, fmt, args);
  return 1;
}

inline int32_t setCallError(infir2rt_context *ctx, const char *where,
                            const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
inline int32_t setCallError(infir2rt_context *ctx, const char *where,
                            const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  setCallErrorV(ctx, where, fmt, args);
  va_end(args);
  return 1;
}

/// Forgets any earlier failure.
inline void clearCallError(infir2rt_context &ctx) {
  ctx.error_where = nullptr;
  ctx.error_message[0] = 0;
}

/// "where: message" of the call that failed ("message" without a location;
/// empty when none failed).
inline std::string callError(const infir2rt_context &ctx) {
  std::string message(ctx.error_message,
                      strnlen(ctx.error_message, sizeof ctx.error_message));
  if (!ctx.error_where)
    return message;
  return std::string(ctx.error_where) + ": " + message;
}

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_ERROR_H
