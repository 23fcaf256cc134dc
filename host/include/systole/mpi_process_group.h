// SPDX-License-Identifier: Apache-2.0
// The ProcessGroup of a job started by an MPI launcher (mpirun): OpenMPI
// carries the gradients between processes, on one host or many.
//
// Every wait for another process has a deadline. When it passes, the
// waiting process asks every other process whether it is alive (each
// answers while it waits in a collective of its own) and reports the ones
// that did not answer by rank; the caller then ends the job with abort().
// A process that dies outright is reported by mpirun itself, which ends the
// job ("mpirun noticed that process rank N ... exited on signal 9").
#pragma once

#include <memory>

#include "systole/process_group.h"

namespace systole {

// Whether this process was started by an MPI launcher (its environment
// names a rank), whether or not this build has MPI.
bool started_by_mpi_launcher();

struct MpiOptions {
  double timeout_seconds = 120;  // longest wait for another process
};

// Initialises MPI and joins the job. Fails with a clear message when this
// build has no MPI (configure with OpenMPI installed) or MPI cannot start.
Result<std::unique_ptr<ProcessGroup>> join_mpi_job(const MpiOptions& options);

}  // namespace systole
