// SPDX-License-Identifier: Apache-2.0
#include "run_job.h"

#include <signal.h>

#include <atomic>
#include <string>

#include "systole/tf_example.h"

namespace systole {
namespace {

std::atomic<int> stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

extern "C" void on_stop_signal(int signal) { stop_signal.store(signal); }

}  // namespace

Status check_ranks_agree(ProcessGroup& group, const RunConfig& config) {
  const auto settings = job_settings(config);
  std::vector<double> local;
  for (const auto& [name, value] : settings) {
    const uint64_t hash = fingerprint64(value);
    local.push_back(double(hash >> 32));
    local.push_back(double(hash & 0xFFFFFFFFu));
  }
  auto all = group.all_gather(local);
  if (!all.ok()) return all.status();
  const std::size_t width = local.size();
  for (std::size_t i = 0; i < settings.size(); ++i) {
    std::string differing;
    for (uint32_t rank = 1; rank < group.size(); ++rank)
      if ((*all)[rank * width + 2 * i] != (*all)[2 * i] ||
          (*all)[rank * width + 2 * i + 1] != (*all)[2 * i + 1])
        differing += (differing.empty() ? "" : ", ") + std::to_string(rank);
    if (!differing.empty())
      return Status(StatusCode::kInvalidArgument,
                    "the processes of the job were started with different settings: " + settings[i].first +
                        " differs from rank 0's on rank(s) " + differing + " (this rank, " +
                        std::to_string(group.rank()) + ", has '" + settings[i].second + "')");
  }
  return ok_status();
}

void install_stop_signals() {
  struct sigaction action = {};
  action.sa_handler = on_stop_signal;
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int signal : {SIGINT, SIGTERM}) {
    struct sigaction current = {};
    // A signal ignored from the start (nohup, a shell's background job)
    // stays ignored.
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaction(signal, &action, nullptr);
  }
}

Result<int> agreed_stop_signal(ProcessGroup* group) {
  const int local = stop_signal.load();
  if (!group) return local;
  auto all = group->all_gather({double(local)});
  if (!all.ok()) return all.status();
  for (double signal : *all)
    if (signal != 0) return int(signal);
  return 0;
}

}  // namespace systole
