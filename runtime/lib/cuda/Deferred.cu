//===- Deferred.cu - Refusals a step stream reports at its end ------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "CudaCheck.h"
#include "Deferred.h"
#include "infir2/runtime/Error.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

namespace infir2::rt::cuda {

namespace {

/// What the message of a deferred refusal needs from its call.
struct Call {
  const char *where;
  RefusalKind kind;
  int detail; ///< index in the stream's details, or -1
};

constexpr size_t kTags = size_t(1) << (64 - kTagShift);
constexpr int kWords = 2, kDetails = 4096;
constexpr unsigned long long kPayloadBits = (1ull << kTagShift) - 1;

/// A stream's words (the words of refusals that skip a step, then of those
/// that fail it, then kDetails details), their host mirror (pinned: the
/// copy is queued, not waited for), and the calls tagged since the last
/// read. A failure wins over a skip wherever each came in the step: data
/// that the CPU backend would stop on (an id out of range) is never
/// passed over as a skipped step.
struct StreamRefusals {
  unsigned long long *words = nullptr;
  unsigned long long *mirror = nullptr;
  std::vector<Call> calls;
  int details = 0;
  bool readQueued = false;
};

std::mutex &lock() {
  static std::mutex m;
  return m;
}

std::map<cudaStream_t, StreamRefusals> &streams() {
  static std::map<cudaStream_t, StreamRefusals> s;
  return s;
}

void word(const Call &c, unsigned long long flag, unsigned long long detail,
          char *out, size_t size) {
  char message[sizeof infir2rt_context{}.error_message];
  c.kind.text(flag & kPayloadBits, detail, c.kind.a, c.kind.b, message,
              sizeof message);
  std::snprintf(out, size, "%s: %s", c.where, message);
}

void quantizeText(unsigned long long flag, unsigned long long, int64_t dual,
                  int64_t rowBlocks, char *out, size_t size) {
  int64_t block = int64_t(flag / 2);
  bool rowWise = block < rowBlocks;
  std::snprintf(out, size,
                "non-finite amax (%s) in scale block %lld%s: refusing to "
                "quantize it",
                flag % 2 ? "nan" : "inf",
                (long long)(rowWise ? block : block - rowBlocks),
                !dual     ? ""
                : rowWise ? " of the row-wise copy"
                          : " of the column-wise copy");
}

/// `what` %d at position %lld is out of range [0, vocab).
template <const char *What>
void idText(unsigned long long position, unsigned long long detail,
            int64_t vocab, int64_t, char *out, size_t size) {
  std::snprintf(out, size, "%s %d at position %lld is out of range [0, %lld)",
                What, int32_t(uint32_t(detail)), (long long)position,
                (long long)vocab);
}

constexpr char kTokenId[] = "token id", kTarget[] = "target";

} // namespace

RefusalKind quantizeRefusal(bool dual, int64_t rowBlocks) {
  return {INFIR2RT_NONFINITE, quantizeText, dual ? 1 : 0, rowBlocks};
}

RefusalKind idRefusal(int64_t vocab) {
  return {INFIR2RT_FAILED, idText<kTokenId>, vocab, 0};
}

RefusalKind targetRefusal(int64_t vocab) {
  return {INFIR2RT_FAILED, idText<kTarget>, vocab, 0};
}

int32_t openRefusal(infir2rt_context *ctx, const char *where,
                    const RefusalKind &kind, bool detail,
                    unsigned long long *own, RefusalSlot &slot) {
  if (int32_t rc = deferRefusal(ctx, where, kind, detail, slot))
    return rc;
  if (slot.word)
    return 0;
  INFIR2_CUDA_CHECK(
      ctx, cudaMemsetAsync(own, 0xff, 2 * sizeof *own, streamOf(ctx)), where);
  slot = {own, 0, detail ? own + 1 : nullptr};
  return 0;
}

int32_t closeRefusal(infir2rt_context *ctx, const char *where,
                     const RefusalKind &kind, const unsigned long long *own,
                     const RefusalSlot &slot) {
  if (slot.word != own)
    return 0;
  return refuseNow(ctx, where, kind, own, slot.detail);
}

int32_t deferRefusal(infir2rt_context *ctx, const char *where,
                     const RefusalKind &kind, bool detail, RefusalSlot &slot) {
  slot = RefusalSlot{};
  cudaStream_t stream = streamOf(ctx);
  if (!stream)
    return 0; // no step: the caller reads its word at once
  std::lock_guard<std::mutex> guard(lock());
  StreamRefusals &s = streams()[stream];
  if (s.calls.size() == kTags || (detail && s.details == kDetails))
    return 0; // too many unread: at once, too
  const size_t bytes = (kWords + kDetails) * sizeof *s.words;
  if (!s.words) {
    cudaError_t e = cudaMalloc(&s.words, bytes);
    if (e == cudaSuccess)
      e = cudaMallocHost(&s.mirror, bytes);
    if (e == cudaSuccess)
      e = cudaMemsetAsync(s.words, 0xff, bytes, stream);
    if (e != cudaSuccess) {
      cudaFree(s.words);
      cudaFreeHost(s.mirror);
      streams().erase(stream);
      return check(ctx, e, "the refusal words", where);
    }
  }
  slot.word = s.words + (kind.status == INFIR2RT_FAILED ? 1 : 0);
  slot.tag = (unsigned long long)s.calls.size() << kTagShift;
  slot.detail = detail ? s.words + kWords + s.details : nullptr;
  s.calls.push_back({where, kind, detail ? s.details++ : -1});
  return 0;
}

int32_t refuseNow(infir2rt_context *ctx, const char *where,
                  const RefusalKind &kind, const unsigned long long *word,
                  const unsigned long long *detail) {
  cudaStream_t stream = streamOf(ctx);
  unsigned long long flag = kNoRefusal, more = kNoRefusal;
  INFIR2_CUDA_CHECK(
      ctx,
      cudaMemcpyAsync(&flag, word, sizeof flag, cudaMemcpyDeviceToHost, stream),
      where);
  if (detail)
    INFIR2_CUDA_CHECK(ctx,
                      cudaMemcpyAsync(&more, detail, sizeof more,
                                      cudaMemcpyDeviceToHost, stream),
                      where);
  INFIR2_CUDA_CHECK(ctx, cudaStreamSynchronize(stream), where);
  if (flag == kNoRefusal)
    return 0;
  char message[sizeof ctx->error_message];
  kind.text(flag & kPayloadBits, more, kind.a, kind.b, message, sizeof message);
  setCallError(ctx, where, "%s", message);
  return kind.status;
}

cudaError_t queueRefusalRead(cudaStream_t stream) {
  std::lock_guard<std::mutex> guard(lock());
  auto it = streams().find(stream);
  if (it == streams().end() || it->second.calls.empty() ||
      it->second.readQueued)
    return cudaSuccess;
  StreamRefusals &s = it->second;
  size_t bytes = (kWords + size_t(s.details)) * sizeof *s.words;
  cudaError_t e =
      cudaMemcpyAsync(s.mirror, s.words, bytes, cudaMemcpyDeviceToHost, stream);
  if (e == cudaSuccess)
    e = cudaMemsetAsync(s.words, 0xff, bytes, stream);
  s.readQueued = e == cudaSuccess;
  return e;
}

int32_t takeRefusal(cudaStream_t stream, char *why, int64_t whySize) {
  std::lock_guard<std::mutex> guard(lock());
  auto it = streams().find(stream);
  if (it == streams().end() || !it->second.readQueued)
    return 0;
  StreamRefusals &s = it->second;
  std::vector<Call> calls;
  calls.swap(s.calls);
  s.details = 0;
  s.readQueued = false;
  unsigned long long flag =
      s.mirror[1] != kNoRefusal ? s.mirror[1] : s.mirror[0];
  if (flag == kNoRefusal)
    return 0;
  size_t tag = size_t(flag >> kTagShift);
  if (tag >= calls.size()) { // cannot happen: only tagged calls write
    std::snprintf(why, size_t(whySize), "a check refused its data (flag %llx)",
                  flag);
    return INFIR2RT_FAILED;
  }
  const Call &c = calls[tag];
  word(c, flag, c.detail >= 0 ? s.mirror[kWords + c.detail] : kNoRefusal, why,
       size_t(whySize));
  return c.kind.status;
}

void forgetRefusals(cudaStream_t stream) {
  std::lock_guard<std::mutex> guard(lock());
  auto it = streams().find(stream);
  if (it == streams().end())
    return;
  cudaFree(it->second.words);
  cudaFreeHost(it->second.mirror);
  streams().erase(it);
}

} // namespace infir2::rt::cuda
