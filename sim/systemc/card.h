// SPDX-License-Identifier: Apache-2.0
// A SystemC TLM-2.0 model of a whole card, for projecting how fast work
// would run on a board that is not here: the host link (PCIe, DMA of
// buffers to and from the card), N compute units executing command lists,
// and HBM pseudo-channels with bandwidth, latency and contention between
// the units. A compute unit's own timing is kernel_timing.h's cycle model
// of the RTL controller, whose every read and write burst goes to the HBM
// model as a TLM transaction.
//
// The model is loosely timed with temporal decoupling: every initiator (a
// host thread's transfers, a compute unit's launch) carries its own time,
// and the targets book bandwidth on a calendar by that time, so work that
// overlaps in simulated time contends. Where it overlaps, the request
// booked first is served first: a caller with several initiators asks in
// simulated-time order for results that do not depend on the order its
// threads ran in (the perf backend replays its threads' requests so).
// SystemC's own clock is not advanced.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernel_timing.h"
#include "systole/boards.h"
#include "systole/spec.h"

namespace systole::card {

// Boards the model knows: hw/spec's table (systole/boards.h).
using Board = spec::Board;

// The board named `name`, or null.
const Board* find_board(const std::string& name);
// "u55c, u280, ...", for messages.
std::string board_names();

struct CardConfig {
  Board board;
  spec::ArrayShape shape{16, 16};
  uint32_t compute_units = 1;
  double clock_mhz = 0;                   // 0: the board's
  uint32_t pcie_gen = 0, pcie_lanes = 0;  // 0: the board's
  uint64_t bank_bytes = 512ull << 20;     // device address / bank_bytes = pseudo-channel
};

// Checks a configuration: "" if it is fine, else what is wrong, naming the
// parameter and its bounds.
std::string check_config(const CardConfig& config);

// Simulated time in picoseconds.
using Picoseconds = uint64_t;

struct LaunchReport {
  timing::LaunchTiming timing;
  Picoseconds begin = 0, end = 0;
  uint64_t hbm_wait_cycles = 0;  // beyond the idle latency, summed over bursts
};

struct TransferReport {
  Picoseconds begin = 0, end = 0;
};

class Card {
 public:
  // The model of a configuration that check_config accepts. Each card is
  // its own SystemC simulation; calls are serialised across all cards.
  explicit Card(const CardConfig& config);
  ~Card();

  const CardConfig& config() const;
  double clock_hz() const;
  double link_gb_per_s() const;  // the host link's payload bandwidth

  // `bytes` over the host link, to the card or from it, asked for at
  // `at`: when it starts and ends (it waits behind transfers booked for
  // the same time). The model only times it: the driver moves the data.
  TransferReport transfer(Picoseconds at, uint64_t bytes, bool to_card);

  // A launch on `unit` at `at` of the command list `list` (as
  // timing::simulate_launch takes it).
  LaunchReport launch(uint32_t unit, Picoseconds at, const uint8_t* list, uint64_t list_bytes,
                      const timing::LaunchArguments& arguments);

 private:
  struct Model;
  std::unique_ptr<Model> model_;
};

}  // namespace systole::card
