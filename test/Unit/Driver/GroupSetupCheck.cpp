//===- GroupSetupCheck.cpp - The groups of a 2-D layout, under MPI --------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// Run by ctest as `mpirun -np 4`: the trainer's tensor-parallel x
// data-parallel groups (2 x 2), each asked for device collectives of its own
// (NCCL, bootstrapped over the group's MPI communicator, as
// Session::open does). Checks, on every rank, that
// - each group holds the world ranks it must (a sum of world ranks over its
//   runtime interface, the functions the kernels call);
// - each group bootstrapped from an NCCL id of its own (the same on its
//   ranks, another in every other group), not one id broadcast over the job;
// - every rank of a group took the same decision (NCCL started on all of
//   them, or on none, with a notice), so that no rank waits in NCCL for one
//   that fell back; and that a group with NCCL has all three device
//   functions, one without has none;
// - with INFIR2_COLLECTIVES=mpi, no group starts NCCL; a group that does
//   not start it says why (here, without a GPU: "NCCL could not start:
//   unhandled cuda error").
// Prints one line per rank and group; exits non-zero on any failure.
//
//===----------------------------------------------------------------------===//

#include "dist/Communicator.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

using infir2::rt::Communicator;

namespace {

int failures = 0;

void expect(bool ok, int rank, const char *what) {
  if (ok)
    return;
  std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what);
  ++failures;
}

/// One group: its membership, its decision, agreed over its own members.
void checkGroup(Communicator &world, Communicator &group, const char *name,
                int expectedSum) {
  std::string notice;
  group.useDeviceCollectives(notice);
  const infir2rt_communicator *c = group.runtimeInterface();
  expect(c != nullptr && c->size == 2, world.rank(), "a group of two");
  if (!c)
    return;
  float sum = float(world.rank());
  char error[256] = {0};
  expect(c->all_reduce_sum(c->impl, &sum, 1, error, sizeof error) == 0,
         world.rank(), error);
  expect(sum == float(expectedSum), world.rank(), "the group's members");
  bool started = group.nccl() != nullptr;
  bool device = c->device_all_reduce_sum && c->device_reduce_scatter_sum &&
                c->device_all_gather;
  bool none = !c->device_all_reduce_sum && !c->device_reduce_scatter_sum &&
              !c->device_all_gather;
  expect(started ? device : none, world.rank(), "device functions as decided");
  expect(started == notice.empty(), world.rank(), "a notice when not started");
  int mine = started ? 1 : 0, all[2] = {-1, -1};
  expect(c->all_gather(c->impl, &mine, all, sizeof mine, error, sizeof error) ==
             0,
         world.rank(), error);
  expect(all[0] == all[1], world.rank(), "the group's ranks agree");
  const char *mpi = std::getenv("INFIR2_COLLECTIVES");
  bool withNccl = notice.rfind("built without NCCL", 0) != 0;
  if (mpi && std::strcmp(mpi, "mpi") == 0)
    expect(!started &&
               (!withNccl || notice.rfind("INFIR2_COLLECTIVES=mpi", 0) == 0),
           world.rank(), "INFIR2_COLLECTIVES=mpi keeps MPI");
  else if (!started)
    expect(notice.rfind("NCCL could not start: ", 0) == 0 ||
               notice.rfind("built without NCCL", 0) == 0,
           world.rank(), "NCCL not started: the notice says why");
  // The group's NCCL id: one for the group, drawn by its own first rank.
  uint64_t ids[2] = {0, 0}, id = group.bootstrapId();
  expect(c->all_gather(c->impl, &id, ids, sizeof id, error, sizeof error) == 0,
         world.rank(), error);
  expect(ids[0] == ids[1], world.rank(), "one NCCL id for the group");
  std::printf("rank %d: %s group (rank %d of %d): members ok, %s\n",
              world.rank(), name, group.rank(), group.size(),
              started ? "NCCL started" : notice.c_str());
}

} // namespace

int main(int argc, char **argv) {
  Communicator world;
  if (auto s = world.init(&argc, &argv); !s) {
    std::fprintf(stderr, "error: %s\n", s.message().c_str());
    return 1;
  }
  if (world.size() != 4) {
    std::fprintf(stderr, "error: run it as mpirun -np 4 (got %d ranks)\n",
                 world.size());
    world.finalize();
    return 1;
  }
  world.setTimeout(120);
  int r = world.rank(), tp = 2;
  // As Session::open: tensor-parallel groups of consecutive ranks.
  std::unique_ptr<Communicator> tpGroup = world.split(r / tp, r % tp);
  std::unique_ptr<Communicator> dpGroup = world.split(r % tp, r / tp);
  int base = r / tp * tp;
  checkGroup(world, *tpGroup, "tensor-parallel", 2 * base + 1);
  checkGroup(world, *dpGroup, "data-parallel", 2 * (r % tp) + tp);
  // Four groups, four ids (where NCCL could draw one: built with it), not
  // one id broadcast over the whole job.
  uint64_t mine[2] = {tpGroup->bootstrapId(), dpGroup->bootstrapId()}, all[8];
  if (!world.allGather(mine, all, sizeof mine))
    expect(false, r, "gathering the groups' ids");
  else if (mine[0] != 0) {
    // Rank 0 and 2 head the tensor-parallel groups; 0 and 1 the others.
    uint64_t heads[4] = {all[0], all[4], all[1], all[3]};
    for (int a = 0; a < 4; ++a)
      for (int b = a + 1; b < 4; ++b)
        expect(heads[a] != heads[b], r, "each group its own NCCL id");
  }
  int failed = int(world.max(double(failures)));
  world.finalize();
  return failed ? 1 : 0;
}
