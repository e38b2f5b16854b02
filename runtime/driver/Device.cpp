//===- Device.cpp - Where a trainer's steps run ---------------------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "Device.h"

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

bool Device::Region::allocate(const infir2rt_backend *b, int64_t n,
                              std::string &error) {
  char why[512] = {0};
  if (b->allocate(&p, n, why, sizeof why)) {
    p = nullptr;
    error = why;
    return false;
  }
  owner = b;
  bytes = n;
  return true;
}

Device::~Device() {
  if (stream_)
    scratch_.owner->stream_destroy(stream_);
}

bool Device::ok(int32_t rc, const char *why, std::string &error) {
  if (rc)
    error = why;
  return rc == 0;
}

bool Device::open(const std::string &choice, int local, int64_t stateBytes,
                  int64_t scratchBytes, std::string &notice,
                  std::string &error) {
  if (choice != "auto" && choice != "cuda" && choice != "cpu") {
    error = "--device must be auto, cuda or cpu, got '" + choice + "'";
    return false;
  }
  // The host copy of the state; 64 bytes of slack as the compiled step's
  // alignment allows. A model larger than the machine is an error naming
  // the planned and the available memory, not an abort.
  const infir2rt_backend *host = infir2rt_cpu_backend();
  if (!hostState_.allocate(host, stateBytes + 64, error))
    return false;
  const infir2rt_backend *gpu = choice == "cpu" ? nullptr : gpuBackend();
  char why[512] = {0};
  if (!gpu && choice == "cuda") {
    error = "--device=cuda: this trainer was built without the CUDA backend "
            "(build InfiR2 where nvcc is, with INFIR2_ENABLE_CUDA=ON)";
    return false;
  }
  if (!gpu && choice == "auto")
    notice = "built without the CUDA backend: training on the CPU";
  if (gpu && gpu->open(local, why, sizeof why)) {
    if (choice == "cuda") {
      error = std::string("--device=cuda: ") + why;
      return false;
    }
    notice = std::string(why) + ": training on the CPU (--device cpu "
                                "chooses it without this notice)";
    gpu = nullptr;
  }
  backend_ = gpu ? gpu : host;
  shared_ = backend_->host_memory != 0;
  if (gpu)
    name_ = why;
  inUseBeforeRegions_ = backend_->memory_in_use();
  std::string failure;
  bool held = (shared_ || state_.allocate(backend_, stateBytes + 64, failure)) &&
              scratch_.allocate(backend_, scratchBytes + 64, failure) &&
              readBack_.allocate(backend_, kReadBackBytes, failure) &&
              ok(backend_->stream_create(&stream_, why, sizeof why), why,
                 failure);
  if (!held && shared_) {
    error = failure;
    return false;
  }
  if (!held) {
    error = name_ + ": cannot hold the state (" +
            std::to_string(stateBytes >> 20) + " MiB) and the scratch arena (" +
            std::to_string(scratchBytes >> 20) + " MiB): " + failure;
    return false;
  }
  return true;
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
bool Device::upload(int64_t offset, int64_t bytes, std::string &error) {
  char why[512] = {0};
  return ok(backend_->upload(region() + offset, state() + offset, bytes,
                             stream_, why, sizeof why),
            why, error);
}

bool Device::download(int64_t offset, int64_t bytes, std::string &error) {
  char why[512] = {0};
  return ok(backend_->download(state() + offset, region() + offset, bytes,
                               stream_, why, sizeof why),
            why, error);
}

bool Device::zero(int64_t offset, int64_t bytes, std::string &error) {
  char why[512] = {0};
  if (!shared_) // the host copy too, as the step sees it
    infir2rt_cpu_backend()->zero(state() + offset, bytes, nullptr, why,
                                 sizeof why);
  return ok(backend_->zero(region() + offset, bytes, stream_, why,
                           sizeof why),
            why, error);
}

bool Device::reserve(int64_t bytes, int64_t &at, std::string &error) {
  if (bytes > kReadBackBytes) {
    error = "cannot read back " + std::to_string(bytes) + " bytes at once";
    return false;
  }
  int64_t start = (kept_ + 7) / 8 * 8;
  if (start + bytes > kReadBackBytes) { // full: one more round trip
    std::vector<uint8_t> part;
    if (!fetch(part, error))
      return false;
    collected_ = std::move(part);
    start = 0;
  }
  at = int64_t(collected_.size()) + start;
  kept_ = start + bytes;
  return true;
}

bool Device::keep(int64_t offset, int64_t bytes, int64_t &at,
                  std::string &error) {
  char why[512] = {0};
  return reserve(bytes, at, error) &&
         ok(backend_->copy(readBack_.data() + (at - int64_t(collected_.size())),
                           region() + offset, bytes, stream_, why, sizeof why),
            why, error);
}

bool Device::keepNonFiniteCount(int64_t offset, int64_t n, int64_t &at,
                                std::string &error) {
  char why[512] = {0};
  if (!reserve(sizeof(int64_t), at, error))
    return false;
  auto *slot = reinterpret_cast<int64_t *>(
      readBack_.data() + (at - int64_t(collected_.size())));
  return ok(backend_->count_nonfinite(
                reinterpret_cast<const float *>(region() + offset), n, slot,
                stream_, why, sizeof why),
            why, error);
}

bool Device::collect(std::vector<uint8_t> &out, std::string &error,
                     std::string *refused) {
  if (!fetch(out, error))
    return false;
  std::string held = std::move(refusal_);
  refusal_.clear();
  if (refused)
    *refused = std::move(held);
  else if (!held.empty()) {
    error = held;
    return false;
  }
  return true;
}

bool Device::fetch(std::vector<uint8_t> &out, std::string &error) {
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
  if (!ok(rc, why, error))
    return false;
  if (shared_ && kept_)
    std::memcpy(out.data() + base, readBack_.data(), size_t(kept_));
  kept_ = 0;
  return true;
}

bool Device::finish(std::string &error) {
  char why[512] = {0};
  return ok(backend_->synchronize(stream_, why, sizeof why), why, error);
}
