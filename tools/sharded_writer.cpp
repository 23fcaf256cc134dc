// SPDX-License-Identifier: Apache-2.0
// Sharded TFRecord output.
#include "sharded_writer.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace systole {

std::string shard_name(const std::string& prefix, uint32_t shard, uint32_t shards) {
  char suffix[64];
  std::snprintf(suffix, sizeof suffix, "-%05u-of-%05u.tfrecord", shard, shards);
  return prefix + suffix;
}

Result<ShardedWriter> ShardedWriter::create(const std::string& prefix, uint32_t shards, uint64_t total,
                                            Compression compression) {
  ShardedWriter writer;
  writer.total_ = total;
  for (uint32_t s = 0; s < shards; ++s) {
    auto file = TFRecordWriter::create(shard_name(prefix, s, shards), compression);
    if (!file.ok()) return file.status();
    writer.files_.push_back(std::move(file).value());
    writer.names_.push_back(shard_name(prefix, s, shards));
  }
  return writer;
}

Status ShardedWriter::write(std::string_view record) {
  const uint64_t shard = written_ * files_.size() / std::max<uint64_t>(total_, 1);
  ++written_;
  return files_[std::min<std::size_t>(shard, files_.size() - 1)].write(record);
}

Status ShardedWriter::close() {
  for (TFRecordWriter& file : files_) SYSTOLE_RETURN_IF_ERROR(file.sync());
  for (std::size_t s = 0; s < files_.size(); ++s) {
    Status published = files_[s].publish();
    if (published.ok()) continue;
    for (std::size_t before = 0; before < s; ++before) std::remove(names_[before].c_str());
    if (s == 0) return published;
    return Status(published.code(), published.message() + "; the " + std::to_string(s) +
                                        " shard(s) put in place before it were removed");
  }
  return ok_status();
}

Status write_splits(const std::string& dir, const std::vector<std::string> (&splits)[3],
                    uint32_t train_shards, Compression compression) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST)
    return Status(StatusCode::kUnavailable, dir + ": cannot create the directory: " + std::strerror(errno));
  for (int split = 0; split < 3; ++split) {
    const std::vector<std::string>& records = splits[split];
    if (records.empty()) continue;
    const uint32_t shards = split == 0 ? uint32_t(std::min<std::size_t>(train_shards, records.size())) : 1;
    auto writer = ShardedWriter::create(dir + "/" + kSplitNames[split], shards, records.size(), compression);
    if (!writer.ok()) return writer.status();
    for (const std::string& record : records) SYSTOLE_RETURN_IF_ERROR(writer->write(record));
    SYSTOLE_RETURN_IF_ERROR(writer->close());
  }
  return ok_status();
}

}  // namespace systole
