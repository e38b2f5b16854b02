//===- Communicator.h - The trainer's data-parallel group -------*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// The ranks of a data-parallel run. Under mpirun (or any MPI launcher) the
// trainer joins MPI_COMM_WORLD; started alone it is one rank and needs no
// MPI at all. The compiled step reaches it through the runtime's
// communicator interface (infir2rt_communicator).
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DIST_COMMUNICATOR_H
#define INFIR2_RUNTIME_DRIVER_DIST_COMMUNICATOR_H

#include "infir2/runtime/ABI.h"
#include "infir2/runtime/Expected.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace infir2::rt {

class CollectiveWatch;

class Communicator {
public:
  Communicator();
  ~Communicator();

  /// Joins the launcher's group if there is one. Fails, with a message, when
  /// launched by mpirun but built without MPI, or when MPI cannot start.
  Status init(int *argc, char ***argv);
  void finalize();

  /// Seconds a collective may wait for the other ranks; past it, the job
  /// ends naming the ranks that never arrived (see CollectiveWatch.h).
  void setTimeout(double seconds);
  CollectiveWatch *watch() { return watch_.get(); }

  /// The subgroup of the ranks that pass the same `color`, ordered by `key`
  /// (MPI_Comm_split), with this group's collective deadline and a watch of
  /// its own (its ranks count their group's collectives): the
  /// tensor-parallel and data-parallel groups of a 2-D layout. Alone, a
  /// group of one. finalize() stops the subgroups' watches too.
  std::unique_ptr<Communicator> split(int color, int key);

  /// The collectives as the runtime calls them; null for a group of one.
  const infir2rt_communicator *runtimeInterface();

  int rank() const { return rank_; }
  /// The group's MPI_Comm, held on the heap (null: MPI_COMM_WORLD).
  void *mpiGroup() const { return group_; }
  int size() const { return size_; }

  /// Installs the collectives into a runtime context (nothing for one rank).
  void attach(infir2rt_context &ctx);

  /// For ranks on GPUs (after the device is chosen, before attach): NCCL
  /// for the collectives on device memory, bootstrapped over the group's
  /// MPI communicator (every rank of the group calls it; a subgroup gets a
  /// communicator of its own). Where NCCL cannot start on every rank of the
  /// group, or INFIR2_COLLECTIVES=mpi, the group keeps MPI on staged host
  /// buffers and `notice` says why.
  void useDeviceCollectives(std::string &notice);
  void *nccl() const { return nccl_; }
  /// A hash of the NCCL id the group bootstrapped from (0: none was drawn),
  /// the same on its ranks: a test checks that each group draws its own.
  uint64_t bootstrapId() const { return bootstrapId_; }

  /// Every rank's `bytes` bytes, in rank order, into `recv`.
  Status allGather(const void *send, void *recv, int64_t bytes);

  /// Sums / takes the maximum of a double across the ranks.
  double sum(double v);
  double max(double v);
  /// Waits for every rank, within the collective timeout; `unbounded`
  /// waits as long as it takes (after a checkpoint, which rank 0 alone
  /// writes, and which may take longer than any timeout for a large model).
  void barrier(bool unbounded = false);

private:
  int rank_ = 0, size_ = 1;
  bool mpi_ = false;
  /// The group's MPI_Comm (heap-held, so this header needs no MPI), null for
  /// MPI_COMM_WORLD; and the group it was split from.
  void *group_ = nullptr;
  Communicator *parent_ = nullptr;
  std::vector<Communicator *> children_; ///< the live subgroups
  infir2rt_communicator interface_{};
  void *nccl_ = nullptr; ///< the ncclComm_t, when device collectives run
  uint64_t bootstrapId_ = 0;
  std::unique_ptr<CollectiveWatch> watch_; ///< with MPI
};

} // namespace infir2::rt

#endif // INFIR2_RUNTIME_DRIVER_DIST_COMMUNICATOR_H
