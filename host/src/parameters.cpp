// The named parameter store.
#include "systole/parameters.h"

namespace systole {

std::size_t ParameterStore::declare(const std::string& name, const std::vector<uint64_t>& shape,
                                    bool trainable, bool integer) {
  Entry entry;
  entry.name = name;
  entry.shape = shape;
  entry.trainable = trainable;
  entry.integer = integer;
  entry.size = 1;
  for (uint64_t d : shape) entry.size *= std::size_t(d);
  std::vector<float>& region = trainable ? trainable_ : buffers_;
  entry.offset = region.size();
  region.resize(region.size() + entry.size, 0.0f);
  if (trainable) gradients_.resize(trainable_.size(), 0.0f);
  entries_.push_back(std::move(entry));
  return entries_.size() - 1;
}

const ParameterStore::Entry* ParameterStore::find(const std::string& name) const {
  for (const Entry& entry : entries_)
    if (entry.name == name) return &entry;
  return nullptr;
}

float* ParameterStore::values(std::size_t index) {
  const Entry& entry = entries_[index];
  return (entry.trainable ? trainable_ : buffers_).data() + entry.offset;
}

const float* ParameterStore::values(std::size_t index) const {
  const Entry& entry = entries_[index];
  return (entry.trainable ? trainable_ : buffers_).data() + entry.offset;
}

float* ParameterStore::gradient(std::size_t index) { return gradients_.data() + entries_[index].offset; }

}  // namespace systole
