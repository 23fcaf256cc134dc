// SPDX-License-Identifier: Apache-2.0
// TFRecord output cut into shards named as TensorFlow's tools name them,
// PREFIX-00000-of-00008.tfrecord, each holding a consecutive run of the
// records (accel_data's subcommands).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "systole/status.h"
#include "systole/tfrecord.h"

namespace systole {

std::string shard_name(const std::string& prefix, uint32_t shard, uint32_t shards);

// N shard writers for `total` records; record i goes to shard i * N / total.
// Each file compressed as `compression` says (none, gzip, zlib).
class ShardedWriter {
 public:
  static Result<ShardedWriter> create(const std::string& prefix, uint32_t shards, uint64_t total,
                                      Compression compression = Compression::kNone);
  Status write(std::string_view record);
  // All the shards appear, each whole, or on an error none of them: every
  // shard is synced before the first is renamed into place, so a failed
  // write or fsync leaves the directory as it was; a rename that fails
  // removes the shards renamed before it (files of the same names that
  // they replaced are gone then). A crash between two renames can leave
  // the first shards; their names say how many there should be.
  Status close();
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<TFRecordWriter> files_;
  std::vector<std::string> names_;
  uint64_t total_ = 0, written_ = 0;
};

// A data set's splits, in this order.
inline constexpr const char* kSplitNames[3] = {"train", "validation", "test"};

// The splits' records as DIR/train-0000i-of-0000N.tfrecord (N = the smaller
// of `train_shards` and its records), DIR/validation-00000-of-00001 and
// DIR/test-00000-of-00001; an empty split writes no file. Makes DIR.
Status write_splits(const std::string& dir, const std::vector<std::string> (&splits)[3],
                    uint32_t train_shards, Compression compression);

}  // namespace systole
