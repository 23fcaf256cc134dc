// SPDX-License-Identifier: Apache-2.0
// Trace events in memory, written as Chrome trace-event JSON.
#include "systole/trace.h"

#include <atomic>
#include <map>
#include <nlohmann/json.hpp>

#include "systole/output_file.h"

namespace systole {
namespace {

std::atomic<Trace*> current{nullptr};

std::string track_name(uint32_t track) {
  if (track == Trace::kHostTrack) return "host: training loop";
  if (track >= Trace::unit_track(0))
    return "device: compute unit " + std::to_string(track - Trace::unit_track(0));
  return "host: replica " + std::to_string(track - Trace::replica_track(0));
}

}  // namespace

void Trace::install(Trace* trace) { current.store(trace); }
Trace* Trace::installed() { return current.load(); }

void Trace::span(std::string name, const char* category, uint32_t track, Clock::time_point begin,
                 Clock::time_point end, Args args) {
  Event event{std::move(name),
              category,
              track,
              std::chrono::duration_cast<std::chrono::nanoseconds>(begin - origin_).count(),
              std::chrono::duration_cast<std::chrono::nanoseconds>(end - begin).count(),
              std::move(args)};
  std::lock_guard<std::mutex> lock(mutex_);
  events_.push_back(std::move(event));
}

std::size_t Trace::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return events_.size();
}

Status Trace::write(const std::string& path) const {
  nlohmann::json events = nlohmann::json::array();
  std::map<uint32_t, bool> tracks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const Event& event : events_) {
      nlohmann::json args = nlohmann::json::object();
      for (const auto& [key, value] : event.args) args[key] = value;
      events.push_back({{"name", event.name},
                        {"cat", event.category},
                        {"ph", "X"},
                        {"pid", 1},
                        {"tid", event.track},
                        {"ts", double(event.begin_ns) / 1e3},
                        {"dur", double(event.duration_ns) / 1e3},
                        {"args", std::move(args)}});
      tracks[event.track] = true;
    }
  }
  // Metadata events name the process and each track, in track order.
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 1}, {"args", {{"name", "accel_train"}}}});
  for (const auto& [track, used] : tracks) {
    events.push_back({{"name", "thread_name"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", track},
                      {"args", {{"name", track_name(track)}}}});
    events.push_back({{"name", "thread_sort_index"},
                      {"ph", "M"},
                      {"pid", 1},
                      {"tid", track},
                      {"args", {{"sort_index", track}}}});
  }
  const std::string text =
      nlohmann::json{{"traceEvents", std::move(events)}, {"displayTimeUnit", "ms"}}.dump();
  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  SYSTOLE_RETURN_IF_ERROR(file->write(text.data(), text.size()));
  return file->commit();
}

}  // namespace systole
