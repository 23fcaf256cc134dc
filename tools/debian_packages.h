// SPDX-License-Identifier: Apache-2.0
// accel_data debian-packages: a collaborative-filtering data set that every
// Debian machine has. Each package's Depends, Pre-Depends and Recommends
// (the first alternative of each) are its interactions, as (package,
// dependency) pairs of package names, read from the installed system's
// status file and the archive's package lists (`apt-cache dumpavail`).
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <map>
#include <string>
#include <vector>

#include "systole/status.h"
#include "systole/tfrecord.h"

namespace systole {

// One deb822 stanza (a paragraph of a package list): field names
// lower-cased -> value, continuation lines joined with '\n'.
using Stanza = std::map<std::string, std::string>;
// Calls `each` for every stanza of `in` (named `source` in errors, which
// give the line).
Status read_deb822(std::istream& in, const std::string& source,
                   const std::function<void(const Stanza&)>& each);
Status read_deb822_file(const std::string& file, const std::function<void(const Stanza&)>& each);
// What `apt-cache dumpavail` prints: every package the archive's lists
// hold (empty before `apt-get update`).
Result<std::string> apt_cache_dumpavail();

struct DebianPackagesOptions {
  std::string out;  // directory
  std::vector<std::string> files = {"/var/lib/dpkg/status"};
  bool apt_cache = true;         // also read `apt-cache dumpavail`, when apt-cache exists
  double test_fraction = 0.1;    // edges held out (a package keeps at least one in training)
  uint32_t negatives = 4;        // sampled non-edges per held-out edge (the test set's AUC)
  uint32_t train_negatives = 0;  // per training edge; 0: the training files hold positives
                                 // only, for negatives drawn each epoch (data.negatives)
  uint32_t shards = 4;           // training files
  uint64_t seed = 1;
  Compression compression = Compression::kNone;  // of the files written
};

// Writes DIR/train-0000i-of-0000N.tfrecord and DIR/test-00000-of-00001.tfrecord
// with features package (string), dependency (string), label (int64: 1 an
// edge, 0 a sampled negative: a dependency drawn uniformly from all
// dependencies that is not one of the package's); prints what it read and wrote. Errors name
// the file and line.
Status write_debian_packages(const DebianPackagesOptions& options);

}  // namespace systole
