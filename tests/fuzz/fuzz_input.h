// SPDX-License-Identifier: Apache-2.0
// What the fuzz targets share: the readers under test take paths, so an
// input becomes files in a directory of this process's own; and inputs that
// carry two parts start with the first part's length.
#pragma once

#include <unistd.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace systole::fuzz {

// A directory under $TMPDIR (or /tmp) for this process, made once.
inline const std::string& scratch_directory() {
  static const std::string directory = [] {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/systole-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) {
      std::perror("mkdtemp");
      std::abort();
    }
    return pattern;
  }();
  return directory;
}

// Writes `bytes` to the scratch file `name` and returns its path.
inline std::string write_file(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_directory() + "/" + name;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file || std::fwrite(bytes.data(), 1, bytes.size(), file) != bytes.size() || std::fclose(file) != 0) {
    std::perror(path.c_str());
    std::abort();
  }
  return path;
}

// Splits an input into [u16 little-endian length n][n bytes][the rest]; an
// input too short for its length gives what there is.
struct TwoParts {
  std::string_view first, second;
};
inline TwoParts split(const uint8_t* data, std::size_t size) {
  if (size < 2) return {{}, {reinterpret_cast<const char*>(data), size}};
  std::size_t n = std::size_t(data[0]) | std::size_t(data[1]) << 8;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  n = std::min(n, rest.size());
  return {rest.substr(0, n), rest.substr(n)};
}

// A failed property: print it and abort, so libFuzzer keeps the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz property failed: %s\n", what.c_str());
  std::abort();
}

}  // namespace systole::fuzz
