// SPDX-License-Identifier: Apache-2.0
// The SYSTOLE PluggableDevice's device (systole_plugin.cpp opens it, the
// kernels in kernels.cpp compute on it): one Systole device whose compute
// units are TensorFlow's devices, with its settings from the environment,
// the units' memory named by each buffer's host view, and each unit's
// products.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "systole/boards.h"
#include "systole/device_tensor.h"
#include "systole/driver.h"
#include "systole/matmul.h"

namespace systole_tf {

using systole::Buffer;
using systole::Result;
using systole::Status;
using systole::StatusCode;

constexpr char kDeviceType[] = "SYSTOLE";
constexpr std::chrono::milliseconds kLaunchTimeout{600000};

// The environment's settings; an error names the variable and quotes it.
struct Settings {
  std::string backend = "sw_emu";
  uint32_t units = 2;
  systole::spec::ArrayShape array = systole::spec::kDefaultShape;

  static Result<Settings> from_environment() {
    Settings settings;
    if (const char* backend = std::getenv("SYSTOLE_TF_BACKEND"); backend && *backend)
      settings.backend = backend;
    if (const char* units = std::getenv("SYSTOLE_TF_UNITS"); units && *units) {
      char* end = nullptr;
      const unsigned long value = std::strtoul(units, &end, 10);
      if (*end || value < 1 || value > 64 || units[0] == '-')
        return Status(StatusCode::kInvalidArgument,
                      std::string("SYSTOLE_TF_UNITS: expected a count of compute units (1 to 64), got '") +
                          units + "'");
      settings.units = uint32_t(value);
    }
    if (const char* array = std::getenv("SYSTOLE_TF_ARRAY"); array && *array) {
      auto shape = systole::parse_array_shape(array);
      if (!shape.ok())
        return Status(StatusCode::kInvalidArgument, "SYSTOLE_TF_ARRAY: " + shape.status().message());
      settings.array = *shape;
    }
    return settings;
  }
};

// The plugin's Systole device: its units' memory, by host view, and each
// unit's products.
class Card {
 public:
  static Result<std::unique_ptr<Card>> open(const Settings& settings) {
    systole::DeviceOptions options;
    options.array_rows = settings.array.rows;
    options.array_cols = settings.array.cols;
    options.compute_units = settings.units;
    auto device = systole::Device::open(settings.backend, 0, options);
    if (!device.ok())
      return Status(device.status().code(),
                    "SYSTOLE_TF_BACKEND '" + settings.backend + "': " + device.status().message());
    auto probe = device->allocate(1, 0);
    if (!probe.ok()) return probe.status();
    if (!probe->mapped())
      return Status(
          StatusCode::kInvalidArgument,
          "SYSTOLE_TF_BACKEND '" + settings.backend +
              "': TensorFlow's kernels read a device's memory as the host's, and this backend's is not "
              "(sw_emu and hw_emu serve TensorFlow)");
    std::unique_ptr<Card> card(new Card(std::move(device).value()));
    for (uint32_t unit = 0; unit < settings.units; ++unit) {
      auto matmul = systole::DeviceMatmul::create(card->device_, unit, kLaunchTimeout);
      if (!matmul.ok()) return matmul.status();
      card->units_.push_back(std::make_unique<Unit>());
      card->units_.back()->matmul = std::move(matmul).value();
    }
    return card;
  }

  uint32_t units() const { return uint32_t(units_.size()); }
  const systole::DeviceInfo& info() const { return device_.info(); }

  // `bytes` of unit memory (at least one byte, so that every tensor has a
  // handle of its own).
  Result<void*> allocate(uint32_t unit, uint64_t bytes) {
    const uint32_t bank =
        systole::spec::operand_bank(unit, systole::spec::Operand::kC, device_.info().hbm_banks);
    auto buffer = device_.allocate(std::max<uint64_t>(bytes, 1), bank);
    if (!buffer.ok()) return buffer.status();
    const uint64_t handle = reinterpret_cast<uint64_t>(buffer->map());
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_[handle] = std::move(buffer).value();
    return reinterpret_cast<void*>(handle);
  }
  void release(const void* handle) {
    std::lock_guard<std::mutex> lock(mutex_);
    buffers_.erase(reinterpret_cast<uint64_t>(handle));
  }

  // The buffer holding [at, at + bytes), and the offset there.
  struct Span {
    Buffer buffer;
    std::size_t offset = 0;
  };
  Result<Span> find(const void* handle, uint64_t bytes) const {
    const uint64_t at = reinterpret_cast<uint64_t>(handle);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buffers_.upper_bound(at);
    if (it != buffers_.begin()) {
      --it;
      const uint64_t offset = at - it->first;
      if (offset + bytes <= it->second.size()) return Span{it->second, std::size_t(offset)};
    }
    return Status(StatusCode::kInvalidArgument,
                  "no tensor of the device holds " + std::to_string(bytes) + " bytes at 0x" + hex(at));
  }

  // (An empty tensor's memory may be TensorFlow's own: nothing is copied.)
  Status copy_in(void* handle, const void* host, uint64_t bytes) {
    if (bytes == 0) return systole::ok_status();
    auto span = find(handle, bytes);
    if (!span.ok()) return span.status();
    return span->buffer.write(host, bytes, span->offset);
  }
  Status copy_out(void* host, const void* handle, uint64_t bytes) const {
    if (bytes == 0) return systole::ok_status();
    auto span = find(handle, bytes);
    if (!span.ok()) return span.status();
    return span->buffer.read(host, bytes, span->offset);
  }
  // `count` fp32 values of the device's memory from `handle` on, as a
  // tensor the units' products read and write in place.
  Result<systole::DeviceTensor> tensor(const void* handle, std::size_t count) const {
    auto span = find(handle, std::max<std::size_t>(count, 1) * sizeof(float));
    if (!span.ok()) return span.status();
    return systole::DeviceTensor::over(span->buffer, span->offset, count);
  }

  // C = op(A) op(B) on `unit`'s array, from and into tensors in the
  // units' memory (the call's card tensors): operands rounded to bf16 there, fp32
  // accumulation (the numerics contract); nothing crosses to the host.
  Status matmul(uint32_t unit, const systole::MatmulCall& call) {
    if (unit >= units_.size())
      return Status(StatusCode::kInvalidArgument, "no compute unit " + std::to_string(unit));
    if (call.m == 0 || call.n == 0) return systole::ok_status();
    if (call.k == 0) {
      const std::vector<float> zeros(std::size_t(call.m) * call.n, 0.0f);
      return systole::DeviceTensor(call.c.card).write(zeros.data());
    }
    Unit& u = *units_[unit];
    std::lock_guard<std::mutex> lock(u.mutex);
    return u.matmul->run(call);
  }
  // The sums of the rows of x.card (rows x width) into out.card, on
  // `unit`'s vector engine in the array's K order (SumCall).
  Status sum(uint32_t unit, const systole::SumCall& call) {
    if (unit >= units_.size())
      return Status(StatusCode::kInvalidArgument, "no compute unit " + std::to_string(unit));
    Unit& u = *units_[unit];
    std::lock_guard<std::mutex> lock(u.mutex);
    return u.matmul->sum(call);
  }

 private:
  struct Unit {
    std::mutex mutex;
    std::unique_ptr<systole::DeviceMatmul> matmul;
  };
  explicit Card(systole::Device device) : device_(std::move(device)) {}
  static std::string hex(uint64_t value) {
    char text[20];
    std::snprintf(text, sizeof text, "%llx", (unsigned long long)value);
    return text;
  }

  systole::Device device_;
  mutable std::mutex mutex_;
  std::map<uint64_t, Buffer> buffers_;  // by host view
  std::vector<std::unique_ptr<Unit>> units_;
};

extern Card* card;  // made by SE_InitPlugin, for the process's life

}  // namespace systole_tf
