//===- CollectiveWatch.h - Collectives that cannot hang forever -*- C++ -*-===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//
//
// A rank that stops (SIGSTOP, a hung device, a lost node) would leave the
// others blocked in their next collective forever. The Communicator starts
// every MPI collective non-blocking and waits for it here, with a deadline
// (--collective-timeout). On entering a collective, each rank announces its
// sequence number to the others with a small message; so when one does not
// complete in time, the ranks still waiting know which ranks never reached
// it; and since every waiting rank answers pings, which ranks no longer
// respond (the stopped one, not the peers waiting for it on another
// group's collective). They say so and end the whole job (MPI_Abort), the
// stalled rank included.
//
//===----------------------------------------------------------------------===//

#ifndef INFIR2_RUNTIME_DRIVER_DIST_COLLECTIVEWATCH_H
#define INFIR2_RUNTIME_DRIVER_DIST_COLLECTIVEWATCH_H

#ifdef INFIR2_HAVE_MPI

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace infir2::rt {

class CollectiveWatch {
public:
  /// Joins the group of `base` (after MPI_Init): a communicator of its own
  /// carries the announcements, apart from the collectives. A subgroup (a
  /// tensor- or data-parallel group) has its own watch: its ranks count
  /// only their group's collectives, and are named by their world rank.
  void start(int rank, int size, MPI_Comm base = MPI_COMM_WORLD);
  /// Frees what is still pending (before MPI_Finalize).
  void stop();
  void setTimeout(double seconds) { timeout_ = seconds; }
  double timeout() const { return timeout_; }

  /// Announces the next collective, started as `request`, and waits for it
  /// to complete: MPI's code, or, past the deadline, a message naming the
  /// ranks that never arrived and the end of the job.
  int wait(MPI_Request &request, const char *what);

private:
  /// The ranks (other than this one) that have not announced collective
  /// `seq`.
  std::vector<int> missing(int64_t seq) const;
  void announce();
  void receiveAnnouncements();
  [[noreturn]] void timedOut(const char *what) const;

  int rank_ = 0, size_ = 1;
  /// The world rank of each rank of the group.
  std::vector<int> worldRanks_;
  double timeout_ = 600;
  MPI_Comm announcements_ = MPI_COMM_NULL;
  bool ownsLiveness_ = false;    ///< the watch of MPI_COMM_WORLD
  int64_t seq_ = 0;              ///< collectives this rank has entered
  std::vector<int64_t> arrived_; ///< the latest each rank announced
  /// Sends in flight, with the buffers they send from.
  std::deque<std::pair<MPI_Request, int64_t>> sends_;
};

} // namespace infir2::rt

#endif // INFIR2_HAVE_MPI
#endif // INFIR2_RUNTIME_DRIVER_DIST_COLLECTIVEWATCH_H
