//===- Deferred.h - Refusals a step stream reports at its end --*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Calls that check their data refuse it with the CPU backend's status and
// message: a quantization a non-finite amax, a loss a target outside the
// vocabulary. On the CPU the call fails at once; on a step stream the GPU
// writes the refusal to a device word and the call returns, so that no
// check makes the host wait (a 0.5B fp8 step makes ~270). The word is read
// in the round trip the step makes anyway (the backend's `download` or
// `synchronize`): each checking call on the stream takes a tag (its order
// since the last read) and its kernels lower the word with
// atomicMin(tag | payload), so the earliest refusing call and its smallest
// payload (a block, a position) win, as on the CPU, where the step stops
// there; a refusal that fails the step (an id out of range) has a word of
// its own and wins over one that skips it (a non-finite amax), since the
// CPU backend, which goes on past a skipped micro-batch, would stop on it.
// A call may also take a detail word of its own (the offending value). The
// host keeps each tag's `where` and how to word it.
//
// Without a step stream (the tests) a call reads its own word at once
// (refuseNow), from the workspace.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_CUDA_DEFERRED_H
#define INFIR2_RUNTIME_CUDA_DEFERRED_H

#include "infir2/runtime/ABI.h"

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace infir2::rt::cuda {

/// The payload bits below a tag: a quantization's flag (nonFiniteFlag:
/// block·2 + nan, so blocks below 2^39), a position.
constexpr int kTagShift = 40;
/// A word (and detail) no check has lowered.
constexpr unsigned long long kNoRefusal = ~0ull;

/// How a refusal is worded ("where: " comes first) and what the call
/// returns for it.
struct RefusalKind {
  int32_t status; ///< INFIR2RT_NONFINITE (a skipped step) or _FAILED
  /// The message from the payload (tag bits cleared), the detail word and
  /// the call's two numbers.
  void (*text)(unsigned long long payload, unsigned long long detail, int64_t a,
               int64_t b, char *out, size_t size);
  int64_t a = 0, b = 0;
};

/// Where a call's kernels report: atomicMin(word, tag | payload), and
/// atomicMin(detail, ...) where the call asked for a detail.
struct RefusalSlot {
  unsigned long long *word = nullptr;   ///< device memory
  unsigned long long tag = 0;           ///< this call's bits above kTagShift
  unsigned long long *detail = nullptr; ///< device memory, or null
};

/// A checking call on ctx's step stream: its slot in the stream's word,
/// remembered with `where` (a constant of the compiled step) and `kind`.
/// Without a step stream (or once 2^24 calls or 4,096 details wait unread)
/// the slot's word is null: the caller reads its own at once (refuseNow).
/// Non-zero, with ctx's error, when the stream's words cannot be made.
int32_t deferRefusal(infir2rt_context *ctx, const char *where,
                     const RefusalKind &kind, bool detail, RefusalSlot &slot);

/// The call's own word (and detail, or null) read at once: 0, or the
/// kind's status with its message in ctx.
int32_t refuseNow(infir2rt_context *ctx, const char *where,
                  const RefusalKind &kind, const unsigned long long *word,
                  const unsigned long long *detail);

/// deferRefusal, else (no step stream) the call's `own` two words of its
/// workspace, reset on its stream: the slot its kernels report to.
int32_t openRefusal(infir2rt_context *ctx, const char *where,
                    const RefusalKind &kind, bool detail,
                    unsigned long long *own, RefusalSlot &slot);

/// After the call's kernels: refuseNow where the slot is the call's own
/// words, else 0 (the stream's word is read at its next wait).
int32_t closeRefusal(infir2rt_context *ctx, const char *where,
                     const RefusalKind &kind, const unsigned long long *own,
                     const RefusalSlot &slot);

/// Before the host waits for `stream`: queues the copy of its words to the
/// host and their reset (nothing when no call checked since the last read).
cudaError_t queueRefusalRead(cudaStream_t stream);

/// After the wait: 0, or the earliest refusal's status with "where:
/// message" in `why`. Forgets the tags.
int32_t takeRefusal(cudaStream_t stream, char *why, int64_t whySize);

/// Frees what the stream's refusals held (the stream is destroyed).
void forgetRefusals(cudaStream_t stream);

/// A quantization's refusal (the CPU backend's words; a dual one also names
/// the copy): `a` is 1 for quantize_dual, `b` the row-wise copy's blocks.
RefusalKind quantizeRefusal(bool dual, int64_t rowBlocks);

/// A token id (embedding and its gradient) or a loss's target outside
/// [0, vocab), in the CPU backend's words: the payload is its position,
/// the detail position << 32 | its bits.
RefusalKind idRefusal(int64_t vocab);
RefusalKind targetRefusal(int64_t vocab);

/// What a kernel does with an out-of-range id at `position` (below 2^32:
/// a micro-batch of fewer tokens than that).
__device__ inline void refuseId(const RefusalSlot &slot, int64_t position,
                                int32_t id) {
  atomicMin(slot.word, slot.tag | (unsigned long long)position);
  atomicMin(slot.detail, (unsigned long long)position << 32 | uint32_t(id));
}

} // namespace infir2::rt::cuda

#endif // INFIR2_RUNTIME_CUDA_DEFERRED_H
