// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files: Event messages (libprotobuf) framed as TFRecords.
#include "systole/summary_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "proto/event.pb.h"
#include "systole/tfrecord.h"

namespace systole {
namespace {

constexpr const char* kFileVersion = "brain.Event:2";

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

Result<SummaryWriter> SummaryWriter::create(const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error)
    return Status(StatusCode::kUnavailable, dir + ": cannot create the directory: " + error.message());
  static std::atomic<uint32_t> writers{0};
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  const std::string path = dir + "/events.out.tfevents." + std::to_string(int64_t(now_seconds())) + "." +
                           host + "." + std::to_string(::getpid()) + "." + std::to_string(writers++) + ".v2";
  // A new file only: never append to (or truncate) another run's events.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status(StatusCode::kUnavailable, path + ": cannot create: " + std::strerror(errno));
  std::FILE* file = ::fdopen(fd, "w");
  if (!file) {
    ::close(fd);
    return Status(StatusCode::kUnavailable, path + ": cannot open: " + std::strerror(errno));
  }
  SummaryWriter writer(path, file);
  tf::Event event;
  event.set_wall_time(now_seconds());
  event.set_file_version(kFileVersion);
  SYSTOLE_RETURN_IF_ERROR(writer.append(event.SerializeAsString()));
  SYSTOLE_RETURN_IF_ERROR(writer.flush());
  return writer;
}

Status SummaryWriter::append(const std::string& event) {
  const TFRecordFrame frame = tfrecord_frame(event);
  if (std::fwrite(frame.header, 1, sizeof frame.header, file_.get()) != sizeof frame.header ||
      std::fwrite(event.data(), 1, event.size(), file_.get()) != event.size() ||
      std::fwrite(frame.footer, 1, sizeof frame.footer, file_.get()) != sizeof frame.footer)
    return Status(StatusCode::kUnavailable, path_ + ": write failed: " + std::strerror(errno));
  return ok_status();
}

Status SummaryWriter::scalar(const std::string& tag, float value, int64_t step) {
  tf::Event event;
  event.set_wall_time(now_seconds());
  event.set_step(step);
  tf::SummaryValue* summary = event.mutable_summary()->add_value();
  summary->set_tag(tag);
  summary->set_simple_value(value);
  return append(event.SerializeAsString());
}

Status SummaryWriter::flush() {
  if (std::fflush(file_.get()) != 0 || ::fdatasync(::fileno(file_.get())) != 0)
    return Status(StatusCode::kUnavailable, path_ + ": write failed: " + std::strerror(errno));
  return ok_status();
}

Result<std::vector<ScalarEvent>> read_scalar_events(const std::string& path) {
  auto reader = TFRecordReader::open(path);
  if (!reader.ok()) return reader.status();
  std::vector<ScalarEvent> scalars;
  std::string record;
  for (;;) {
    const uint64_t index = reader->records_read(), at = reader->offset();
    auto more = reader->next(record);
    if (!more.ok()) return more.status();
    if (!*more) break;
    auto bad = [&](const std::string& what) {
      return Status(StatusCode::kDataLoss, path + ": record " + std::to_string(index) + " at byte " +
                                               std::to_string(at) + ": " + what);
    };
    tf::Event event;
    if (!event.ParseFromString(record)) return bad("not an Event message");
    if (index == 0) {
      if (event.file_version() != kFileVersion)
        return bad("expected the file_version event (" + std::string(kFileVersion) + ") first");
      continue;
    }
    for (const tf::SummaryValue& value : event.summary().value())
      scalars.push_back({event.wall_time(), event.step(), value.tag(), value.simple_value()});
  }
  if (reader->records_read() == 0)
    return Status(StatusCode::kDataLoss, path + ": no file_version event (empty)");
  return scalars;
}

}  // namespace systole
