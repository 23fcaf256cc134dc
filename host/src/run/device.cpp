// SPDX-License-Identifier: Apache-2.0
#include "systole/run/device.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "systole/training_checkpoint.h"

namespace systole {

namespace {

// The backend the config names, as the build has it.
BackendCapabilities backend_of(const RunConfig& config) {
  BackendCapabilities backend;
  for (const BackendCapabilities& built : Device::backends())
    if (built.name == config.backend) backend = built;
  return backend;
}

// The cores this process may use: the processes of a job on one host
// share its cores.
uint32_t process_cores(ProcessGroup* group) {
  return std::max(1u, std::thread::hardware_concurrency() / (group ? group->processes_on_this_host() : 1u));
}

}  // namespace

Result<std::vector<uint32_t>> selected_units(const RunConfig& config, ProcessGroup* group) {
  const BackendCapabilities backend = backend_of(config);
  if (backend.units_on_demand)
    return select_units(config.devices, true, backend.uses_host_cores ? process_cores(group) : 1);
  auto array = parse_array_shape(config.array);
  if (!array.ok()) return Status(array.status().code(), "array: " + array.status().message());
  auto opened = open_device(config, *array, group);
  if (!opened.ok()) return opened.status();
  return opened->units;
}

Result<OpenedDevice> open_device(const RunConfig& config, spec::ArrayShape array, ProcessGroup* group) {
  DeviceOptions options;
  options.array_rows = array.rows;
  options.array_cols = array.cols;
  options.engine = config.engine == "hls" ? EmuEngine::kHls : EmuEngine::kFast;
  options.xclbin = config.xclbin;
  options.perf = {config.board, config.clock_mhz, config.pcie_gen, config.pcie_lanes};
  uint32_t index = 0;
  SYSTOLE_RETURN_IF_ERROR(parse_device(config.device, &index, &options));
  // The emulators make as many units as are selected (auto: one per core);
  // the card model models as many as are selected on its board (auto: one).
  const BackendCapabilities backend = backend_of(config);
  const bool elastic = backend.units_on_demand;
  OpenedDevice opened;
  uint32_t available = 0;
  if (!elastic) {
    auto device = Device::open(config.backend, index, options);
    if (!device.ok()) return device.status();
    opened.device = *device;
    available = device->info().compute_units;
  }
  // sw_emu's auto count and its threads per unit take this process's
  // share of the host's cores.
  const uint32_t cores = process_cores(group);
  if (elastic) available = backend.uses_host_cores ? cores : 1;
  auto units = select_units(config.devices, elastic, available);
  if (!units.ok()) return units.status();
  opened.units = *units;
  if (elastic) {
    options.compute_units = *std::max_element(units->begin(), units->end()) + 1;
    options.threads_per_unit = std::max<uint32_t>(1, cores / uint32_t(units->size()));
    auto device = Device::open(config.backend, index, options);
    if (!device.ok()) return device.status();
    opened.device = *device;
  }
  return opened;
}

Result<std::unique_ptr<Trainer>> make_trainer(const RunConfig& config, const OpenedDevice& opened,
                                              const TrainerConfig& settings, ProcessGroup* group) {
  auto trainer = Trainer::create(opened.device, opened.units, settings, group);
  if (!trainer.ok() || config.initial_weights.empty()) return trainer;
  const Status loaded = load_weights(config.initial_weights, **trainer);
  if (!loaded.ok()) return Status(loaded.code(), "model.initial_weights: " + loaded.message());
  return trainer;
}

}  // namespace systole
