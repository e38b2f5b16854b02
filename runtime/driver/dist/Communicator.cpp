//===- Communicator.cpp - MPI for data-parallel CPU training --------------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#include "dist/Communicator.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#ifdef INFIR2_HAVE_MPI
#include "dist/CollectiveWatch.h"

#include <mpi.h>
#else
namespace infir2::rt {
class CollectiveWatch {};
} // namespace infir2::rt
#endif
#ifdef INFIR2_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

using namespace infir2::rt;

namespace {

/// The group size a launcher announces through the environment, or 1.
int launcherSize() {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char *v = std::getenv(var))
      return std::atoi(v);
  return 1;
}

#ifdef INFIR2_HAVE_MPI
int32_t mpiFailed(int rc, const char *call, char *error, int64_t errorSize) {
  if (rc == MPI_SUCCESS)
    return 0;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  std::snprintf(error, size_t(errorSize), "%s: %s", call, text);
  return 1;
}

/// MPI counts are int: larger buffers are refused with a message (buckets
/// are 25 MiB by default; only a single huge tensor gets near this).
int32_t mpiCount(int64_t n, const char *what, char *error, int64_t errorSize) {
  if (n <= INT32_MAX)
    return 0;
  std::snprintf(error, size_t(errorSize),
                "%s of %lld elements exceeds MPI's int counts", what,
                (long long)n);
  return 1;
}

/// Waits for a started collective under the group's deadline. `rc` is the
/// start's code: a collective that did not start is not waited for.
int waitFor(void *impl, int rc, MPI_Request &request, const char *call) {
  if (rc != MPI_SUCCESS)
    return rc;
  return static_cast<Communicator *>(impl)->watch()->wait(request, call);
}

/// The communicator's group.
MPI_Comm groupOf(void *group) {
  return group ? *static_cast<MPI_Comm *>(group) : MPI_COMM_WORLD;
}

int32_t mpiAllReduce(void *impl, float *data, int64_t n, char *error,
                     int64_t errorSize) {
  // In pieces of 64 MiB: Open MPI's all-reduce takes a temporary buffer
  // the size of what it reduces, outside the plan, and an in-place run of
  // gradient accumulators is all of them (the ~110 M model: 0.4 GiB).
  const int64_t chunk = int64_t(1) << 24;
  for (int64_t at = 0; at < n; at += chunk) {
    int count = int(std::min(chunk, n - at));
    MPI_Request request;
    int rc = MPI_Iallreduce(
        MPI_IN_PLACE, data + at, count, MPI_FLOAT, MPI_SUM,
        groupOf(static_cast<Communicator *>(impl)->mpiGroup()), &request);
    if (mpiFailed(waitFor(impl, rc, request, "an all-reduce"), "MPI_Allreduce",
                  error, errorSize))
      return 1;
  }
  return 0;
}

int32_t mpiReduceScatter(void *impl, const float *send, float *recv, int64_t n,
                         char *error, int64_t errorSize) {
  if (mpiCount(n, "a reduce-scatter block", error, errorSize))
    return 1;
  MPI_Request request;
  int rc = MPI_Ireduce_scatter_block(
      send, recv, int(n), MPI_FLOAT, MPI_SUM,
      groupOf(static_cast<Communicator *>(impl)->mpiGroup()), &request);
  return mpiFailed(waitFor(impl, rc, request, "a reduce-scatter"),
                   "MPI_Reduce_scatter_block", error, errorSize);
}

int32_t mpiAllGather(void *impl, const void *send, void *recv, int64_t bytes,
                     char *error, int64_t errorSize) {
  if (mpiCount(bytes, "an all-gather block", error, errorSize))
    return 1;
  MPI_Request request;
  int rc = MPI_Iallgather(
      send, int(bytes), MPI_BYTE, recv, int(bytes), MPI_BYTE,
      groupOf(static_cast<Communicator *>(impl)->mpiGroup()), &request);
  return mpiFailed(waitFor(impl, rc, request, "an all-gather"), "MPI_Allgather",
                   error, errorSize);
}
#endif

#ifdef INFIR2_HAVE_NCCL
ncclComm_t ncclOf(void *impl) {
  return static_cast<ncclComm_t>(static_cast<Communicator *>(impl)->nccl());
}

/// The communicator is non-blocking (so that its start-up can time out
/// instead of hanging): a call may return ncclInProgress, and then runs
/// until the communicator's state says it is done.
ncclResult_t settle(ncclComm_t comm, ncclResult_t rc) {
  while (rc == ncclInProgress)
    ncclCommGetAsyncError(comm, &rc);
  return rc;
}

int32_t ncclFailed(ncclResult_t rc, const char *call, char *error,
                   int64_t errorSize) {
  if (rc == ncclSuccess)
    return 0;
  std::snprintf(error, size_t(errorSize), "%s: %s", call,
                ncclGetErrorString(rc));
  return 1;
}

int32_t ncclAllReduceSum(void *impl, float *data, int64_t n, void *stream,
                         char *error, int64_t errorSize) {
  return ncclFailed(
      settle(ncclOf(impl),
             ncclAllReduce(data, data, size_t(n), ncclFloat, ncclSum,
                           ncclOf(impl), static_cast<cudaStream_t>(stream))),
      "ncclAllReduce", error, errorSize);
}

int32_t ncclReduceScatterSum(void *impl, const float *send, float *recv,
                             int64_t n, void *stream, char *error,
                             int64_t errorSize) {
  return ncclFailed(
      settle(ncclOf(impl),
             ncclReduceScatter(send, recv, size_t(n), ncclFloat, ncclSum,
                               ncclOf(impl),
                               static_cast<cudaStream_t>(stream))),
      "ncclReduceScatter", error, errorSize);
}

int32_t ncclAllGatherBytes(void *impl, const void *send, void *recv,
                           int64_t bytes, void *stream, char *error,
                           int64_t errorSize) {
  return ncclFailed(
      settle(ncclOf(impl),
             ncclAllGather(send, recv, size_t(bytes), ncclUint8, ncclOf(impl),
                           static_cast<cudaStream_t>(stream))),
      "ncclAllGather", error, errorSize);
}
#endif

} // namespace

Communicator::Communicator() = default;
Communicator::~Communicator() {
  if (parent_)
    parent_->children_.erase(
        std::remove(parent_->children_.begin(), parent_->children_.end(), this),
        parent_->children_.end());
#ifdef INFIR2_HAVE_MPI
  // The handle only: MPI_Finalize frees the communicators themselves.
  delete static_cast<MPI_Comm *>(group_);
#endif
}

void Communicator::setTimeout(double seconds) {
#ifdef INFIR2_HAVE_MPI
  if (watch_)
    watch_->setTimeout(seconds);
#else
  (void)seconds;
#endif
}

void Communicator::useDeviceCollectives(std::string &notice) {
  if (size_ == 1)
    return;
#ifdef INFIR2_HAVE_NCCL
  if (const char *v = std::getenv("INFIR2_COLLECTIVES");
      v && std::strcmp(v, "mpi") == 0) {
    notice = "INFIR2_COLLECTIVES=mpi: collectives staged through host "
             "memory over MPI";
    return;
  }
  // The group's rank 0's NCCL id (and whether it has one) reaches the
  // others over the group's MPI communicator: each group of a 2-D layout
  // gets an NCCL communicator of its own.
  // The start-up is non-blocking and bounded in time, so that a rank that
  // cannot join makes the others give up instead of wait; the group then
  // decides together, and no rank waits in NCCL for one that fell back.
  struct {
    ncclUniqueId id;
    int ok;
  } root{};
  if (rank_ == 0)
    root.ok = ncclGetUniqueId(&root.id) == ncclSuccess;
  MPI_Bcast(&root, sizeof root, MPI_BYTE, 0, groupOf(group_));
  if (root.ok) { // FNV-1a of the id's bytes
    const auto *bytes = reinterpret_cast<const unsigned char *>(&root.id);
    bootstrapId_ = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof root.id; ++i)
      bootstrapId_ = (bootstrapId_ ^ bytes[i]) * 1099511628211ull;
  }
  ncclComm_t comm = nullptr;
  ncclResult_t rc = ncclInvalidUsage;
  bool timedOut = false;
  if (root.ok) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    rc = ncclCommInitRankConfig(&comm, size_, root.id, rank_, &config);
    const char *limit = std::getenv("INFIR2_NCCL_INIT_TIMEOUT");
    double seconds = limit ? std::atof(limit) : 120.0;
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(seconds);
    while (rc == ncclInProgress && comm) {
      if (std::chrono::steady_clock::now() > deadline) {
        timedOut = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      ncclCommGetAsyncError(comm, &rc);
    }
  }
  int ok = rc == ncclSuccess, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, groupOf(group_));
  if (!all) {
    if (comm)
      ncclCommAbort(comm);
    std::string why = !root.ok   ? ": rank 0 could not make an NCCL id"
                      : timedOut ? ": its start-up timed out "
                                   "(INFIR2_NCCL_INIT_TIMEOUT, seconds)"
                      : !ok      ? std::string(": ") + ncclGetErrorString(rc)
                                 : std::string(" on another rank");
    notice = "NCCL could not start" + why +
             "; collectives staged through host memory over MPI";
    return;
  }
  nccl_ = comm;
  interface_.device_all_reduce_sum = ncclAllReduceSum;
  interface_.device_reduce_scatter_sum = ncclReduceScatterSum;
  interface_.device_all_gather = ncclAllGatherBytes;
#else
  notice = "built without NCCL: collectives staged through host memory "
           "over MPI";
#endif
}

Status Communicator::init(int *argc, char ***argv) {
  int announced = launcherSize();
  // torchrun and similar launchers start every rank as a lone process with
  // RANK / WORLD_SIZE set: each would train alone, and all would write the
  // same checkpoints. Refuse, saying how to launch instead.
  if (const char *world = std::getenv("WORLD_SIZE");
      world && std::atoi(world) > 1 && announced <= 1)
    return fail("WORLD_SIZE=%s but no MPI launcher started this process "
                "(torchrun-style launch?): start the ranks with mpirun -np N "
                "or srun --mpi=pmix (docs/Running.md)",
                world);
#ifdef INFIR2_HAVE_MPI
  if (announced <= 1)
    return Status::ok(); // alone: no MPI needed
  if (MPI_Init(argc, argv) != MPI_SUCCESS)
    return fail("MPI_Init failed");
  // Errors come back as codes, reported by the caller, instead of aborting
  // inside MPI.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  mpi_ = true;
  watch_ = std::make_unique<CollectiveWatch>();
  watch_->start(rank_, size_);
  if (size_ != announced)
    return fail("the launcher announced %d ranks, MPI has %d", announced,
                size_);
  return Status::ok();
#else
  (void)argc;
  (void)argv;
  if (announced > 1)
    return fail("launched as one of %d ranks, but this trainer was built "
                "without MPI (install libopenmpi-dev, rebuild, recompile)",
                announced);
  return Status::ok();
#endif
}

void Communicator::finalize() {
#ifdef INFIR2_HAVE_NCCL
  for (Communicator *group : children_) // the subgroups' own communicators
    if (group->nccl_) {
      ncclCommDestroy(static_cast<ncclComm_t>(group->nccl_));
      group->nccl_ = nullptr;
    }
  if (nccl_)
    ncclCommDestroy(static_cast<ncclComm_t>(nccl_));
  nccl_ = nullptr;
#endif
#ifdef INFIR2_HAVE_MPI
  for (Communicator *group : children_)
    if (group->watch_)
      group->watch_->stop();
  if (watch_)
    watch_->stop();
  if (mpi_)
    MPI_Finalize();
#endif
}

void Communicator::attach(infir2rt_context &ctx) {
  ctx.comm = runtimeInterface();
}

const infir2rt_communicator *Communicator::runtimeInterface() {
#ifdef INFIR2_HAVE_MPI
  if (size_ > 1) {
    interface_.impl = this;
    interface_.rank = rank_;
    interface_.size = size_;
    interface_.all_reduce_sum = mpiAllReduce;
    interface_.reduce_scatter_sum = mpiReduceScatter;
    interface_.all_gather = mpiAllGather;
    return &interface_;
  }
#endif
  return nullptr;
}

std::unique_ptr<Communicator> Communicator::split(int color, int key) {
  auto group = std::make_unique<Communicator>();
  group->parent_ = this;
#ifdef INFIR2_HAVE_MPI
  if (size_ > 1) {
    auto *comm = new MPI_Comm;
    if (MPI_Comm_split(groupOf(group_), color, key, comm) != MPI_SUCCESS) {
      std::fprintf(stderr, "trainer (rank %d): error: MPI_Comm_split failed\n",
                   rank_);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(*comm, &group->rank_);
    MPI_Comm_size(*comm, &group->size_);
    group->group_ = comm;
    if (group->size_ > 1) {
      group->watch_ = std::make_unique<CollectiveWatch>();
      group->watch_->setTimeout(watch_->timeout());
      group->watch_->start(group->rank_, group->size_, *comm);
    }
  }
  children_.push_back(group.get());
#else
  (void)color;
  (void)key;
#endif
  return group;
}

Status Communicator::allGather(const void *send, void *recv, int64_t bytes) {
  if (size_ == 1) {
    std::memcpy(recv, send, size_t(bytes));
    return Status::ok();
  }
#ifdef INFIR2_HAVE_MPI
  char text[256] = {0};
  if (mpiAllGather(this, send, recv, bytes, text, sizeof text))
    return Failure{text};
#endif
  return Status::ok();
}

#ifdef INFIR2_HAVE_MPI
/// `v` reduced by `op` over the ranks (an error, which MPI_ERRORS_RETURN
/// would otherwise drop, ends the job: the ranks could no longer agree).
static double reduced(Communicator &comm, double v, MPI_Op op,
                      const char *what) {
  MPI_Request request;
  int rc = MPI_Iallreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, op,
                          groupOf(comm.mpiGroup()), &request);
  char error[MPI_MAX_ERROR_STRING + 64] = {0};
  if (mpiFailed(waitFor(&comm, rc, request, what), "MPI_Allreduce", error,
                sizeof error)) {
    std::fprintf(stderr, "trainer (rank %d): error: %s\n", comm.rank(), error);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  return v;
}
#endif

double Communicator::sum(double v) {
#ifdef INFIR2_HAVE_MPI
  if (size_ > 1)
    return reduced(*this, v, MPI_SUM, "the sum of a step's losses");
#endif
  return v;
}

double Communicator::max(double v) {
#ifdef INFIR2_HAVE_MPI
  if (size_ > 1)
    return reduced(*this, v, MPI_MAX, "the ranks' agreement on a step");
#endif
  return v;
}

void Communicator::barrier(bool unbounded) {
#ifdef INFIR2_HAVE_MPI
  if (size_ > 1) {
    double timeout = watch_->timeout();
    if (unbounded)
      watch_->setTimeout(1e30);
    reduced(*this, 0.0, MPI_MAX, "a barrier");
    watch_->setTimeout(timeout);
  }
#else
  (void)unbounded;
#endif
}
