// SPDX-License-Identifier: Apache-2.0
// accel_data fortunes: a character-level language-modelling data set from
// Debian's `fortunes` package (/usr/share/games/fortunes: about 1.3 MB of
// English in some 15,000 fortunes), or any files in fortune's format (a
// line holding only % ends each entry).
//
//   - Each fortune is cleaned: overstruck characters (c BACKSPACE c, the
//     old terminals' bold and underline) become the character, other
//     control characters go, and every run of whitespace (newlines
//     included) becomes one space. A fortune given twice is kept once.
//   - The split is by fortune, seeded (Fingerprint64 of the seed and the
//     text), so no fortune has text on both sides.
//   - The vocabulary is the `vocabulary_size` characters (UTF-8 code
//     points) most frequent in the training fortunes, ties in byte order,
//     written to DIR/vocabulary.txt one per line. A text feature with
//     split: characters reads it: ids 2.. in that order, 1 for any other
//     character, 0 padding; so a model has vocabulary_size + 2 classes
//     whatever the corpus holds.
//   - Each fortune of n characters gives windows of `length` next-character
//     predictions: `context` is characters [s, s + length) and `next`
//     characters [s + 1, s + length + 1) for s = 0, length, 2 length, ...,
//     both cut at the fortune's end (the pipeline pads them with 0, which
//     the loss's ignore_class leaves out).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "systole/status.h"
#include "systole/tfrecord.h"

namespace systole {

struct FortunesOptions {
  std::string out;                 // directory
  std::vector<std::string> files;  // empty: every fortune file of /usr/share/games/fortunes
  uint32_t length = 64;
  uint32_t vocabulary_size = 96;
  double validation_fraction = 0.05;
  double test_fraction = 0.05;
  uint32_t shards = 2;  // training files
  uint64_t seed = 1;
  Compression compression = Compression::kNone;  // of the files written
};

// Writes DIR/{train-0000i-of-0000N,validation-00000-of-00001,
// test-00000-of-00001}.tfrecord with string features context and next,
// DIR/vocabulary.txt and DIR/dataset.json (the files read and their
// Fingerprint64; fortunes, characters and windows per split). Prints the
// same. No fortune file is an error saying to install `fortunes`.
Status write_fortunes(const FortunesOptions& options);

}  // namespace systole
