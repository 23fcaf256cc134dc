// SPDX-License-Identifier: Apache-2.0
// A trace of where a run's time goes, in the Chrome trace-event JSON format
// ({"traceEvents": [...]}) that Perfetto UI and chrome://tracing open:
// complete events ("ph": "X") with a name, a category, a start and a
// duration in microseconds since the trace began, and numeric args, on
// named tracks (one "thread" each): the host's loop, each replica's
// thread, each compute unit.
//
// Tracing is off unless a Trace is installed (Trace::install); then the
// runtime records host spans (data wait, step, forward, backward,
// all-reduce, optimizer, evaluation, checkpoint), each product's upload
// and download, and every launch on its compute unit with the kernel's
// counters (busy and stall cycles, DMA bytes, MACs, descriptors).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "systole/status.h"

namespace systole {

class Trace {
 public:
  using Clock = std::chrono::steady_clock;
  using Args = std::vector<std::pair<std::string, double>>;

  // Tracks: the host's loop, replica r's thread, compute unit u.
  static constexpr uint32_t kHostTrack = 0;
  static uint32_t replica_track(uint32_t replica) { return 1 + replica; }
  static uint32_t unit_track(uint32_t unit) { return 1000 + unit; }

  Trace() : origin_(Clock::now()) {}
  // The trace that runtime spans go to (null: tracing off). The caller owns
  // it and keeps it alive while installed.
  static void install(Trace* trace);
  static Trace* installed();

  void span(std::string name, const char* category, uint32_t track, Clock::time_point begin,
            Clock::time_point end, Args args = {});
  std::size_t events() const;
  // The JSON document, written whole or not at all.
  Status write(const std::string& path) const;

 private:
  struct Event {
    std::string name;
    const char* category;
    uint32_t track;
    int64_t begin_ns, duration_ns;
    Args args;
  };
  Clock::time_point origin_;
  mutable std::mutex mutex_;
  std::vector<Event> events_;
};

// A span from construction to destruction on the installed trace (nothing
// when none is).
class TraceScope {
 public:
  TraceScope(const char* name, const char* category, uint32_t track)
      : trace_(Trace::installed()), name_(name), category_(category), track_(track) {
    if (trace_) begin_ = Trace::Clock::now();
  }
  ~TraceScope() {
    if (trace_) trace_->span(name_, category_, track_, begin_, Trace::Clock::now());
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Trace* trace_;
  const char* name_;
  const char* category_;
  uint32_t track_;
  Trace::Clock::time_point begin_;
};

}  // namespace systole
