// SPDX-License-Identifier: Apache-2.0
#include "read_file.h"

#include <sys/stat.h>

#include <fstream>
#include <iterator>

namespace systole {

Result<std::string> read_regular_file(const std::string& path) {
  struct stat info;
  std::ifstream in(path, std::ios::binary);
  if (!in || ::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    return Status(StatusCode::kNotFound, path + ": cannot open (or not a regular file)");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status(StatusCode::kUnavailable, path + ": read failed");
  return bytes;
}

}  // namespace systole
