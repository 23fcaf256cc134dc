// SPDX-License-Identifier: Apache-2.0
// The card model: SystemC modules bound by TLM-2.0 sockets.
//
//   Host --(host link)--> HostLink          (PCIe, both directions booked apart)
//   ComputeUnit[0..N) ---> Hbm              (one multi-socket, pseudo-channels)
//
// Times travel in the transactions' delay annotations as absolute times
// (SystemC's clock stays at zero; see card.h).
#include "card.h"

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <systemc>
#include <tlm>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

// SystemC's library calls sc_main from a main() of its own, which programs
// that use the model as a library replace; the reference must still resolve.
int sc_main(int, char**) { return 1; }

namespace systole::card {
namespace {

using sc_core::sc_time;

// One SystemC kernel per process, and each Card is its own simulation
// context within it: every call into any card holds this.
std::mutex& simulation_mutex() {
  static std::mutex mutex;
  return mutex;
}

Picoseconds to_ps(const sc_time& t) { return Picoseconds(t.to_seconds() * 1e12 + 0.5); }
sc_time from_ps(Picoseconds ps) { return sc_time(double(ps), sc_core::SC_PS); }

// Bandwidth booked per time bin: a request takes what its bins have left,
// so requests that overlap in simulated time share the bandwidth, the one
// booked first ahead. Bins far behind the latest request are dropped.
class Calendar {
 public:
  Calendar(double bytes_per_ps, Picoseconds bin_ps)
      : bin_ps_(bin_ps), capacity_(bytes_per_ps * double(bin_ps)), bytes_per_ps_(bytes_per_ps) {}

  // Books `bytes` from `at`: the time the last byte is through.
  Picoseconds book(Picoseconds at, uint64_t bytes) {
    uint64_t bin = at / bin_ps_;
    latest_bin_ = std::max(latest_bin_, bin);
    prune();
    double left = double(bytes);
    // Of the first bin, only the part from `at` on (what it already holds
    // counts from the bin's start).
    double usable = capacity_ * double((bin + 1) * bin_ps_ - at) / double(bin_ps_);
    for (;; ++bin, usable = capacity_) {
      double& used = used_[bin];
      const double take = std::min(left, std::max(0.0, std::min(usable, capacity_ - used)));
      used += take;
      left -= take;
      if (left <= 0.0) {
        const Picoseconds end = bin * bin_ps_ + Picoseconds(used / capacity_ * double(bin_ps_));
        return std::max(end, at + Picoseconds(double(bytes) / bytes_per_ps_));
      }
    }
  }

 private:
  void prune() {
    constexpr uint64_t kKeep = 1 << 20;  // bins behind the latest request
    if (used_.size() < 2 * kKeep || latest_bin_ < kKeep) return;
    for (auto it = used_.begin(); it != used_.end();)
      it = it->first + kKeep < latest_bin_ ? used_.erase(it) : std::next(it);
  }

  Picoseconds bin_ps_;
  double capacity_;  // bytes per bin
  double bytes_per_ps_;
  uint64_t latest_bin_ = 0;
  std::unordered_map<uint64_t, double> used_;
};

double pcie_lane_gb_per_s(uint32_t gen) {
  // Per lane, after line coding: 8b/10b for generations 1 and 2,
  // 128b/130b from 3 on.
  switch (gen) {
    case 1:
      return 2.5 * 0.8 / 8;
    case 2:
      return 5.0 * 0.8 / 8;
    case 3:
      return 8.0 * 128 / 130 / 8;
    case 4:
      return 16.0 * 128 / 130 / 8;
    case 5:
      return 32.0 * 128 / 130 / 8;
    default:
      return 0;
  }
}
// Of the coded bandwidth, what a DMA engine moves as payload (TLP headers,
// completions, descriptor fetches). Assumed, not measured here.
constexpr double kPcieEfficiency = 0.8;
constexpr Picoseconds kPcieLatencyPs = 1'000'000;  // per transfer (1 us, assumed)
constexpr Picoseconds kBinPs = 256'000;            // calendar bins (256 ns)

// ---------------------------------------------------------------- modules

struct Hbm : sc_core::sc_module {
  tlm_utils::multi_passthrough_target_socket<Hbm> socket;

  Hbm(sc_core::sc_module_name name, const CardConfig& config, double period_ps)
      : sc_module(name), socket("socket"), config_(config), period_ps_(period_ps) {
    socket.register_b_transport(this, &Hbm::b_transport);
    const Board& board = config.board;
    for (uint32_t c = 0; c < board.hbm_channels; ++c)
      channels_.emplace_back(board.channel_gb_per_s * 1e9 / 1e12, kBinPs);
    latency_ps_ = board.hbm_channels == 0 ? Picoseconds(board.latency_cycles * period_ps_ + 0.5)
                                          : Picoseconds(board.latency_ns * 1000);
  }

  // A read: the delay comes back as the time the first beat may be on the
  // bus; a write (its last beat sent): the time of its response.
  void b_transport(int, tlm::tlm_generic_payload& payload, sc_time& delay) {
    const Picoseconds at = to_ps(delay) + Picoseconds(period_ps_ + 0.5);  // the cycle after the handshake
    const uint64_t bytes = payload.get_data_length();
    Picoseconds ready = at + latency_ps_;
    if (!channels_.empty()) {
      Calendar& channel = channels_[(payload.get_address() / config_.bank_bytes) % channels_.size()];
      // The channel has moved the last byte `latency` after its booking ends.
      const Picoseconds done = channel.book(at, bytes) + latency_ps_;
      // A read's first beat comes early enough for the rest to follow at
      // the port's one beat per cycle; a write answers once all is done.
      const Picoseconds streamed = Picoseconds(double(bytes / spec::kBeatBytes - 1) * period_ps_);
      ready = std::max(ready, payload.is_write() ? done : done - std::min(streamed, done));
    }
    delay = from_ps(ready);
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
  }

  Picoseconds latency_ps() const { return latency_ps_; }

 private:
  const CardConfig& config_;
  double period_ps_;
  Picoseconds latency_ps_ = 0;
  std::vector<Calendar> channels_;
};

struct ComputeUnit : sc_core::sc_module, timing::BurstMemory {
  tlm_utils::simple_initiator_socket<ComputeUnit> socket;

  ComputeUnit(sc_core::sc_module_name name, double period_ps, Picoseconds idle_latency_ps)
      : sc_module(name), socket("socket"), period_ps_(period_ps), idle_latency_ps_(idle_latency_ps) {}

  LaunchReport run(Picoseconds at, spec::ArrayShape shape, const uint8_t* memory, uint64_t bytes,
                   const timing::LaunchArguments& arguments) {
    begin_ = at;
    waits_ = 0;
    LaunchReport report;
    report.timing = timing::simulate_launch(shape, memory, bytes, arguments, *this);
    report.begin = at;
    report.end = at + Picoseconds(double(report.timing.counters.busy_cycles) * period_ps_ + 0.5);
    report.hbm_wait_cycles = waits_;
    return report;
  }

  uint64_t read_burst(uint64_t cycle, uint64_t address, uint32_t beats) override {
    return transport(tlm::TLM_READ_COMMAND, cycle, address, beats);
  }
  uint64_t write_burst(uint64_t cycle, uint64_t address, uint32_t beats) override {
    return transport(tlm::TLM_WRITE_COMMAND, cycle, address, beats);
  }

 private:
  uint64_t transport(tlm::tlm_command command, uint64_t cycle, uint64_t address, uint32_t beats) {
    tlm::tlm_generic_payload payload;
    payload.set_command(command);
    payload.set_address(address);
    payload.set_data_ptr(scratch_);  // the model moves no data
    payload.set_data_length(beats * spec::kBeatBytes);
    payload.set_streaming_width(beats * spec::kBeatBytes);
    payload.set_byte_enable_ptr(nullptr);
    payload.set_dmi_allowed(false);
    payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    const Picoseconds issued = begin_ + Picoseconds(double(cycle) * period_ps_ + 0.5);
    sc_time delay = from_ps(issued);
    socket->b_transport(payload, delay);
    const uint64_t ready = uint64_t(std::llround(double(to_ps(delay) - begin_) / period_ps_));
    const uint64_t idle = cycle + 1 + uint64_t(std::llround(double(idle_latency_ps_) / period_ps_));
    if (ready > idle) waits_ += ready - idle;
    return std::max(ready, cycle + 1);
  }

  double period_ps_;
  Picoseconds idle_latency_ps_;
  Picoseconds begin_ = 0;
  uint64_t waits_ = 0;
  uint8_t scratch_[4096] = {};  // a burst is at most 4 KiB
};

struct HostLink : sc_core::sc_module {
  tlm_utils::simple_target_socket<HostLink> socket;

  HostLink(sc_core::sc_module_name name, double bytes_per_ps)
      : sc_module(name), socket("socket"), to_card_(bytes_per_ps, kBinPs), from_card_(bytes_per_ps, kBinPs) {
    socket.register_b_transport(this, &HostLink::b_transport);
  }

  // The delay comes back as the time the transfer has ended.
  void b_transport(tlm::tlm_generic_payload& payload, sc_time& delay) {
    Calendar& direction = payload.is_write() ? to_card_ : from_card_;
    delay = from_ps(direction.book(to_ps(delay) + kPcieLatencyPs, payload.get_data_length()));
    payload.set_response_status(tlm::TLM_OK_RESPONSE);
  }

 private:
  Calendar to_card_, from_card_;  // full duplex
};

struct Host : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<Host> socket;
  explicit Host(sc_core::sc_module_name name) : sc_module(name), socket("socket") {}
};

}  // namespace

// ---------------------------------------------------------------- the card

struct Card::Model {
  CardConfig config;
  double period_ps = 0;
  double link_bytes_per_ps = 0;
  std::unique_ptr<sc_core::sc_simcontext> context;
  std::unique_ptr<Host> host;
  std::unique_ptr<HostLink> link;
  std::unique_ptr<Hbm> hbm;
  std::vector<std::unique_ptr<ComputeUnit>> units;

  // Makes this card's simulation the current one.
  void enter() {
    sc_core::sc_curr_simcontext = context.get();
    sc_core::sc_default_global_context = context.get();
  }
  ~Model() {
    enter();
    units.clear();
    hbm.reset();
    link.reset();
    host.reset();
    context.reset();
    sc_core::sc_curr_simcontext = nullptr;
    sc_core::sc_default_global_context = nullptr;
  }
};

const Board* find_board(const std::string& name) { return spec::find_board(name); }

std::string board_names() {
  std::string names;
  for (const Board& board : spec::kBoards) names += (names.empty() ? "" : ", ") + std::string(board.name);
  return names;
}

std::string check_config(const CardConfig& config) {
  const Board& board = config.board;
  const uint32_t gen = config.pcie_gen ? config.pcie_gen : board.pcie_gen;
  const uint32_t lanes = config.pcie_lanes ? config.pcie_lanes : board.pcie_lanes;
  if (pcie_lane_gb_per_s(gen) == 0) return "pcie_gen must be 1 to 5, got " + std::to_string(gen);
  if (lanes != 1 && lanes != 2 && lanes != 4 && lanes != 8 && lanes != 16)
    return "pcie_lanes must be 1, 2, 4, 8 or 16, got " + std::to_string(lanes);
  const double clock = config.clock_mhz > 0 ? config.clock_mhz : board.clock_mhz;
  if (!(config.clock_mhz >= 0) || clock < 1 || clock > 1000)
    return "clock_mhz must lie in [1, 1000] MHz, got " + std::to_string(config.clock_mhz);
  // Makefile.fpga's connectivity puts every port of unit u on HBM[4u:4u+3]:
  // a unit's spec::kMemoryPorts masters share its four HBM ports through
  // the interconnect Vitis inserts (the HBM model books each
  // pseudo-channel's bandwidth, so they contend there).
  constexpr uint32_t kHbmPortsPerUnit = spec::kBanksPerComputeUnit;
  if (config.compute_units == 0 || config.compute_units * kHbmPortsPerUnit > board.hbm_banks)
    return std::string(board.name) + " has " + std::to_string(board.hbm_banks) +
           " memory ports, enough for " + std::to_string(board.hbm_banks / kHbmPortsPerUnit) +
           " compute units of 4 ports each; " + std::to_string(config.compute_units) + " were asked for";
  if (config.bank_bytes == 0) return "bank_bytes must be > 0";
  return "";
}

Card::Card(const CardConfig& config) : model_(std::make_unique<Model>()) {
  std::lock_guard<std::mutex> lock(simulation_mutex());
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  Model* model = model_.get();
  model->config = config;
  CardConfig& c = model->config;
  if (c.clock_mhz == 0) c.clock_mhz = c.board.clock_mhz;
  if (c.pcie_gen == 0) c.pcie_gen = c.board.pcie_gen;
  if (c.pcie_lanes == 0) c.pcie_lanes = c.board.pcie_lanes;
  model->period_ps = 1e6 / c.clock_mhz;
  model->link_bytes_per_ps = pcie_lane_gb_per_s(c.pcie_gen) * c.pcie_lanes * kPcieEfficiency * 1e9 / 1e12;
  model->context = std::make_unique<sc_core::sc_simcontext>();
  model->enter();
  model->host = std::make_unique<Host>("host");
  model->link = std::make_unique<HostLink>("host_link", model->link_bytes_per_ps);
  model->hbm = std::make_unique<Hbm>("hbm", model->config, model->period_ps);
  model->host->socket.bind(model->link->socket);
  for (uint32_t u = 0; u < c.compute_units; ++u) {
    model->units.push_back(std::make_unique<ComputeUnit>(("cu_" + std::to_string(u)).c_str(),
                                                         model->period_ps, model->hbm->latency_ps()));
    model->units.back()->socket.bind(model->hbm->socket);
  }
  // Elaboration (binding checks). No process runs: the initiators are
  // called by the driver and carry their own time.
  sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
}

Card::~Card() {
  std::lock_guard<std::mutex> lock(simulation_mutex());
  model_.reset();
}

const CardConfig& Card::config() const { return model_->config; }
double Card::clock_hz() const { return model_->config.clock_mhz * 1e6; }
double Card::link_gb_per_s() const { return model_->link_bytes_per_ps * 1e3; }

TransferReport Card::transfer(Picoseconds at, uint64_t bytes, bool to_card) {
  std::lock_guard<std::mutex> lock(simulation_mutex());
  model_->enter();
  tlm::tlm_generic_payload payload;
  payload.set_command(to_card ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
  payload.set_address(0);
  payload.set_data_ptr(nullptr);  // the model moves no data
  payload.set_data_length(bytes);
  payload.set_streaming_width(bytes);
  payload.set_byte_enable_ptr(nullptr);
  payload.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_time delay = from_ps(at);
  model_->host->socket->b_transport(payload, delay);
  return {at, to_ps(delay)};
}

LaunchReport Card::launch(uint32_t unit, Picoseconds at, const uint8_t* list, uint64_t list_bytes,
                          const timing::LaunchArguments& arguments) {
  std::lock_guard<std::mutex> lock(simulation_mutex());
  model_->enter();
  return model_->units.at(unit)->run(at, model_->config.shape, list, list_bytes, arguments);
}

}  // namespace systole::card
