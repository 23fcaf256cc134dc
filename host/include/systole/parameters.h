// SPDX-License-Identifier: Apache-2.0
// The one named parameter store of a model: every tensor a layer owns, by
// the name and shape of the equivalent torch.nn module's state_dict(), in
// fp32. Each tensor lives in one of three regions:
//   - trainable: dense weights, in one contiguous vector with their dense
//     gradients, which is what the dense optimizer and the all-reduce see;
//   - buffers: state that is not optimized (BatchNormalization's running
//     statistics);
//   - tables: embedding tables, trained through row-sparse gradients (the
//     rows a step touched) and a sparse optimizer, never reduced or updated
//     whole.
// Checkpoints and the replica-consistency check see all three, and nothing
// else knows a layer's layout. A layer may keep a tensor with torch's axes
// in another order, the one its products read (Conv2D's weight); what
// leaves the store by name (checkpoints, get_weights) is in torch's order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "systole/device_tensor.h"
#include "systole/status.h"

namespace systole {

enum class Region { kTrainable, kBuffer, kTable };

// A gradient that is zero outside a few rows of a [rows x width] table:
// `rows` ascending and distinct, `values` rows.size() x width.
struct RowSparse {
  std::vector<uint32_t> rows;
  std::vector<float> values;
};

class ParameterStore {
 public:
  struct Entry {
    std::string name;             // "3.weight", as in torch's state_dict()
    std::vector<uint64_t> shape;  // torch's shape ([] for a scalar)
    // The store's order of torch's axes, outermost first; empty when it is
    // torch's own. Conv2D's [filters, channels, kh, kw] weight is kept as
    // [filters][kh][kw][channels], {0, 2, 3, 1}.
    std::vector<uint32_t> axes;
    Region region = Region::kTrainable;
    bool integer = false;    // a count kept in fp32, saved as int64
    std::size_t offset = 0;  // into the region's vector
    std::size_t size = 0;

    // Optimized (dense or sparse), as opposed to a buffer.
    bool optimized() const { return region != Region::kBuffer; }
    // Copies `size` values laid out as the store keeps this tensor (its
    // values, gradient or an optimizer slot) into torch's order, and back.
    void to_torch(const float* stored, float* torch) const;
    void from_torch(const float* torch, float* stored) const;
  };

  // Adds a zero-filled tensor; returns its index, which layers keep. A
  // table's shape is [rows, width]; `axes` (a permutation of the shape's
  // axes) is the order the store keeps it in, torch's when empty.
  std::size_t declare(const std::string& name, const std::vector<uint64_t>& shape, Region region,
                      bool integer = false, std::vector<uint32_t> axes = {});

  const std::vector<Entry>& entries() const { return entries_; }
  // The entry called `name`, or null.
  const Entry* find(const std::string& name) const;

  float* values(std::size_t index);
  const float* values(std::size_t index) const;
  // The dense gradient of a trainable tensor.
  float* gradient(std::size_t index);
  // The row-sparse gradient of a table.
  RowSparse& sparse_gradient(std::size_t index) { return sparse_gradients_[index]; }
  const RowSparse& sparse_gradient(std::size_t index) const { return sparse_gradients_[index]; }

  std::vector<float>& region(Region region);
  const std::vector<float>& region(Region region) const;
  std::vector<float>& trainable() { return trainable_; }
  const std::vector<float>& trainable() const { return trainable_; }
  std::vector<float>& gradients() { return gradients_; }
  std::vector<float>& buffers() { return buffers_; }
  const std::vector<float>& buffers() const { return buffers_; }
  std::vector<float>& tables() { return tables_; }
  const std::vector<float>& tables() const { return tables_; }

  // The trainable region kept on a card (placement: device): its values
  // and gradients as tensors in a unit's memory, in the store's layout
  // (trainable().size() values each); the store's own vectors are then the
  // host's copies. Empty tensors: the region is on the host only. An
  // error names a tensor too short for the region.
  Status keep_on_card(DeviceTensor values, DeviceTensor gradients);
  // Tensor `index`'s values, and its gradient, as operations read and
  // write them: the host's copy and, for a trainable tensor while the
  // region is kept on a card, its part of the card's tensors (which an
  // executor that keeps tensors uses instead). With `count`: that many
  // values from the tensor's first on (tensors declared one after another
  // and read as one matrix).
  Operand operand(std::size_t index, std::size_t count = 0) const {
    return {values(index), card_part(card_values_, index, count)};
  }
  Destination gradient_destination(std::size_t index, std::size_t count = 0) {
    return {gradient(index), card_part(card_gradients_, index, count)};
  }

 private:
  // count 0: the tensor's size.
  DeviceTensor card_part(const DeviceTensor& region, std::size_t index, std::size_t count) const;

  std::vector<Entry> entries_;
  std::vector<float> trainable_, gradients_, buffers_, tables_;
  std::vector<RowSparse> sparse_gradients_;  // by entry; empty but for tables
  DeviceTensor card_values_, card_gradients_;
};

}  // namespace systole
