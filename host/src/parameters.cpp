// SPDX-License-Identifier: Apache-2.0
// The named parameter store.
#include "systole/parameters.h"

namespace systole {

std::size_t ParameterStore::declare(const std::string& name, const std::vector<uint64_t>& shape,
                                    Region region, bool integer) {
  Entry entry;
  entry.name = name;
  entry.shape = shape;
  entry.region = region;
  entry.integer = integer;
  entry.size = 1;
  for (uint64_t d : shape) entry.size *= std::size_t(d);
  std::vector<float>& values = this->region(region);
  entry.offset = values.size();
  values.resize(values.size() + entry.size, 0.0f);
  if (region == Region::kTrainable) gradients_.resize(trainable_.size(), 0.0f);
  entries_.push_back(std::move(entry));
  sparse_gradients_.emplace_back();
  return entries_.size() - 1;
}

const ParameterStore::Entry* ParameterStore::find(const std::string& name) const {
  for (const Entry& entry : entries_)
    if (entry.name == name) return &entry;
  return nullptr;
}

std::vector<float>& ParameterStore::region(Region region) {
  switch (region) {
    case Region::kTrainable:
      return trainable_;
    case Region::kBuffer:
      return buffers_;
    case Region::kTable:
      return tables_;
  }
  return trainable_;
}

const std::vector<float>& ParameterStore::region(Region region) const {
  return const_cast<ParameterStore*>(this)->region(region);
}

float* ParameterStore::values(std::size_t index) {
  const Entry& entry = entries_[index];
  return region(entry.region).data() + entry.offset;
}

const float* ParameterStore::values(std::size_t index) const {
  const Entry& entry = entries_[index];
  return region(entry.region).data() + entry.offset;
}

float* ParameterStore::gradient(std::size_t index) { return gradients_.data() + entries_[index].offset; }

}  // namespace systole
