//===- CollectiveWatch.cpp - Collectives that cannot hang forever ---------===//
//
// Part of the InfiR2 project.
//
//===----------------------------------------------------------------------===//

#ifdef INFIR2_HAVE_MPI

#include "dist/CollectiveWatch.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace infir2::rt;

namespace {
constexpr int kAnnounceTag = 1;
} // namespace

void CollectiveWatch::start(int rank, int size, MPI_Comm base) {
  rank_ = rank;
  size_ = size;
  arrived_.assign(size_t(size), 0);
  MPI_Comm_dup(base, &announcements_);
  MPI_Comm_set_errhandler(announcements_, MPI_ERRORS_RETURN);
  MPI_Group group, world;
  MPI_Comm_group(base, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> ranks(size_t(size), 0);
  for (int r = 0; r < size; ++r)
    ranks[size_t(r)] = r;
  worldRanks_.assign(size_t(size), 0);
  MPI_Group_translate_ranks(group, size, ranks.data(), world,
                            worldRanks_.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
}

void CollectiveWatch::stop() {
  // Every rank announced every collective to every other: receive what is
  // still on its way (within the timeout), so that nothing is left pending
  // when the communicator goes. Sends still in flight are let go.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(std::min(timeout_, 10.0));
  while (!missing(seq_).empty() && std::chrono::steady_clock::now() < deadline)
    receiveAnnouncements();
  for (auto &[request, value] : sends_)
    MPI_Request_free(&request);
  sends_.clear();
  if (announcements_ != MPI_COMM_NULL)
    MPI_Comm_free(&announcements_);
}

void CollectiveWatch::announce() {
  ++seq_;
  arrived_[size_t(rank_)] = seq_;
  // Completed sends leave from the front (they complete in order).
  while (!sends_.empty()) {
    int done = 0;
    MPI_Test(&sends_.front().first, &done, MPI_STATUS_IGNORE);
    if (!done)
      break;
    sends_.pop_front();
  }
  for (int r = 0; r < size_; ++r) {
    if (r == rank_)
      continue;
    // A deque keeps its elements in place as it grows at the back.
    sends_.push_back({MPI_REQUEST_NULL, seq_});
    MPI_Isend(&sends_.back().second, 1, MPI_INT64_T, r, kAnnounceTag,
              announcements_, &sends_.back().first);
  }
}

void CollectiveWatch::receiveAnnouncements() {
  for (;;) {
    int pending = 0;
    MPI_Status status;
    MPI_Iprobe(MPI_ANY_SOURCE, kAnnounceTag, announcements_, &pending, &status);
    if (!pending)
      return;
    int64_t seq = 0;
    MPI_Recv(&seq, 1, MPI_INT64_T, status.MPI_SOURCE, kAnnounceTag,
             announcements_, MPI_STATUS_IGNORE);
    int64_t &latest = arrived_[size_t(status.MPI_SOURCE)];
    latest = std::max(latest, seq);
  }
}

std::vector<int> CollectiveWatch::missing(int64_t seq) const {
  std::vector<int> ranks;
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && arrived_[size_t(r)] < seq)
      ranks.push_back(r);
  return ranks;
}

int CollectiveWatch::wait(MPI_Request &request, const char *what) {
  announce();
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeout_);
  for (int polls = 0;; ++polls) {
    int done = 0;
    int rc = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    // Received on every wait, so that no rank's queue grows with them.
    receiveAnnouncements();
    if (rc != MPI_SUCCESS || done)
      return rc;
    if (std::chrono::steady_clock::now() > deadline)
      timedOut(what);
    // Spin briefly (collectives of a step follow each other closely), then
    // leave the cores to the ranks' compute threads.
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

void CollectiveWatch::timedOut(const char *what) const {
  std::vector<int> late = missing(seq_);
  std::string ranks;
  for (int r : late)
    ranks += (ranks.empty() ? "" : ", ") + std::to_string(worldRanks_[r]);
  if (late.empty())
    std::fprintf(stderr,
                 "trainer (rank %d): error: %s (collective #%lld) did not "
                 "complete within %g s, though every rank reached it; "
                 "ending the job (--collective-timeout)\n",
                 worldRanks_[size_t(rank_)], what, (long long)seq_, timeout_);
  else
    std::fprintf(stderr,
                 "trainer (rank %d): error: %s (collective #%lld) did not "
                 "complete within %g s: rank%s %s never reached it (stopped, "
                 "hung or far slower); ending the job (--collective-timeout)\n",
                 worldRanks_[size_t(rank_)], what, (long long)seq_, timeout_,
                 late.size() > 1 ? "s" : "", ranks.c_str());
  std::fflush(stderr);
  // Every rank ends, the stalled ones too: the launcher kills the job.
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

#endif // INFIR2_HAVE_MPI
