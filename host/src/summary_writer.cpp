// SPDX-License-Identifier: Apache-2.0
// TensorBoard event files: Event messages (libprotobuf) framed as TFRecords.
#include "systole/summary_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>

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

namespace {

// The value of a rank-0 tensor, or an error saying what is wrong with it.
Result<std::pair<double, bool>> tensor_scalar(const tf::TensorProto& tensor) {
  const std::string& content = tensor.tensor_content();
  auto from_content = [&](auto sample) -> Result<decltype(sample)> {
    if (content.size() != sizeof sample)
      return Status(StatusCode::kDataLoss, "tensor_content holds " + std::to_string(content.size()) +
                                               " bytes, a scalar of its dtype " +
                                               std::to_string(sizeof sample));
    std::memcpy(&sample, content.data(), sizeof sample);  // little-endian, as this host
    return sample;
  };
  // The value of type T: in tensor_content, or the one element of the
  // dtype's typed list; `single` says whether it is a float32.
  auto typed = [&](auto sample, const auto& list, bool single) -> Result<std::pair<double, bool>> {
    using T = decltype(sample);
    if (content.empty()) {
      if (list.size() != 1) return Status(StatusCode::kDataLoss, "the tensor holds no value");
      return std::pair<double, bool>(double(T(list.Get(0))), single);
    }
    auto value = from_content(T());
    if (!value.ok()) return value.status();
    return std::pair<double, bool>(double(*value), single);
  };
  // DT_HALF and DT_BFLOAT16: the 16 bits.
  auto half_bits = [&]() -> Result<uint16_t> {
    auto bits = typed(uint16_t(), tensor.half_val(), true);
    if (!bits.ok()) return bits.status();
    return uint16_t(bits->first);
  };
  switch (tensor.dtype()) {
    case 1:  // DT_FLOAT
      return typed(float(), tensor.float_val(), true);
    case 2:  // DT_DOUBLE
      return typed(double(), tensor.double_val(), false);
    case 3:  // DT_INT32
      return typed(int32_t(), tensor.int_val(), false);
    case 9:  // DT_INT64
      return typed(int64_t(), tensor.int64_val(), false);
    case 14: {  // DT_BFLOAT16: the high half of a float32
      auto bits = half_bits();
      if (!bits.ok()) return bits.status();
      const uint32_t wide = uint32_t(*bits) << 16;
      float value;
      std::memcpy(&value, &wide, sizeof value);
      return std::pair<double, bool>(value, true);
    }
    case 19: {  // DT_HALF: IEEE binary16
      auto bits = half_bits();
      if (!bits.ok()) return bits.status();
      const int exponent = (*bits >> 10) & 0x1f, fraction = *bits & 0x3ff;
      const double magnitude = exponent == 0    ? std::ldexp(fraction, -24)
                               : exponent == 31 ? (fraction ? NAN : INFINITY)
                                                : std::ldexp(1024 + fraction, exponent - 25);
      return std::pair<double, bool>((*bits & 0x8000) ? -magnitude : magnitude, true);
    }
    default:
      return Status(StatusCode::kDataLoss,
                    "dtype " + std::to_string(tensor.dtype()) + " is not a number type");
  }
}

}  // namespace

Result<EventFileContents> read_event_file(const std::string& path) {
  auto reader = TFRecordReader::open(path);
  if (!reader.ok()) return reader.status();
  EventFileContents contents;
  std::map<std::string, uint64_t> other;
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
    for (const tf::SummaryValue& value : event.summary().value()) {
      const std::string& plugin = value.metadata().plugin_data().plugin_name();
      if (value.value_case() == tf::SummaryValue::kSimpleValue) {
        contents.scalars.push_back(
            {event.wall_time(), event.step(), value.tag(), value.simple_value(), true});
        continue;
      }
      const bool scalar_kind = plugin == "scalars" || value.metadata().data_class() == 1;
      if (value.value_case() == tf::SummaryValue::kTensor && scalar_kind) {
        const tf::TensorProto& tensor = value.tensor();
        if (tensor.tensor_shape().dim_size() != 0 || tensor.tensor_shape().unknown_rank())
          return bad("scalar summary '" + value.tag() + "': a tensor of rank " +
                     std::to_string(tensor.tensor_shape().dim_size()) + ", not 0");
        auto scalar = tensor_scalar(tensor);
        if (!scalar.ok()) return bad("scalar summary '" + value.tag() + "': " + scalar.status().message());
        contents.scalars.push_back(
            {event.wall_time(), event.step(), value.tag(), scalar->first, scalar->second});
        continue;
      }
      ++other[plugin.empty() ? "(no plugin)" : plugin];
    }
  }
  if (reader->records_read() == 0)
    return Status(StatusCode::kDataLoss, path + ": no file_version event (empty)");
  contents.other.assign(other.begin(), other.end());
  return contents;
}

Result<std::vector<ScalarEvent>> read_scalar_events(const std::string& path) {
  auto contents = read_event_file(path);
  if (!contents.ok()) return contents.status();
  return std::move(contents->scalars);
}

}  // namespace systole
