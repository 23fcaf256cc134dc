// SPDX-License-Identifier: Apache-2.0
// Run under mpirun (bench/run mpi). Our cross-process all-reduce, as
// training uses it (a Strategy of one replica per process over the MPI
// process group: pipelined ordered chain, then broadcast), against
// OpenMPI's own MPI_Allreduce(MPI_SUM) on the same buffer sizes. Prints the
// bus bandwidth of each (2(P-1)/P x bytes / time, NCCL's definition) and
// their ratio; the median of the repetitions.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "systole/mpi_process_group.h"
#include "systole/strategy.h"

namespace {

using namespace systole;
using Clock = std::chrono::steady_clock;

// Median seconds of `fn` over repetitions, after a warm-up; every rank
// agrees on the time (the slowest rank's).
template <class Fn>
double median_seconds(Fn&& fn, int repetitions) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < repetitions; ++i) {
    MPI_Barrier(MPI_COMM_WORLD);
    const auto start = Clock::now();
    fn();
    double local = std::chrono::duration<double>(Clock::now() - start).count(), slowest = 0;
    MPI_Allreduce(&local, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    times.push_back(slowest);
  }
  std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  auto joined = join_mpi_job(MpiOptions{});
  if (!joined.ok()) {
    std::fprintf(stderr, "mpi_allreduce_bench: %s\n", joined.status().to_string().c_str());
    return 2;
  }
  ProcessGroup& group = **joined;
  const bool lead = group.rank() == 0;
  const double processes = group.size();
  Strategy strategy(1, &group);
  if (lead)
    std::printf("all-reduce across %u processes, bus bandwidth GB/s (median)\n%10s %10s %14s %7s\n",
                group.size(), "bytes", "systole", "MPI_Allreduce", "ratio");
  double ratio_16mib = 0;
  for (std::size_t bytes :
       {std::size_t(64) << 10, std::size_t(1) << 20, std::size_t(16) << 20, std::size_t(64) << 20}) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> ours(count, 1.0f), send(count, 1.0f), theirs(count);
    const int repetitions = bytes >= (std::size_t(16) << 20) ? 9 : 51;
    const double our_time = median_seconds(
        [&] {
          const Status status = strategy.run([&](uint32_t) { return strategy.all_reduce_sum(0, ours); });
          if (!status.ok()) {
            std::fprintf(stderr, "mpi_allreduce_bench: %s\n", status.to_string().c_str());
            group.abort(2);
          }
        },
        repetitions);
    const double their_time = median_seconds(
        [&] { MPI_Allreduce(send.data(), theirs.data(), int(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); },
        repetitions);
    const double bus = 2.0 * (processes - 1) / processes * double(bytes) * 1e-9;
    const double ratio = their_time / our_time;
    if (bytes == (std::size_t(16) << 20)) ratio_16mib = ratio;
    if (lead) std::printf("%10zu %10.2f %14.2f %7.2f\n", bytes, bus / our_time, bus / their_time, ratio);
  }
  if (lead)
    std::printf("FIGURE mpi_allreduce_busbw_vs_openmpi_%up_16MiB %.2f ratio\n", group.size(), ratio_16mib);
  return 0;
}
