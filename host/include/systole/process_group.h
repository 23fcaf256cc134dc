// SPDX-License-Identifier: Apache-2.0
// The processes of one training job. A Strategy's replicas share one
// process; a ProcessGroup joins several such processes (over MPI, see
// mpi_process_group.h), so that the job's replicas are the replicas of all
// its processes, numbered process by process: process p's local replica k
// is global replica p * K + k, K replicas in every process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "systole/status.h"

namespace systole {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual uint32_t rank() const = 0;
  virtual uint32_t size() const = 0;
  // Processes of the job on this host (this one included): they share its
  // cores.
  virtual uint32_t processes_on_this_host() const = 0;

  // What this process adds to the job's ordered sum, for elements [begin,
  // end): total[i] = previous[i] followed by this process's terms in order,
  // as ordered_sum(previous, ...) below writes it, where previous holds the
  // sum of every earlier process's terms (null on the first process, whose
  // sum starts from +0). `total` may alias `previous`.
  using AddTerms =
      std::function<Status(const float* previous, std::size_t begin, std::size_t end, float* total)>;

  // The job-wide ordered sum: element i of `total` becomes
  //   ((g_0[i] + g_1[i]) + g_2[i]) + ... + g_{N-1}[i]
  // over the global replicas in order, where this process contributes its
  // replicas' terms through `add` (called for consecutive ranges of at most
  // `piece` elements; 0 lets the group choose the pieces its messages are
  // pipelined in). Every process ends with the same `total`.
  virtual Status chained_sum(std::size_t count, std::size_t piece, const AddTerms& add, float* total) = 0;

  // chained_sum with this process's terms on the host: `local`, its
  // replicas' vectors in order, `count` floats each. `total` may not alias
  // `local`.
  Status ordered_sum(const std::vector<const float*>& local, std::size_t count, float* total);

  // Every process's `local` values (equal lengths), concatenated in rank
  // order, on every process.
  virtual Result<std::vector<double>> all_gather(const std::vector<double>& local) = 0;

  // Ends every process of the job with `exit_code`: the way out after an
  // error on one process, so that the others do not wait for it forever.
  [[noreturn]] virtual void abort(int exit_code) = 0;
};

// out[i] = (((+0 + start[i]) + inputs[0][i]) + inputs[1][i]) + ... for i
// in [begin, end), without start when it is null, as the vector engine's
// sum computes it (NUMERICS.md: a subnormal term reads as a zero of its
// sign, a tiny sum flushes, NaNs are canonical), so a card that sums its
// units' gradients gives the same bits. `out` may alias `start`, not the
// inputs. The one place the summation order is written.
void ordered_sum(const float* start, const float* const* inputs, std::size_t n, std::size_t begin,
                 std::size_t end, float* out);

}  // namespace systole
