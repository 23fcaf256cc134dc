// The one named parameter store of a model: every tensor a layer owns, by
// the name and shape of the equivalent torch.nn module's state_dict(), in
// fp32. Trainable tensors (weights) live in one contiguous vector with their
// gradients, which is what the optimizer and the all-reduce see; buffers
// (BatchNormalization's running statistics) live in another. Checkpoints and
// the replica-consistency check see both, and nothing else knows a layer's
// layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace systole {

class ParameterStore {
 public:
  struct Entry {
    std::string name;             // "3.weight", as in torch's state_dict()
    std::vector<uint64_t> shape;  // torch's shape ([] for a scalar)
    bool trainable = true;        // else a buffer (not optimized, not reduced)
    bool integer = false;         // a count kept in fp32, saved as int64
    std::size_t offset = 0;       // into trainable() or buffers()
    std::size_t size = 0;
  };

  // Adds a zero-filled tensor; returns its index, which layers keep.
  std::size_t declare(const std::string& name, const std::vector<uint64_t>& shape, bool trainable,
                      bool integer = false);

  const std::vector<Entry>& entries() const { return entries_; }
  // The entry called `name`, or null.
  const Entry* find(const std::string& name) const;

  float* values(std::size_t index);
  const float* values(std::size_t index) const;
  // The gradient of a trainable tensor.
  float* gradient(std::size_t index);

  std::vector<float>& trainable() { return trainable_; }
  const std::vector<float>& trainable() const { return trainable_; }
  std::vector<float>& gradients() { return gradients_; }
  std::vector<float>& buffers() { return buffers_; }
  const std::vector<float>& buffers() const { return buffers_; }

 private:
  std::vector<Entry> entries_;
  std::vector<float> trainable_, gradients_, buffers_;
};

}  // namespace systole
