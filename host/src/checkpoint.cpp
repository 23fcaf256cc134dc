// safetensors reading and writing, with nlohmann/json for the header.
#include "systole/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace systole {

const Tensor* Checkpoint::find(const std::string& name) const {
  for (const Tensor& tensor : tensors)
    if (tensor.name == name) return &tensor;
  return nullptr;
}

Status write_safetensors(const std::string& path, const Checkpoint& checkpoint) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const Tensor& tensor : checkpoint.tensors) {
    uint64_t elements = 1;
    for (uint64_t d : tensor.shape) elements *= d;
    if (elements != tensor.values.size())
      return Status(StatusCode::kInternal, "tensor '" + tensor.name + "' shape does not match its data");
    const uint64_t bytes = elements * sizeof(float);
    header[tensor.name] = {{"dtype", "F32"}, {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  if (!checkpoint.metadata.empty()) header["__metadata__"] = checkpoint.metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned

  const std::string temporary = path + ".tmp";
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return Status(StatusCode::kUnavailable, path + ": cannot create " + temporary);
  bool good = true;
  auto put = [&](const void* data, std::size_t bytes) {
    const char* p = static_cast<const char*>(data);
    while (good && bytes > 0) {
      const ssize_t written = ::write(fd, p, bytes);
      if (written <= 0) good = false;
      else {
        p += written;
        bytes -= std::size_t(written);
      }
    }
  };
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  put(length, sizeof length);
  put(text.data(), text.size());
  for (const Tensor& tensor : checkpoint.tensors)
    put(tensor.values.data(), tensor.values.size() * sizeof(float));
  good = good && ::fsync(fd) == 0;
  good = (::close(fd) == 0) && good;
  if (!good || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return Status(StatusCode::kUnavailable, path + ": write failed (disk full or not writable?)");
  }
  return ok_status();
}

Result<Checkpoint> read_safetensors(const std::string& path) {
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return Status(StatusCode::kNotFound, path + ": cannot open");
  const uint64_t size = uint64_t(file.tellg());
  file.seekg(0);
  auto bad = [&](const std::string& what) {
    return Status(StatusCode::kDataLoss, path + ": " + what);
  };
  uint8_t length_bytes[8];
  if (size < 8 || !file.read(reinterpret_cast<char*>(length_bytes), 8))
    return bad("too short for a safetensors header");
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t(length_bytes[i]) << (8 * i);
  if (header_size > size - 8) return bad("header length " + std::to_string(header_size) + " runs past the end of the file");
  std::string text(header_size, '\0');
  file.read(text.data(), std::streamsize(header_size));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) return bad("header is not a JSON object");

  Checkpoint checkpoint;
  const uint64_t data_size = size - 8 - header_size;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (auto it = header.begin(); it != header.end(); ++it) {
    if (it.key() == "__metadata__") {
      if (!it->is_object()) return bad("__metadata__ is not an object");
      for (auto m = it->begin(); m != it->end(); ++m) {
        if (!m->is_string()) return bad("__metadata__ '" + m.key() + "' is not a string");
        checkpoint.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor '" + it.key() + "': ";
    const nlohmann::json& entry = *it;
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets"))
      return bad(where + "needs dtype, shape and data_offsets");
    if (entry["dtype"] != "F32")
      return bad(where + "dtype " + entry["dtype"].dump() + " (only F32 is supported)");
    Tensor tensor;
    tensor.name = it.key();
    uint64_t elements = 1;
    try {
      tensor.shape = entry["shape"].get<std::vector<uint64_t>>();
      const auto offsets = entry["data_offsets"].get<std::vector<uint64_t>>();
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size)
        return bad(where + "data_offsets outside the file's " + std::to_string(data_size) + " data bytes");
      for (uint64_t d : tensor.shape) elements *= d;
      if (elements * sizeof(float) != offsets[1] - offsets[0])
        return bad(where + "shape holds " + std::to_string(elements) + " floats but data_offsets span " +
                   std::to_string(offsets[1] - offsets[0]) + " bytes");
      ranges.emplace_back(offsets[0], offsets[1]);
      tensor.values.resize(elements);
      file.seekg(std::streamoff(8 + header_size + offsets[0]));
      if (!file.read(reinterpret_cast<char*>(tensor.values.data()), std::streamsize(elements * 4)))
        return bad(where + "data cannot be read");
    } catch (const nlohmann::json::exception& e) {
      return bad(where + "malformed shape or data_offsets (" + e.what() + ")");
    }
    checkpoint.tensors.push_back(std::move(tensor));
  }
  std::sort(ranges.begin(), ranges.end());
  for (std::size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) return bad("tensors overlap in the data");
  return checkpoint;
}

}  // namespace systole
