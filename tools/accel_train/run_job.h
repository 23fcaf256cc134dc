// SPDX-License-Identifier: Apache-2.0
// accel_train's job: the ranks of an mpirun job agreeing on their settings
// and on when to stop, and the stop signals (Ctrl-C, SIGTERM).
#pragma once

#include "systole/process_group.h"
#include "systole/run/config.h"

namespace systole {

// Every rank's job_settings() against rank 0's, before any data or device
// work; a difference is an error on every rank naming the setting, this
// rank's value and the ranks that differ from rank 0.
Status check_ranks_agree(ProcessGroup& group, const RunConfig& config);

// Ctrl-C (SIGINT) and SIGTERM stop training after the step in progress,
// keeping the last checkpoint, as Keras users expect of Ctrl-C; a second
// signal ends the process at once.
void install_stop_signals();

// The signal that stops the run after this step, or 0. Under mpirun every
// rank must stop after the same step (a rank that went on would wait for
// the others in its next all-reduce), so the ranks agree on it.
Result<int> agreed_stop_signal(ProcessGroup* group);

}  // namespace systole
