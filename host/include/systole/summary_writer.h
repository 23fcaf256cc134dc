// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files of scalar summaries. An event file is a TFRecord
// file (host/tfrecord.h framing, masked CRC-32C) of Event messages
// (host/proto/event.proto): first one holding file_version
// "brain.Event:2", then one per summary, each with its wall time, step and
// a Summary of one simple_value under its tag. TensorBoard reads a
// directory of such files as one run.
//
// Unlike the other outputs, an event file is a log that grows while the run
// goes on, so that TensorBoard can show it live: records are appended
// whole, and flush() pushes them to the disk. A crash can leave a last
// record short, which TensorBoard's reader (and read_scalar_events) stop
// before.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "systole/status.h"

namespace systole {

class SummaryWriter {
 public:
  // Creates `dir` (and its parents) and a new event file in it,
  // events.out.tfevents.<unix seconds>.<host name>.<pid>.<n>.v2 as
  // TensorFlow names them (n counts this process's writers).
  static Result<SummaryWriter> create(const std::string& dir);
  SummaryWriter(SummaryWriter&&) = default;
  SummaryWriter& operator=(SummaryWriter&&) = default;

  const std::string& path() const { return path_; }
  Status scalar(const std::string& tag, float value, int64_t step);
  Status flush();

 private:
  struct Closer {
    void operator()(std::FILE* file) const { std::fclose(file); }
  };
  SummaryWriter(std::string path, std::FILE* file) : path_(std::move(path)), file_(file) {}
  Status append(const std::string& event);

  std::string path_;
  std::unique_ptr<std::FILE, Closer> file_;
};

struct ScalarEvent {
  double wall_time = 0;
  int64_t step = 0;
  std::string tag;
  double value = 0;
  bool single = true;  // a float32 value (simple_value, DT_FLOAT), else wider
};

// What an event file holds: its scalars in file order, and the other
// summaries (histograms, images, text, non-scalar tensors) by plugin name
// ("histograms", or "(no plugin)") and count.
struct EventFileContents {
  std::vector<ScalarEvent> scalars;
  std::vector<std::pair<std::string, uint64_t>> other;
};

// Reads an event file as TensorFlow 1 and 2 write it: a scalar is a
// simple_value, or a rank-0 tensor (DT_FLOAT, DT_DOUBLE, DT_HALF,
// DT_BFLOAT16, DT_INT32, DT_INT64; in tensor_content or the typed list) of
// plugin "scalars" or data class scalar. Every frame and CRC is checked
// (errors name the file, record and byte offset); the first record must be
// the file_version event; a scalar tensor whose content does not hold its
// value is an error naming the tag.
Result<EventFileContents> read_event_file(const std::string& path);
// The scalars alone.
Result<std::vector<ScalarEvent>> read_scalar_events(const std::string& path);

}  // namespace systole
