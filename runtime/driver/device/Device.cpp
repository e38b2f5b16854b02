//===- Device.cpp - Where a trainer's steps run ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "device/Device.h"

#include "infir2/runtime/Error.h"

#include <cstdlib>
#include <cstring>

using namespace infir2::rt;

/// Room for the losses of many micro-batches and the gradients' counts.
static constexpr int64_t kReadBackBytes = 16384;

int infir2::rt::localRank() {
  for (const char *var : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                          "SLURM_LOCALID", "LOCAL_RANK"})
    if (const char *v = std::getenv(var))
      return std::atoi(v);
  return 0;
}

namespace {

/// A backend's status code and message as a Status.
Status checked(int32_t rc, const char *why) {
  if (rc)
    return Failure{why};
  return Status::ok();
}

} // namespace

Status Device::Region::allocate(const infir2rt_backend *b, int64_t n) {
  char why[512] = {0};
  if (b->allocate(&p, n, why, sizeof why)) {
    p = nullptr;
    return Failure{why};
  }
  owner = b;
  bytes = n;
  return Status::ok();
}

Device::~Device() {
  if (stream_)
    scratch_.owner->stream_destroy(stream_);
}

std::string infir2::rt::missingFp8Gemms(uint32_t need, uint32_t have) {
  std::string lack;
  auto add = [&](uint32_t bit, const char *what) {
    if ((need & bit) && !(have & bit))
      lack += (lack.empty() ? "" : "; ") + std::string(what);
  };
  add(INFIR2RT_FP8_GEMM_BLOCK128,
      "this trainer's FP8 GEMMs in 128-wide blocks (granularity=blockwise) "
      "need a Hopper GPU (compute capability 9.0)");
  add(INFIR2RT_FP8_GEMM_MX,
      "this trainer's FP8 GEMMs in MX blocks (granularity=mxfp8) need a "
      "Blackwell GPU (compute capability 10.0)");
  add(INFIR2RT_FP8_GEMM_E5M2_PAIR,
      "this trainer has FP8 GEMMs with both operands in E5M2 (the recipe "
      "option e5m2), which cuBLASLt does not run: the CPU backend does");
  return lack;
}

Status Device::open(DeviceChoice choice, int local, int64_t stateBytes,
                    int64_t scratchBytes, uint32_t fp8Gemms,
                    std::string &notice) {
  // The host copy of the state; 64 bytes of slack as the compiled step's
  // alignment allows. A model larger than the machine is an error naming
  // the planned and the available memory, not an abort.
  const infir2rt_backend *host = infir2rt_cpu_backend();
  INFIR2_RETURN_IF_ERROR(hostState_.allocate(host, stateBytes + 64));
  const infir2rt_backend *gpu =
      choice == DeviceChoice::Cpu ? nullptr : gpuBackend();
  char why[512] = {0};
  if (!gpu && choice == DeviceChoice::Cuda)
    return fail("--device=cuda: this trainer was built without the CUDA "
                "backend (build InfiR2 where nvcc is, with "
                "INFIR2_ENABLE_CUDA=ON)");
  if (!gpu && choice == DeviceChoice::Auto)
    notice = "built without the CUDA backend: training on the CPU";
  if (gpu && gpu->open(local, why, sizeof why)) {
    if (choice == DeviceChoice::Cuda)
      return fail("--device=cuda: %s", why);
    notice = std::string(why) + ": training on the CPU (--device cpu "
                                "chooses it without this notice)";
    gpu = nullptr;
  }
  // A GPU without the plan's FP8 GEMMs would stop at the first one.
  if (std::string lack = missingFp8Gemms(
          fp8Gemms, gpu && gpu->fp8_gemms ? gpu->fp8_gemms() : ~0u);
      gpu && !lack.empty()) {
    if (choice == DeviceChoice::Cuda)
      return fail("--device=cuda: %s: %s", why, lack.c_str());
    notice = std::string(why) + ": " + lack +
             ": training on the CPU (--device cpu chooses it without this "
             "notice)";
    gpu = nullptr;
  }
  backend_ = gpu ? gpu : host;
  shared_ = backend_->host_memory != 0;
  if (gpu)
    name_ = why;
  inUseBeforeRegions_ = backend_->memory_in_use();
  Status held =
      shared_ ? Status::ok() : state_.allocate(backend_, stateBytes + 64);
  if (held)
    held = scratch_.allocate(backend_, scratchBytes + 64);
  if (held)
    held = readBack_.allocate(backend_, kReadBackBytes);
  if (held)
    held = checked(backend_->stream_create(&stream_, why, sizeof why), why);
  if (!held && !shared_)
    return fail("%s: cannot hold the state (%lld MiB) and the scratch arena "
                "(%lld MiB): %s",
                name_.c_str(), (long long)(stateBytes >> 20),
                (long long)(scratchBytes >> 20), held.message().c_str());
  return held;
}

void Device::attach(infir2rt_context &ctx) {
  infir2::rt::clearCallError(ctx);
  ctx.regions[0] = region();
  ctx.regions[1] = scratch_.data();
  ctx.backend = backend_;
  ctx.stream = stream_;
}

// Where the regions are host memory the host copy is the state region, and
// the backend's upload and download do nothing; they are still called, so
// that a recording backend counts what a GPU run would do.
Status Device::upload(int64_t offset, int64_t bytes) {
  char why[512] = {0};
  return checked(backend_->upload(region() + offset, state() + offset, bytes,
                                  stream_, why, sizeof why),
                 why);
}

Status Device::download(int64_t offset, int64_t bytes) {
  char why[512] = {0};
  return checked(backend_->download(state() + offset, region() + offset, bytes,
                                    stream_, why, sizeof why),
                 why);
}

Status Device::zero(int64_t offset, int64_t bytes) {
  char why[512] = {0};
  if (!shared_) // the host copy too, as the step sees it
    infir2rt_cpu_backend()->zero(state() + offset, bytes, nullptr, why,
                                 sizeof why);
  return checked(
      backend_->zero(region() + offset, bytes, stream_, why, sizeof why), why);
}

Expected<int64_t> Device::reserve(int64_t bytes) {
  if (bytes > kReadBackBytes)
    return fail("cannot read back %lld bytes at once", (long long)bytes);
  int64_t start = (kept_ + 7) / 8 * 8;
  if (start + bytes > kReadBackBytes) { // full: one more round trip
    std::vector<uint8_t> part;
    INFIR2_RETURN_IF_ERROR(fetch(part));
    collected_ = std::move(part);
    start = 0;
  }
  kept_ = start + bytes;
  return int64_t(collected_.size()) + start;
}

Expected<int64_t> Device::keep(int64_t offset, int64_t bytes) {
  char why[512] = {0};
  Expected<int64_t> at = reserve(bytes);
  if (!at)
    return at;
  INFIR2_RETURN_IF_ERROR(checked(
      backend_->copy(readBack_.data() + (*at - int64_t(collected_.size())),
                     region() + offset, bytes, stream_, why, sizeof why),
      why));
  return at;
}

Expected<int64_t> Device::keepNonFiniteCount(int64_t offset, int64_t n) {
  char why[512] = {0};
  Expected<int64_t> at = reserve(sizeof(int64_t));
  if (!at)
    return at;
  auto *slot = reinterpret_cast<int64_t *>(readBack_.data() +
                                           (*at - int64_t(collected_.size())));
  INFIR2_RETURN_IF_ERROR(
      checked(backend_->count_nonfinite(
                  reinterpret_cast<const float *>(region() + offset), n, slot,
                  stream_, why, sizeof why),
              why));
  return at;
}

Status Device::collect(std::vector<uint8_t> &out, std::string *refused) {
  INFIR2_RETURN_IF_ERROR(fetch(out));
  std::string held = std::move(refusal_);
  refusal_.clear();
  if (refused)
    *refused = std::move(held);
  else if (!held.empty())
    return Failure{held};
  return Status::ok();
}

Status Device::fetch(std::vector<uint8_t> &out) {
  char why[512] = {0};
  out = std::move(collected_);
  collected_.clear();
  size_t base = out.size();
  out.resize(base + size_t(kept_));
  // Where the buffer is host memory the download does nothing (it is still
  // the one round trip a GPU makes), and the bytes are read in place. A
  // refusal is held for collect (the earliest: the buffer may fill first).
  int32_t rc = backend_->download(out.data() + base, readBack_.data(), kept_,
                                  stream_, why, sizeof why);
  if (rc == INFIR2RT_NONFINITE) {
    if (refusal_.empty())
      refusal_ = why;
    rc = 0;
  }
  INFIR2_RETURN_IF_ERROR(checked(rc, why));
  if (shared_ && kept_)
    std::memcpy(out.data() + base, readBack_.data(), size_t(kept_));
  kept_ = 0;
  return Status::ok();
}

Status Device::finish() {
  char why[512] = {0};
  return checked(backend_->synchronize(stream_, why, sizeof why), why);
}
