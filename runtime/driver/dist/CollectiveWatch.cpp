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
constexpr int kAnnounceTag = 1, kPingTag = 2, kPongTag = 3;

/// Process-wide, over every rank of the job: who still answers. A rank
/// waiting in any watched collective (of any group) answers pings, so the
/// rank whose collective timed out can tell the ranks that are alive
/// (waiting, perhaps on another group's collective) from the ones that
/// stopped or hung. Created and freed with the watch of MPI_COMM_WORLD.
MPI_Comm liveness = MPI_COMM_NULL;
char emptyMessage = 0;

void answerPings() {
  if (liveness == MPI_COMM_NULL)
    return;
  for (;;) {
    int pending = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, liveness, &pending, &status) !=
            MPI_SUCCESS ||
        !pending ||
        MPI_Recv(&emptyMessage, 0, MPI_BYTE, status.MPI_SOURCE, kPingTag,
                 liveness, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;
    MPI_Request reply;
    MPI_Isend(&emptyMessage, 0, MPI_BYTE, status.MPI_SOURCE, kPongTag, liveness,
              &reply);
    MPI_Request_free(&reply);
  }
}

/// Pings every other rank of the job and waits up to `grace` seconds for
/// the answers (answering the others' pings meanwhile); returns the world
/// ranks that did not answer.
std::vector<int> silentRanks(double grace) {
  std::vector<int> silent;
  if (liveness == MPI_COMM_NULL)
    return silent;
  int self = 0, size = 1;
  MPI_Comm_rank(liveness, &self);
  MPI_Comm_size(liveness, &size);
  std::vector<char> answered(size_t(size), 0);
  answered[size_t(self)] = 1;
  for (int r = 0; r < size; ++r) {
    if (r == self)
      continue;
    MPI_Request ping;
    MPI_Isend(&emptyMessage, 0, MPI_BYTE, r, kPingTag, liveness, &ping);
    MPI_Request_free(&ping);
  }
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(grace);
  int waiting = size - 1;
  while (waiting > 0 && std::chrono::steady_clock::now() < deadline) {
    answerPings();
    int pending = 0;
    MPI_Status status;
    // An error (a rank that has ended the job is gone) ends the wait: the
    // ranks not heard from by then are the ones named.
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPongTag, liveness, &pending, &status) !=
        MPI_SUCCESS)
      break;
    if (!pending) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      continue;
    }
    int from = status.MPI_SOURCE;
    if (from < 0 || from >= size ||
        MPI_Recv(&emptyMessage, 0, MPI_BYTE, from, kPongTag, liveness,
                 MPI_STATUS_IGNORE) != MPI_SUCCESS)
      break;
    if (!answered[size_t(from)]++)
      --waiting;
  }
  for (int r = 0; r < size; ++r)
    if (!answered[size_t(r)])
      silent.push_back(r);
  return silent;
}

/// "rank 3" or "ranks 1, 3".
std::string rankList(const std::vector<int> &ranks) {
  std::string text = ranks.size() > 1 ? "ranks " : "rank ";
  for (size_t i = 0; i < ranks.size(); ++i)
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  return text;
}
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
  if (base == MPI_COMM_WORLD && liveness == MPI_COMM_NULL) {
    MPI_Comm_dup(MPI_COMM_WORLD, &liveness);
    MPI_Comm_set_errhandler(liveness, MPI_ERRORS_RETURN);
    ownsLiveness_ = true;
  }
}

void CollectiveWatch::stop() {
  // Every rank announced every collective to every other: receive what is
  // still on its way (within the timeout), so that nothing is left pending
  // when the communicator goes. Sends still in flight are let go.
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(std::min(timeout_, 10.0));
  while (!missing(seq_).empty() &&
         std::chrono::steady_clock::now() < deadline) {
    receiveAnnouncements();
    answerPings();
  }
  for (auto &[request, value] : sends_)
    MPI_Request_free(&request);
  sends_.clear();
  if (announcements_ != MPI_COMM_NULL)
    MPI_Comm_free(&announcements_);
  if (ownsLiveness_ && liveness != MPI_COMM_NULL)
    MPI_Comm_free(&liveness);
  ownsLiveness_ = false;
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
    answerPings();
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
  std::vector<int> late;
  for (int r : missing(seq_))
    late.push_back(worldRanks_[size_t(r)]);
  // A rank that never reached this collective may itself be waiting, on
  // another group's collective, for the rank that stopped: the ranks that
  // no longer answer are the ones to name.
  std::vector<int> silent = silentRanks(std::min(timeout_, 5.0));
  std::string why = late.empty() ? "though every rank reached it"
                                 : rankList(late) + " never reached it";
  if (!silent.empty())
    why += "; " + rankList(silent) + (silent.size() > 1 ? " do" : " does") +
           " not respond (stopped, hung, or busy outside a collective)";
  else if (!late.empty())
    why += " (far slower, or waiting on another collective)";
  std::fprintf(stderr,
               "trainer (rank %d): error: %s (collective #%lld) did not "
               "complete within %g s: %s; ending the job "
               "(--collective-timeout)\n",
               worldRanks_[size_t(rank_)], what, (long long)seq_, timeout_,
               why.c_str());
  std::fflush(stderr);
  // Every rank ends, the stalled ones too: the launcher kills the job.
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::_Exit(1);
}

#endif // INFIR2_HAVE_MPI
