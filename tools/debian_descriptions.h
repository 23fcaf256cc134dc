// SPDX-License-Identifier: Apache-2.0
// accel_data debian-descriptions: a text-classification data set that
// every Debian machine has once `apt-get update` has run. Each package's
// one-line Description is the text and its Section (admin, devel, libs,
// python, ...) the class: about 60,000 packages, descriptions of about
// seven words.
//
// Made so that nothing is learnt by heart across the splits:
//   - a description that several packages share is kept once (with the
//     first such package in name order, and its section);
//   - the split is by source package, seeded: Fingerprint64(seed, source)
//     puts a source package and every binary package built from it in
//     training, validation or test, so no sibling package (libfoo1,
//     libfoo-dev, libfoo-doc) crosses splits;
//   - the `classes` - 1 largest sections (ties by name) keep their own
//     class; the rest merge into `other`, so the class count, and with it
//     a config's `model.classes`, does not depend on the archive's state.
// Labels are the sections in name order (`other` among them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "systole/status.h"
#include "systole/tfrecord.h"

namespace systole {

struct DebianDescriptionsOptions {
  std::string out;                 // directory
  std::vector<std::string> files;  // deb822 package lists; empty: `apt-cache dumpavail`
  uint32_t classes = 32;           // sections kept, `other` included
  double validation_fraction = 0.1;
  double test_fraction = 0.1;
  uint32_t shards = 4;  // training files
  uint64_t seed = 1;
  Compression compression = Compression::kNone;  // of the files written
};

// Writes DIR/{train-0000i-of-0000N,validation-00000-of-00001,
// test-00000-of-00001}.tfrecord with features text (string), label
// (int64), section, package and source (strings); DIR/sections.txt (the
// labels' names, one per line, label 0 first) and DIR/dataset.json (what
// was read: the package count and the input's Fingerprint64; what was
// kept, merged and written per split). Prints the same. An empty package
// list is an error saying to run `apt-get update`.
Status write_debian_descriptions(const DebianDescriptionsOptions& options);

}  // namespace systole
