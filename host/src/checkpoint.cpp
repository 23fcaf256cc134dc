// SPDX-License-Identifier: Apache-2.0
// safetensors reading and writing, with nlohmann/json for the header.
#include "systole/checkpoint.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <vector>

#include "systole/output_file.h"
#include "systole/tfrecord.h"

namespace systole {

const Tensor* Checkpoint::find(const std::string& name) const {
  for (const Tensor& tensor : tensors)
    if (tensor.name == name) return &tensor;
  return nullptr;
}

namespace {

// The data section as it is written, a tensor's bytes at a time.
template <class Sink>
Status for_each_data_chunk(const Checkpoint& checkpoint, Sink&& sink) {
  std::vector<int64_t> counts;
  for (const Tensor& tensor : checkpoint.tensors) {
    if (!tensor.int64) {
      SYSTOLE_RETURN_IF_ERROR(sink(tensor.values.data(), tensor.values.size() * sizeof(float)));
      continue;
    }
    counts.assign(tensor.values.begin(), tensor.values.end());
    SYSTOLE_RETURN_IF_ERROR(sink(counts.data(), counts.size() * sizeof(int64_t)));
  }
  return ok_status();
}

// A header's list of non-negative integers (a shape, data_offsets); none
// for anything else. nlohmann's conversion would take 784.0 as 784 and
// 784.5 as 784 too: a number that is not an integer is refused, never
// rounded.
std::optional<std::vector<uint64_t>> unsigned_list(const nlohmann::json& value) {
  if (!value.is_array()) return std::nullopt;
  std::vector<uint64_t> list;
  for (const nlohmann::json& item : value) {
    if (!item.is_number_unsigned()) return std::nullopt;
    list.push_back(item.get<uint64_t>());
  }
  return list;
}

std::string hex32(uint32_t value) {
  char text[9];
  std::snprintf(text, sizeof text, "%08x", value);
  return text;
}

}  // namespace

Status write_safetensors(const std::string& path, const Checkpoint& checkpoint) {
  nlohmann::json header = nlohmann::json::object();
  uint64_t offset = 0;
  for (const Tensor& tensor : checkpoint.tensors) {
    uint64_t elements = 1;
    for (uint64_t d : tensor.shape) elements *= d;
    if (elements != tensor.values.size())
      return Status(StatusCode::kInternal, "tensor '" + tensor.name + "' shape does not match its data");
    const uint64_t bytes = elements * (tensor.int64 ? sizeof(int64_t) : sizeof(float));
    header[tensor.name] = {{"dtype", tensor.int64 ? "I64" : "F32"},
                           {"shape", tensor.shape},
                           {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::map<std::string, std::string> metadata = checkpoint.metadata;
  uint32_t crc = 0;
  SYSTOLE_RETURN_IF_ERROR(for_each_data_chunk(checkpoint, [&](const void* data, std::size_t bytes) {
    crc = crc32c_extend(crc, data, bytes);
    return ok_status();
  }));
  metadata[kDataChecksumKey] = hex32(crc);
  header["__metadata__"] = metadata;
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned

  auto file = OutputFile::create(path);
  if (!file.ok()) return file.status();
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));
  SYSTOLE_RETURN_IF_ERROR(file->write(length, sizeof length));
  SYSTOLE_RETURN_IF_ERROR(file->write(text.data(), text.size()));
  SYSTOLE_RETURN_IF_ERROR(for_each_data_chunk(
      checkpoint, [&](const void* data, std::size_t bytes) { return file->write(data, bytes); }));
  return file->commit();
}

Result<Checkpoint> read_safetensors(const std::string& path) {
  std::error_code error;
  if (std::filesystem::exists(path, error) && !std::filesystem::is_regular_file(path, error))
    return Status(StatusCode::kInvalidArgument, path + ": not a regular file");
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  if (!file) return Status(StatusCode::kNotFound, path + ": cannot open");
  const uint64_t size = uint64_t(file.tellg());
  file.seekg(0);
  auto bad = [&](const std::string& what) { return Status(StatusCode::kDataLoss, path + ": " + what); };
  uint8_t length_bytes[8];
  if (size < 8 || !file.read(reinterpret_cast<char*>(length_bytes), 8))
    return bad("too short for a safetensors header");
  uint64_t header_size = 0;
  for (int i = 0; i < 8; ++i) header_size |= uint64_t(length_bytes[i]) << (8 * i);
  if (header_size > size - 8)
    return bad("header length " + std::to_string(header_size) + " runs past the end of the file");
  std::string text(header_size, '\0');
  file.read(text.data(), std::streamsize(header_size));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return bad(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) return bad("header is not a JSON object");

  const uint64_t data_size = size - 8 - header_size;
  // The data section's checksum, when the writer recorded one (this
  // library always does; other writers do not).
  // It is checked before any value is read, so damage is named as such.
  const auto metadata = header.find("__metadata__");
  if (metadata != header.end() && metadata->is_object() && metadata->contains(kDataChecksumKey) &&
      (*metadata)[kDataChecksumKey].is_string()) {
    const std::string recorded = (*metadata)[kDataChecksumKey].get<std::string>();
    uint32_t crc = 0;
    std::vector<char> chunk(1 << 20);
    for (uint64_t left = data_size; left > 0;) {
      const std::size_t bytes = std::size_t(std::min<uint64_t>(left, chunk.size()));
      if (!file.read(chunk.data(), std::streamsize(bytes))) return bad("data section cannot be read");
      crc = crc32c_extend(crc, chunk.data(), bytes);
      left -= bytes;
    }
    if (hex32(crc) != recorded)
      return bad("the data section's CRC-32C is " + hex32(crc) + " but the header records " + recorded +
                 ": the file is damaged");
  }
  Checkpoint checkpoint;
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
    if (entry["dtype"] != "F32" && entry["dtype"] != "I64")
      return bad(where + "dtype " + entry["dtype"].dump() + " (F32 and I64 are supported)");
    Tensor tensor;
    tensor.name = it.key();
    tensor.int64 = entry["dtype"] == "I64";
    const uint64_t element_bytes = tensor.int64 ? 8 : 4;
    uint64_t elements = 1;
    try {
      const std::optional<std::vector<uint64_t>> shape = unsigned_list(entry["shape"]);
      if (!shape)
        return bad(where + "shape " + entry["shape"].dump() + " is not a list of non-negative integers");
      tensor.shape = *shape;
      const std::optional<std::vector<uint64_t>> listed = unsigned_list(entry["data_offsets"]);
      if (!listed)
        return bad(where + "data_offsets " + entry["data_offsets"].dump() +
                   " is not a list of non-negative integers");
      const std::vector<uint64_t>& offsets = *listed;
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > data_size)
        return bad(where + "data_offsets outside the file's " + std::to_string(data_size) + " data bytes");
      for (uint64_t d : tensor.shape) {
        if (d != 0 && elements > data_size / d)  // more than the file holds, and no overflow
          return bad(where + "shape " + entry["shape"].dump() + " holds more than the file's " +
                     std::to_string(data_size) + " data bytes");
        elements *= d;
      }
      if (elements * element_bytes != offsets[1] - offsets[0])
        return bad(where + "shape holds " + std::to_string(elements) + " elements but data_offsets span " +
                   std::to_string(offsets[1] - offsets[0]) + " bytes");
      ranges.emplace_back(offsets[0], offsets[1]);
      file.seekg(std::streamoff(8 + header_size + offsets[0]));
      if (!tensor.int64) {
        tensor.values.resize(elements);
        if (!file.read(reinterpret_cast<char*>(tensor.values.data()), std::streamsize(elements * 4)))
          return bad(where + "data cannot be read");
      } else {
        std::vector<int64_t> counts(elements);
        if (!file.read(reinterpret_cast<char*>(counts.data()), std::streamsize(elements * 8)))
          return bad(where + "data cannot be read");
        for (int64_t count : counts) {
          if (count < 0 || count > (int64_t(1) << 24))
            return bad(where + "count " + std::to_string(count) + " out of range");
          tensor.values.push_back(float(count));
        }
      }
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

Checkpoint model_tensors(const ParameterStore& store, const Optimizer* optimizer) {
  Checkpoint checkpoint;
  // In torch's order, whatever order the store keeps a tensor in.
  auto tensor = [](std::string name, const ParameterStore::Entry& entry, const float* stored) {
    Tensor t{std::move(name), entry.shape, std::vector<float>(entry.size), entry.integer};
    entry.to_torch(stored, t.values.data());
    return t;
  };
  for (std::size_t i = 0; i < store.entries().size(); ++i)
    checkpoint.tensors.push_back(tensor(store.entries()[i].name, store.entries()[i], store.values(i)));
  if (!optimizer) return checkpoint;
  for (const OptimizerSlot& slot : optimizer->state())
    for (const ParameterStore::Entry& entry : store.entries())
      if (entry.region == slot.region)
        checkpoint.tensors.push_back(
            tensor("optimizer." + slot.name + "." + entry.name, entry, slot.values->data() + entry.offset));
  return checkpoint;
}

Status read_model_tensors(const Checkpoint& checkpoint, const std::string& path, const ParameterStore& store,
                          const std::vector<OptimizerSlot>& slots, ModelValues& values) {
  for (Region region : {Region::kTrainable, Region::kBuffer, Region::kTable})
    values.region(region).assign(store.region(region).size(), 0.0f);
  values.optimizer_state.clear();
  for (const OptimizerSlot& slot : slots)
    values.optimizer_state.emplace_back(slot.name, std::vector<float>(store.region(slot.region).size()));
  auto take = [&](const std::string& name, const ParameterStore::Entry& entry, std::vector<float>& into) {
    const Tensor* tensor = checkpoint.find(name);
    if (!tensor || tensor->shape != entry.shape) {
      std::string shape;
      for (uint64_t d : entry.shape) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
      return Status(StatusCode::kInvalidArgument,
                    path + ": tensor " + name +
                        (tensor ? " has another shape than" : " is missing; the model has") + " [" + shape +
                        "]");
    }
    entry.from_torch(tensor->values.data(), into.data() + entry.offset);
    return ok_status();
  };
  std::set<std::string> names;
  for (const ParameterStore::Entry& entry : store.entries()) {
    names.insert(entry.name);
    SYSTOLE_RETURN_IF_ERROR(take(entry.name, entry, values.region(entry.region)));
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (slots[i].region == entry.region)
        SYSTOLE_RETURN_IF_ERROR(
            take("optimizer." + slots[i].name + "." + entry.name, entry, values.optimizer_state[i].second));
  }
  // Strict: every tensor is one of the model's, or an optimizer slot of
  // one (a training checkpoint's, which evaluation does not read).
  for (const Tensor& tensor : checkpoint.tensors) {
    std::string parameter = tensor.name;
    if (parameter.rfind("optimizer.", 0) == 0 && parameter.find('.', 10) != std::string::npos)
      parameter = parameter.substr(parameter.find('.', 10) + 1);
    if (!names.count(parameter))
      return Status(StatusCode::kInvalidArgument,
                    path + ": tensor " + tensor.name + " is not in the model's state_dict (strict loading)");
  }
  return ok_status();
}

}  // namespace systole
