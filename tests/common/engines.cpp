// SPDX-License-Identifier: Apache-2.0
// Runs workloads through the kernel's models.
#include "common/engines.h"

#include <algorithm>
#include <cstdio>

#include "fast_gemm.h"
#include "reference/reference.h"
#include "systole/gemm_plan.h"

namespace systole::testing {
namespace {

constexpr auto kTimeout = std::chrono::minutes(5);

DeviceOptions emu_options(spec::ArrayShape shape, EmuEngine engine, uint32_t threads) {
  DeviceOptions options;
  options.array_rows = shape.rows;
  options.array_cols = shape.cols;
  options.engine = engine;
  options.threads_per_unit = threads;
  options.sw_emu_features = shape.features;  // what the test's kernel has
  options.hbm_banks = 2;
  options.bank_bytes = 64ull << 20;
  return options;
}

// Places `memory` at the start of bank 0 (device address 0), runs `list`
// from bank 1, and reads the image back.
Outcome run_at_zero(const std::vector<uint8_t>& memory, const std::vector<uint8_t>& list,
                    spec::ArrayShape shape, EmuEngine engine, uint32_t threads) {
  Result<Device> device = Device::open("sw_emu", 0, emu_options(shape, engine, threads));
  if (!device.ok()) {
    Outcome outcome;
    outcome.status = device.status();
    return outcome;
  }
  return run_on_device(*device, memory, list);
}

}  // namespace

Outcome run_on_device(Device& device, const std::vector<uint8_t>& memory, const std::vector<uint8_t>& list) {
  Outcome outcome;
  Result<Buffer> data = device.allocate(memory.size(), 0);
  Result<Buffer> commands = device.allocate(list.size(), device.info().hbm_banks > 1 ? 1 : 0);
  if (!data.ok() || !commands.ok() || data->address() != 0) {
    outcome.status = Status(StatusCode::kInternal, "test buffers not placed as expected");
    return outcome;
  }
  auto check = [&](Status status) {
    if (!status.ok() && outcome.status.ok()) outcome.status = status;
  };
  check(data->write(memory.data(), memory.size()));
  check(data->sync(Buffer::SyncDirection::kToDevice));
  check(commands->write(list.data(), list.size()));
  check(commands->sync(Buffer::SyncDirection::kToDevice));
  if (!outcome.status.ok()) return outcome;
  Result<Run> run = device.start(0, *commands);
  if (!run.ok()) {
    outcome.status = run.status();
    return outcome;
  }
  outcome.status = run->wait(kTimeout);
  outcome.error = run->error_code();
  outcome.error_index = run->error_index();
  outcome.counters = run->counters();
  outcome.memory.resize(memory.size());
  check(data->sync(Buffer::SyncDirection::kFromDevice));
  check(data->read(outcome.memory.data(), memory.size()));
  return outcome;
}

Outcome run_sw_emu(const Workload& workload, spec::ArrayShape shape, EmuEngine engine, uint32_t threads) {
  const auto lists = encode_command_lists(workload.rebased(0), shape.max_descriptors());
  return run_at_zero(workload.memory, lists.at(0), shape, engine, threads);
}

Outcome run_sw_emu_list(const std::vector<uint8_t>& memory, const std::vector<uint8_t>& list,
                        spec::ArrayShape shape, EmuEngine engine) {
  return run_at_zero(memory, list, shape, engine, 1);
}

Outcome run_reference(const Workload& workload, uint32_t rows) {
  Outcome outcome;
  outcome.memory = workload.memory;
  for (const spec::GemmDescriptor& d : workload.descriptors) reference::gemm(d, rows, outcome.memory);
  return outcome;
}

Outcome run_fast(const Workload& workload, uint32_t rows, sw_emu::FastGemmIsa isa,
                 sw_emu::FastGemmOrder order, uint32_t threads) {
  // The image with the slack the engine may read past an operand.
  std::vector<uint8_t> memory(workload.memory.size() + sw_emu::kFastGemmReadSlack);
  std::copy(workload.memory.begin(), workload.memory.end(), memory.begin());
  uint8_t* const base = memory.data();
  for (const spec::GemmDescriptor& d : workload.descriptors) {
    const sw_emu::FastGemmArgs args = sw_emu::fast_gemm_args(d, base + d.a_addr, base + d.b_addr,
                                                             base + d.c_addr, base + d.bias_addr, rows);
    sw_emu::fast_gemm(args, threads, isa, order);
  }
  Outcome outcome;
  outcome.memory.assign(memory.begin(), memory.end() - sw_emu::kFastGemmReadSlack);
  return outcome;
}

std::string first_difference(const std::vector<uint8_t>& expected, const std::vector<uint8_t>& actual) {
  if (expected.size() != actual.size())
    return "image sizes differ: " + std::to_string(expected.size()) + " vs " + std::to_string(actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != actual[i]) {
      // Show the aligned 4-byte word around the first differing byte.
      const std::size_t word = i / 4 * 4;
      char text[160];
      uint32_t e = 0, a = 0;
      for (std::size_t j = 0; j < 4 && word + j < expected.size(); ++j) {
        e |= uint32_t(expected[word + j]) << (8 * j);
        a |= uint32_t(actual[word + j]) << (8 * j);
      }
      std::snprintf(text, sizeof text, "first difference at byte %zu: word at %zu is 0x%08x, expected 0x%08x",
                    i, word, a, e);
      return text;
    }
  }
  return "";
}

}  // namespace systole::testing
