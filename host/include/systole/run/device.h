// SPDX-License-Identifier: Apache-2.0
// A run's device: the backend and compute units a config selects.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "systole/driver.h"
#include "systole/process_group.h"
#include "systole/run/config.h"
#include "systole/spec.h"
#include "systole/trainer.h"

namespace systole {

// A device and the compute units `devices` selects on it. The emulators
// and perf create as many units as selected; a board has its own and is
// asked for them.
struct OpenedDevice {
  Device device;
  std::vector<uint32_t> units;
};

Result<OpenedDevice> open_device(const RunConfig& config, spec::ArrayShape array, ProcessGroup* group);

// The compute units open_device would select, one replica each: counted
// for the emulators and perf, asked of a board (which is opened for it).
Result<std::vector<uint32_t>> selected_units(const RunConfig& config, ProcessGroup* group);

// The trainer on the opened device's units, starting from
// model.initial_weights when the config names a file.
Result<std::unique_ptr<Trainer>> make_trainer(const RunConfig& config, const OpenedDevice& opened,
                                              const TrainerConfig& settings, ProcessGroup* group);

}  // namespace systole
