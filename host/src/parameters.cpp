// SPDX-License-Identifier: Apache-2.0
// The named parameter store.
#include "systole/parameters.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

namespace systole {
namespace {

// Calls visit(stored, torch) for each element of a tensor of torch's
// `shape` kept with its axes in the order `axes`: its offset in the
// store's layout and in torch's, stored offsets ascending.
template <class Visit>
void each_element(const std::vector<uint64_t>& shape, const std::vector<uint32_t>& axes, Visit visit) {
  const std::size_t rank = shape.size();
  std::vector<std::size_t> torch_stride(rank, 1);
  for (std::size_t d = rank; d-- > 1;) torch_stride[d - 1] = torch_stride[d] * std::size_t(shape[d]);
  std::vector<std::size_t> index(rank, 0);  // per stored axis
  const std::size_t size = std::accumulate(shape.begin(), shape.end(), std::size_t(1),
                                           [](std::size_t a, uint64_t d) { return a * std::size_t(d); });
  std::size_t torch = 0;
  for (std::size_t stored = 0; stored < size; ++stored) {
    visit(stored, torch);
    // The next stored index: the innermost stored axis first.
    for (std::size_t i = rank; i-- > 0;) {
      const uint32_t axis = axes[i];
      torch += torch_stride[axis];
      if (++index[i] < shape[axis]) break;
      torch -= torch_stride[axis] * std::size_t(shape[axis]);
      index[i] = 0;
    }
  }
}

}  // namespace

void ParameterStore::Entry::to_torch(const float* stored, float* torch) const {
  if (axes.empty()) {
    std::copy_n(stored, size, torch);
    return;
  }
  each_element(shape, axes, [&](std::size_t s, std::size_t t) { torch[t] = stored[s]; });
}

void ParameterStore::Entry::from_torch(const float* torch, float* stored) const {
  if (axes.empty()) {
    std::copy_n(torch, size, stored);
    return;
  }
  each_element(shape, axes, [&](std::size_t s, std::size_t t) { stored[s] = torch[t]; });
}

std::size_t ParameterStore::declare(const std::string& name, const std::vector<uint64_t>& shape,
                                    Region region, bool integer, std::vector<uint32_t> axes) {
  Entry entry;
  entry.name = name;
  entry.shape = shape;
  std::vector<uint32_t> identity(axes.size());
  std::iota(identity.begin(), identity.end(), 0u);
  if (axes != identity) entry.axes = std::move(axes);
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

Status ParameterStore::keep_on_card(DeviceTensor values, DeviceTensor gradients) {
  for (const DeviceTensor* tensor : {&values, &gradients})
    if (*tensor && tensor->count() < trainable_.size())
      return Status(StatusCode::kInvalidArgument,
                    "parameters on the card: a tensor of " + std::to_string(tensor->count()) +
                        " values for " + std::to_string(trainable_.size()) + " trainable values");
  card_values_ = std::move(values);
  card_gradients_ = std::move(gradients);
  return ok_status();
}

DeviceTensor ParameterStore::card_part(const DeviceTensor& region, std::size_t index,
                                       std::size_t count) const {
  const Entry& entry = entries_[index];
  if (!region || entry.region != Region::kTrainable) return DeviceTensor();
  // The region's tensors hold every trainable value (keep_on_card): a part
  // of them fits unless it runs past the last tensor.
  auto part = region.part(entry.offset, count ? count : entry.size);
  return part.ok() ? std::move(part).value() : DeviceTensor();
}

}  // namespace systole
