// SPDX-License-Identifier: Apache-2.0
// ProcessGroup over MPI: a pipelined chain for the ordered sum, then a
// broadcast; every wait polls with a deadline and names the silent ranks.
#include "systole/mpi_process_group.h"

#include <cstdlib>

#ifdef SYSTOLE_HAVE_MPI

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>

namespace systole {
namespace {

using Clock = std::chrono::steady_clock;

// Message tags on the data communicator and the control communicator.
constexpr int kPartialTag = 1;
constexpr int kPingTag = 2;
constexpr int kPongTag = 3;
// The chain forwards the sum in chunks, so the next process adds chunk c
// while this one sends chunk c + 1.
constexpr std::size_t kChunkFloats = std::size_t(1) << 16;

class MpiProcessGroup final : public ProcessGroup {
 public:
  explicit MpiProcessGroup(const MpiOptions& options) : options_(options) {
    MPI_Comm_dup(MPI_COMM_WORLD, &data_);
    MPI_Comm_dup(MPI_COMM_WORLD, &control_);
    MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    MPI_Comm_rank(data_, &rank);
    MPI_Comm_size(data_, &size);
    rank_ = uint32_t(rank);
    size_ = uint32_t(size);
    MPI_Comm host;
    MPI_Comm_split_type(data_, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
    int on_host = 1;
    MPI_Comm_size(host, &on_host);
    MPI_Comm_free(&host);
    on_host_ = uint32_t(on_host);
  }

  ~MpiProcessGroup() override {
    MPI_Comm_free(&control_);
    MPI_Comm_free(&data_);
    MPI_Finalize();
  }

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  uint32_t processes_on_this_host() const override { return on_host_; }

  Status chained_sum(std::size_t count, std::size_t piece, const AddTerms& add, float* total) override {
    if (count > std::size_t(INT32_MAX))
      return Status(StatusCode::kInvalidArgument, "mpi: all-reduce of more than 2^31 floats");
    const int rank = int(rank_), last = int(size_) - 1;
    const std::size_t chunk = piece ? piece : kChunkFloats;
    const std::size_t chunks = (count + chunk - 1) / chunk;
    auto begin = [&](std::size_t c) { return c * chunk; };
    auto length = [&](std::size_t c) { return int(std::min(count, begin(c + 1)) - begin(c)); };
    // The partial sum from the previous rank lands in `total`, chunk by
    // chunk; this rank adds its replicas to it and passes it on.
    std::vector<MPI_Request> receives(chunks, MPI_REQUEST_NULL), sends(chunks, MPI_REQUEST_NULL);
    if (rank > 0)
      for (std::size_t c = 0; c < chunks; ++c)
        MPI_Irecv(total + begin(c), length(c), MPI_FLOAT, rank - 1, kPartialTag, data_, &receives[c]);
    for (std::size_t c = 0; c < chunks; ++c) {
      if (rank > 0)
        SYSTOLE_RETURN_IF_ERROR(
            wait(&receives[c], 1, "the partial gradient sum from rank " + std::to_string(rank - 1)));
      SYSTOLE_RETURN_IF_ERROR(add(rank > 0 ? total : nullptr, begin(c), begin(c) + length(c), total));
      if (rank < last)
        MPI_Isend(total + begin(c), length(c), MPI_FLOAT, rank + 1, kPartialTag, data_, &sends[c]);
    }
    SYSTOLE_RETURN_IF_ERROR(wait(sends.data(), int(chunks),
                                 "rank " + std::to_string(rank + 1) + " to take the partial gradient sum"));
    // The last rank holds the job's sum; everyone gets its bits.
    MPI_Request broadcast;
    MPI_Ibcast(total, int(count), MPI_FLOAT, last, data_, &broadcast);
    return wait(&broadcast, 1, "the gradient sum from rank " + std::to_string(last));
  }

  Result<std::vector<double>> all_gather(const std::vector<double>& local) override {
    std::vector<double> all(local.size() * size_);
    MPI_Request request;
    MPI_Iallgather(local.data(), int(local.size()), MPI_DOUBLE, all.data(), int(local.size()), MPI_DOUBLE,
                   data_, &request);
    SYSTOLE_RETURN_IF_ERROR(wait(&request, 1, "every rank's metrics"));
    return all;
  }

  [[noreturn]] void abort(int exit_code) override {
    MPI_Abort(MPI_COMM_WORLD, exit_code);
    std::_Exit(exit_code);  // MPI_Abort does not return; in case it does
  }

 private:
  // Answers every ping that has arrived: this process is alive.
  void answer_pings() {
    for (;;) {
      int pending = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, control_, &pending, &status);
      if (!pending) return;
      int token = 0;
      MPI_Recv(&token, 1, MPI_INT, status.MPI_SOURCE, kPingTag, control_, MPI_STATUS_IGNORE);
      MPI_Request reply;
      MPI_Isend(&pong_, 1, MPI_INT, status.MPI_SOURCE, kPongTag, control_, &reply);
      MPI_Request_free(&reply);
    }
  }

  // Polls `requests` until all complete or the deadline passes. Polling
  // rather than blocking lets this process answer pings meanwhile.
  Status wait(MPI_Request* requests, int n, const std::string& what) {
    const auto start = Clock::now();
    const auto deadline = start + std::chrono::duration<double>(options_.timeout_seconds);
    for (;;) {
      int done = 0;
      if (MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
        return Status(StatusCode::kUnavailable, "mpi: rank " + std::to_string(rank_) +
                                                    " lost the connection while waiting for " + what);
      if (done) return ok_status();
      answer_pings();
      const auto now = Clock::now();
      if (now > deadline) return diagnose(what);
      // Spin for the first milliseconds (chunks arrive every few tens of
      // microseconds, and MPI moves data only while polled), then back off
      // so that a long wait does not take a core from the replicas.
      if (now - start > std::chrono::milliseconds(5))
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  // After a timeout: which ranks are not answering?
  Status diagnose(const std::string& what) {
    const int token = int(rank_);
    std::vector<int> replies(size_, 0);
    std::vector<MPI_Request> pongs;
    std::vector<uint32_t> asked;
    for (uint32_t peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      MPI_Request ping;
      MPI_Isend(&token, 1, MPI_INT, int(peer), kPingTag, control_, &ping);
      MPI_Request_free(&ping);
      pongs.emplace_back();
      MPI_Irecv(&replies[peer], 1, MPI_INT, int(peer), kPongTag, control_, &pongs.back());
      asked.push_back(peer);
    }
    const double grace = std::min(options_.timeout_seconds, 10.0);
    const auto deadline = Clock::now() + std::chrono::duration<double>(grace);
    std::vector<int> answered(pongs.size(), 0);
    while (Clock::now() < deadline &&
           std::count(answered.begin(), answered.end(), 1) < std::ptrdiff_t(pongs.size())) {
      for (std::size_t i = 0; i < pongs.size(); ++i)
        if (!answered[i]) MPI_Test(&pongs[i], &answered[i], MPI_STATUS_IGNORE);
      answer_pings();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::string silent;
    for (std::size_t i = 0; i < pongs.size(); ++i)
      if (!answered[i]) silent += (silent.empty() ? "" : ", ") + std::to_string(asked[i]);
    // The unanswered receives stay posted; the job is about to end.
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", options_.timeout_seconds);
    if (silent.empty())
      return Status(StatusCode::kTimeout, "mpi: rank " + std::to_string(rank_) + " waited " + seconds +
                                              " s for " + what +
                                              "; every rank is alive, so the ranks are out of step");
    return Status(StatusCode::kTimeout, "mpi: rank(s) " + silent + " stopped responding: rank " +
                                            std::to_string(rank_) + " waited " + seconds + " s for " + what +
                                            " and they did not answer within " + std::to_string(int(grace)) +
                                            " s (stalled or dead)");
  }

  MpiOptions options_;
  MPI_Comm data_ = MPI_COMM_NULL;
  MPI_Comm control_ = MPI_COMM_NULL;
  uint32_t rank_ = 0;
  uint32_t size_ = 1;
  uint32_t on_host_ = 1;
  int pong_ = 1;
};

}  // namespace

Result<std::unique_ptr<ProcessGroup>> join_mpi_job(const MpiOptions& options) {
  if (!(options.timeout_seconds > 0))
    return Status(StatusCode::kInvalidArgument, "mpi.timeout_s must be > 0");
  // Participant 0 of a Strategy calls MPI from its own thread, the main
  // thread between steps: never two at once.
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
    return Status(StatusCode::kUnavailable, "mpi: MPI_Init_thread failed");
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    return Status(StatusCode::kUnavailable, "mpi: this MPI library does not support MPI_THREAD_SERIALIZED");
  }
  return std::unique_ptr<ProcessGroup>(new MpiProcessGroup(options));
}

}  // namespace systole

#else  // !SYSTOLE_HAVE_MPI

namespace systole {

Result<std::unique_ptr<ProcessGroup>> join_mpi_job(const MpiOptions&) {
  return Status(StatusCode::kUnavailable,
                "started by an MPI launcher, but this build has no MPI: install libopenmpi-dev "
                "(scripts/install-deps does) and rebuild");
}

}  // namespace systole

#endif

namespace systole {

bool started_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    if (std::getenv(name)) return true;
  return false;
}

}  // namespace systole
