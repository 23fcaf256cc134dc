// SPDX-License-Identifier: Apache-2.0
// The controller of hw/rtl/systole_kernel.sv, cycle by cycle, without data.
// Each step() first reads every signal from the state before the clock edge
// (as the RTL's combinational logic does), then moves every register, so
// the names and conditions below are the RTL's.
#include "kernel_timing.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <deque>

#include "systole/validate.h"
#include "systole/vector_ops.h"

namespace systole::timing {
namespace {

constexpr uint32_t kMaxOutstanding = 8;  // bursts in flight, requests queued
constexpr uint32_t kBeatBytes = spec::kBeatBytes;
constexpr uint32_t kPageBeats = 4096 / kBeatBytes;
constexpr uint32_t kMaxBeats = std::min<uint32_t>(spec::kMaxBurstBeats, kPageBeats);

uint64_t first_beat(uint64_t address) { return address / kBeatBytes; }
// The beats that cover [address, address + bytes), bytes >= 1.
uint32_t covering_beats(uint64_t address, uint32_t bytes) {
  return uint32_t((address + bytes - 1) / kBeatBytes - first_beat(address)) + 1;
}

// systole_dma_bursts: the address side of a request.
struct Bursts {
  uint64_t next_beat = 0;
  uint32_t beats_to_ask = 0;
  uint32_t outstanding = 0;

  bool asked_all() const { return beats_to_ask == 0; }
  bool valid() const { return !asked_all() && outstanding != kMaxOutstanding; }
  uint32_t burst_beats() const {
    const uint32_t room = kPageBeats - uint32_t(next_beat % kPageBeats);
    return std::min({beats_to_ask, room, kMaxBeats});
  }
  // The edge; `fire` is valid() (the memory is always ready for addresses).
  void edge(bool start, uint64_t first, uint32_t beats, bool fire, bool done) {
    outstanding = outstanding + fire - done;
    if (start) {
      next_beat = first;
      beats_to_ask = beats;
    } else if (fire) {
      const uint32_t taken = burst_beats();
      next_beat += taken;
      beats_to_ask -= taken;
    }
  }
};

// systole_row_reader over systole_dma_read, and the memory's R channel.
class ReadPort {
 public:
  explicit ReadPort(BurstMemory& memory) : memory_(memory) {}

  bool req_ready() const { return bursts_.asked_all() && queued_.size() != kMaxOutstanding; }
  bool row_valid() const { return held_; }
  bool idle() const { return queued_.empty() && !held_; }

  // One clock edge with this cycle's inputs; returns whether a beat moved.
  bool edge(uint64_t now, bool req_valid, uint64_t address, uint32_t bytes, bool row_ready) {
    const bool start = req_valid && req_ready();
    const bool ar_fire = bursts_.valid();
    const uint32_t burst_beats = bursts_.burst_beats();
    const uint64_t burst_address = bursts_.next_beat * kBeatBytes;
    const bool r_fire = rvalid_ && (!held_ || row_ready);
    const bool rlast = r_fire && beat_in_burst_ + 1 == in_flight_.front().beats;
    const bool beat_last = r_fire && delivered_ + 1 == queued_.front();

    const uint32_t beats = start ? covering_beats(address, bytes) : 0;
    bursts_.edge(start, first_beat(address), beats, ar_fire, rlast);
    if (start) queued_.push_back(beats);
    if (beat_last) queued_.pop_front();
    if (r_fire) delivered_ = beat_last ? 0 : delivered_ + 1;
    if (row_ready) held_ = false;
    if (beat_last) held_ = true;

    // The memory (after the edge): the burst asked for, the beat taken,
    // the next beat once its burst's data is there.
    if (ar_fire) in_flight_.push_back({burst_beats, memory_.read_burst(now, burst_address, burst_beats)});
    if (r_fire) {
      rvalid_ = false;
      if (rlast) {
        in_flight_.pop_front();
        beat_in_burst_ = 0;
      } else {
        ++beat_in_burst_;
      }
    }
    if (!rvalid_ && !in_flight_.empty() && in_flight_.front().ready <= now + 1) rvalid_ = true;
    return r_fire;
  }

 private:
  struct Burst {
    uint32_t beats;
    uint64_t ready;  // cycle of the first beat
  };
  BurstMemory& memory_;
  Bursts bursts_;
  std::deque<uint32_t> queued_;  // beats of each request awaiting its beats
  uint32_t delivered_ = 0;       // of the oldest request
  bool held_ = false;            // a row waits for its consumer
  std::deque<Burst> in_flight_;
  uint32_t beat_in_burst_ = 0;
  bool rvalid_ = false;
};

// systole_dma_write and the memory's W and B channels.
class WritePort {
 public:
  explicit WritePort(BurstMemory& memory) : memory_(memory) {}

  bool w_fire(bool data_valid) const {
    return active_ && index_ < beats_ && (index_ >= row_beats_ || data_valid) && wready_;
  }
  // The next request is taken in the cycle the last beat goes.
  bool req_ready(bool data_valid) const {
    return !active_ || (bursts_.asked_all() && w_fire(data_valid) && index_ + 1 == beats_);
  }
  bool data_ready() const { return active_ && index_ < row_beats_ && index_ < beats_ && wready_; }
  bool idle() const { return !active_ && bursts_.outstanding == 0; }

  bool edge(uint64_t now, bool req_valid, uint64_t address, uint32_t bytes, bool data_valid) {
    const bool start = req_valid && req_ready(data_valid);
    const bool w_fire = this->w_fire(data_valid);
    const bool b_fire = bvalid_;
    const bool aw_fire = bursts_.valid();
    const uint32_t burst_beats = bursts_.burst_beats();
    const uint64_t burst_address = bursts_.next_beat * kBeatBytes;
    const bool asked_all = bursts_.asked_all();

    const uint32_t beats = start ? covering_beats(address, bytes) : 0;
    bursts_.edge(start, first_beat(address), beats, aw_fire, b_fire);
    if (start) {
      active_ = true;
      index_ = 0;
      beats_ = beats;
      row_beats_ = (bytes + kBeatBytes - 1) / kBeatBytes;
    } else {
      const bool sent = active_ && asked_all && index_ == beats_;
      if (w_fire) ++index_;
      if (sent) active_ = false;
    }

    if (aw_fire) open_.push_back({burst_address, burst_beats, 0});
    if (w_fire && ++open_.front().written == open_.front().beats) {
      responses_.push_back(memory_.write_burst(now, open_.front().address, open_.front().beats));
      open_.pop_front();
    }
    if (b_fire) {
      bvalid_ = false;
      responses_.pop_front();
    }
    if (!bvalid_ && !responses_.empty() && responses_.front() <= now + 1) bvalid_ = true;
    wready_ = !open_.empty();
    return w_fire;
  }

 private:
  struct Burst {
    uint64_t address;
    uint32_t beats, written;
  };
  BurstMemory& memory_;
  Bursts bursts_;
  bool active_ = false;
  uint32_t index_ = 0, beats_ = 0, row_beats_ = 0;
  std::deque<Burst> open_;
  std::deque<uint64_t> responses_;  // cycle each response is due
  bool bvalid_ = false, wready_ = false;
};

// systole_row_writer: a whole row per request, its beats through the DMA.
class RowWriter {
 public:
  explicit RowWriter(BurstMemory& memory) : dma_(memory) {}

  // The row register is free, or its last beat goes this cycle.
  bool free() const { return !sending_ || (dma_.data_ready() && beat_ == last_); }
  bool req_ready() const { return dma_.req_ready(sending_) && free(); }
  bool idle() const { return dma_.idle() && !sending_; }

  // Returns whether a W beat moved.
  bool edge(uint64_t now, bool req_valid, uint64_t address, uint32_t bytes) {
    const bool start = req_valid && req_ready();
    const bool data_ready = dma_.data_ready();
    const bool moved = dma_.edge(now, req_valid && free(), address, bytes, sending_);
    if (start) {
      sending_ = true;
      beat_ = 0;
      last_ = (bytes - 1) / kBeatBytes;
    } else if (sending_ && data_ready) {
      if (beat_ == last_) sending_ = false;
      ++beat_;
    }
    return moved;
  }

 private:
  WritePort dma_;
  bool sending_ = false;
  uint32_t beat_ = 0, last_ = 0;
};

// systole_striped_reader: request i on port i % count, rows back in order.
class StripedReader {
 public:
  StripedReader(uint32_t count, const uint64_t* bases, BurstMemory& memory) : bases_(bases) {
    for (uint32_t p = 0; p < count; ++p) ports_.emplace_back(memory);
  }

  bool req_ready() const { return ports_[ask_].req_ready(); }
  bool row_valid() const { return ports_[take_].row_valid(); }
  bool idle() const {
    return std::all_of(ports_.begin(), ports_.end(), [](const ReadPort& p) { return p.idle(); });
  }

  // Returns the beats that moved.
  uint32_t edge(uint64_t now, bool req_valid, uint64_t offset, uint32_t bytes, bool row_ready) {
    const bool start = req_valid && req_ready();
    const bool taken = row_valid() && row_ready;
    uint32_t beats = 0;
    for (uint32_t p = 0; p < ports_.size(); ++p)
      beats +=
          ports_[p].edge(now, req_valid && ask_ == p, bases_[p] + offset, bytes, row_ready && take_ == p);
    if (start) ask_ = (ask_ + 1) % ports_.size();
    if (taken) take_ = (take_ + 1) % ports_.size();
    return beats;
  }

 private:
  const uint64_t* bases_;
  std::vector<ReadPort> ports_;
  uint32_t ask_ = 0, take_ = 0;
};

// systole_striped_writer: row i out through port i % count.
class StripedWriter {
 public:
  StripedWriter(uint32_t count, const uint64_t* bases, BurstMemory& memory) : bases_(bases) {
    for (uint32_t p = 0; p < count; ++p) ports_.emplace_back(memory);
  }

  bool req_ready() const { return ports_[ask_].req_ready(); }
  bool idle() const {
    return std::all_of(ports_.begin(), ports_.end(), [](const RowWriter& p) { return p.idle(); });
  }

  // Returns the W beats that moved.
  uint32_t edge(uint64_t now, bool req_valid, uint64_t offset, uint32_t bytes) {
    const bool start = req_valid && req_ready();
    uint32_t beats = 0;
    for (uint32_t p = 0; p < ports_.size(); ++p)
      beats += ports_[p].edge(now, req_valid && ask_ == p, bases_[p] + offset, bytes);
    if (start) ask_ = (ask_ + 1) % ports_.size();
    return beats;
  }

 private:
  const uint64_t* bases_;
  std::vector<RowWriter> ports_;
  uint32_t ask_ = 0;
};

// systole_vector_engine, cycle for cycle: a request walker asks the c
// group for every row the descriptor reads (per group of rows, per chunk of
// Cols elements, per row of the group, per operand read); a consumer takes
// the rows in the same order (Gather), computes a chunk min(Cols,
// kVectorLanes) elements a cycle (Compute; a sum after every row), and
// moves the finished chunk to the write buffer (waiting in Hand while it is
// full), from which a writer hands the outputs to the c writers one request
// a cycle while the consumer goes on, until the last chunk is taken (Done)
// and written.
class VectorEngine {
 public:
  struct Request {
    bool valid = false;
    uint64_t address = 0;
    uint32_t bytes = 0;
  };

  explicit VectorEngine(uint32_t cols)
      : cols_(cols),
        slices_(cols / std::min(cols, spec::kVectorLanes)),
        transpose_group_(std::min(2 * cols, spec::kTransposeRows)) {}

  void start(const spec::VectorDescriptor& d) {
    d_ = d;
    op_ = spec::Opcode(d.opcode);
    const spec::VectorOperands operands = spec::vector_operands(op_);
    const spec::VectorScalars scalars = spec::VectorScalars::of(d);
    for (int i = 0; i < 4; ++i) {
      reads_[i] = operands.read[i] && (i != 1 || scalars.reads_y(op_));
      writes_[i] = operands.written[i];
    }
    rows_ = spec::vector_reads_rows(op_) ? d.rows : 1;
    transpose_ = op_ == spec::Opcode::kToBf16 && (d.flags & spec::vector_flag::kTranspose);
    group_ = op_ == spec::Opcode::kSum ? d.rows : transpose_ ? transpose_group_ : 1;
    ask_ = take_ = unit_ = Walk{};
    phase_ = Phase::kGather;
    slice_ = 0;
    out_ = Buffer{};
  }

  bool done() const { return phase_ == Phase::kDone && !out_.valid; }

  Request read() const {
    if (ask_.done) return {};
    const uint64_t address = spec::vector_reads_rows(op_)
                                 ? d_.x_addr + ((uint64_t(ask_.r0) + ask_.r) * d_.stride + ask_.i0) * 4
                                 : operand_address(ask_.op) + uint64_t(ask_.i0) * 4;
    return {true, address, count(ask_) * 4};
  }
  bool row_ready() const { return phase_ == Phase::kGather && !take_.done; }
  Request write() const {
    if (!out_.valid) return {};
    const Walk& unit = out_.unit;
    if (op_ != spec::Opcode::kToBf16)
      return {true, operand_address(out_.write) + uint64_t(unit.i0) * 4, count(unit) * 4};
    if (!transpose_) return {true, d_.z_addr + (uint64_t(unit.r0) * d_.n + unit.i0) * 2, count(unit) * 2};
    return {true, d_.z_addr + ((uint64_t(unit.i0) + out_.write) * d_.rows + unit.r0) * 2,
            std::min(group_, rows_ - unit.r0) * 2};
  }

  // The edge: whether a read was asked for, a row taken, a write handed over.
  void edge(bool asked, bool took, bool wrote) {
    if (asked) ask_ = advance(ask_);
    const bool sum = op_ == spec::Opcode::kSum, to_bf16 = op_ == spec::Opcode::kToBf16;
    // The buffer is free for a finished unit when empty, or once its last
    // write is handed over in this cycle.
    bool free = !out_.valid;
    if (wrote) {
      const bool last =
          to_bf16 ? !transpose_ || out_.write + 1 >= count(out_.unit) : next_written(out_.write + 1) == 4;
      out_.write = to_bf16 ? out_.write + 1 : next_written(out_.write + 1);
      if (last) {
        out_.valid = false;
        free = true;
      }
    }
    bool complete = false;
    switch (phase_) {
      case Phase::kGather:
        if (!took) break;
        unit_ = take_;
        take_ = advance(take_);
        slice_ = 0;
        if (sum) {
          phase_ = Phase::kCompute;
        } else if (unit_end(unit_)) {
          if (to_bf16)
            complete = true;  // rounded on the way
          else
            phase_ = Phase::kCompute;
        }
        break;
      case Phase::kCompute:
        if (++slice_ < slices_) break;
        if (!sum || unit_end(unit_))
          complete = true;
        else
          phase_ = Phase::kGather;
        break;
      case Phase::kHand:
        complete = true;
        break;
      case Phase::kDone:
        break;
    }
    if (!complete) return;
    if (!free) {
      phase_ = Phase::kHand;
      return;
    }
    out_ = Buffer{true, unit_, to_bf16 ? 0 : next_written(0)};
    phase_ = take_.done ? Phase::kDone : Phase::kGather;
  }

 private:
  enum class Phase { kGather, kCompute, kHand, kDone };
  // A place in the read sequence (systole_vector_engine's walk_t).
  struct Walk {
    uint32_t r0 = 0, i0 = 0, r = 0;
    uint32_t op = 0;
    bool done = false;
  };

  uint32_t count(const Walk& w) const { return std::min(cols_, d_.n - w.i0); }
  uint64_t operand_address(uint32_t operand) const {
    const uint64_t addresses[4] = {d_.x_addr, d_.y_addr, d_.z_addr, d_.w_addr};
    return addresses[operand];
  }
  uint32_t next_read(uint32_t op) const {
    for (uint32_t i = op + 1; i < 4; ++i)
      if (reads_[i]) return i;
    return 4;
  }
  // The first operand from `from` on that the opcode writes, or 4.
  uint32_t next_written(uint32_t from) const {
    for (uint32_t i = std::max(from, 1u); i < 4; ++i)
      if (writes_[i]) return i;
    return 4;
  }
  bool unit_end(const Walk& w) const {
    return next_read(w.op) == 4 && w.r + 1 >= std::min(group_, rows_ - w.r0);
  }
  Walk advance(Walk w) const {
    if (const uint32_t op = next_read(w.op); op != 4) {
      w.op = op;
      return w;
    }
    const bool end = unit_end(w);
    w.op = 0;
    if (!end) {
      ++w.r;
      return w;
    }
    w.r = 0;
    if (w.i0 + cols_ < d_.n) {
      w.i0 += cols_;
      return w;
    }
    w.i0 = 0;
    if (w.r0 + group_ < rows_)
      w.r0 += group_;
    else
      w.done = true;
    return w;
  }

  const uint32_t cols_, slices_, transpose_group_;
  spec::VectorDescriptor d_{};
  spec::Opcode op_ = spec::Opcode::kAxpby;
  bool reads_[4] = {}, writes_[4] = {};
  bool transpose_ = false;
  uint32_t rows_ = 1, group_ = 1;
  // The write buffer: a finished unit, and the operand (or column) its
  // next write is.
  struct Buffer {
    bool valid = false;
    Walk unit;
    uint32_t write = 0;
  };
  Walk ask_, take_, unit_;
  Phase phase_ = Phase::kGather;
  uint32_t slice_ = 0;
  Buffer out_;
};

// systole_tile_counter: an engine's place in a descriptor.
struct TileCounter {
  uint32_t j = 0, t = 0, i = 0, g = 0;
  void clear() { j = t = i = g = 0; }
  void step(uint32_t steps, uint32_t k_tiles) {
    if (++i != steps) return;
    i = 0;
    ++g;
    if (++t == k_tiles) {
      t = 0;
      ++j;
    }
  }
};

enum class State {
  kFetchHeader,
  kCheckHeader,
  kFetchCheck,
  kCheck,
  kFetchRun,
  kDecode,
  kCompute,
  kVector,
  kFinish
};

class Kernel {
 public:
  Kernel(spec::ArrayShape shape, const spec::CommandListHeader& header,
         const std::vector<spec::CommandRecord>& records, const LaunchArguments& arguments,
         BurstMemory& memory)
      : rows_(shape.rows),
        cols_(shape.cols),
        shape_(shape),
        header_(header),
        list_(records),
        args_(arguments),
        cmd_(memory),
        a_(spec::kAPorts, args_.base + spec::kFirstAPort, memory),
        b_(spec::kBPorts, args_.base + spec::kFirstBPort, memory),
        c_(spec::kCPorts, args_.base + spec::kFirstCPort, memory),
        write_(spec::kCPorts, args_.base + spec::kFirstCPort, memory),
        vector_(shape.cols) {}

  LaunchTiming run() {
    while (step()) {
    }
    result_.counters.busy_cycles = now_;
    return std::move(result_);
  }

 private:
  uint32_t tile_cols(uint32_t j) const { return std::min(d_.n - j * cols_, cols_); }
  uint64_t c_row_addr(uint32_t m, uint32_t j) const {
    return d_.c_addr + (uint64_t(m) * d_.ldc + uint64_t(j) * cols_) * c_esize_;
  }
  uint32_t weight_k(uint32_t t, uint32_t r) const { return t * rows_ + (rows_ - 1 - r); }

  void finish(spec::ErrorCode code, uint32_t index) {
    result_.status = code;
    result_.error_index = index;
    state_ = State::kFinish;
  }

  // The current descriptor has finished: the next one is fetched, or the
  // list is done.
  void descriptor_done() {
    ++result_.counters.descriptors_done;
    if (index_ + 1 == header_.count) {
      finish(spec::ErrorCode::kOk, 0);
    } else {
      ++index_;
      state_ = State::kFetchRun;
    }
  }

  // One cycle: false after the Finish cycle.
  bool step() {
    const bool fetching =
        state_ == State::kFetchHeader || state_ == State::kFetchCheck || state_ == State::kFetchRun;
    const bool computing = state_ == State::kCompute;
    const bool accumulate = d_.flags & spec::flag::kAccumulate;
    const bool bias = d_.flags & spec::flag::kBias;

    // Load engine: one row's K tile per request, K tile by K tile.
    const bool la_valid = computing && la_.j == 0;
    const uint32_t la_values = la_valid ? std::min(rows_, d_.k - la_.t * rows_) : 0;
    const uint64_t la_addr = d_.a_addr + (uint64_t(la_.i) * d_.lda + uint64_t(la_.t) * rows_) * 2;
    const bool la_step = la_valid && a_.req_ready();
    const bool a_row = a_.row_valid();

    // Weight engine.
    const uint32_t wq_k = weight_k(wq_.t, wq_.i);
    const bool wq_active = computing && wq_.j < n_tiles_;
    const bool wq_asks = wq_active && wq_k < d_.k;
    const uint64_t weight_addr = d_.b_addr + (uint64_t(wq_k) * d_.ldb + uint64_t(wq_.j) * cols_) * 2;
    const uint32_t weight_bytes = wq_active ? tile_cols(wq_.j) * 2 : 0;
    const bool wq_step = wq_active && (wq_k >= d_.k || b_.req_ready());

    const uint32_t sh_k = weight_k(sh_.t, sh_.i);
    const bool sh_active = computing && sh_.j < n_tiles_;
    const bool sh_bank_free = sh_.i != 0 || (st_.g + 1 >= sh_.g && quiet_[sh_.g & 1] == 0);
    const bool shift_zero = sh_k >= d_.k;
    const bool weight_shift = sh_active && sh_bank_free && (shift_zero || b_.row_valid());
    const bool take_b = weight_shift && !shift_zero;

    // Stream engine.
    const bool st_active = computing && st_.j < n_tiles_;
    const bool act_valid = st_active && sh_.g > st_.g && (st_.j != 0 || a_loaded_ > chunk_) &&
                           (st_.t != 0 || st_.i != 0 || inited_ > st_.j);
    const bool act_final = st_.t + 1 == k_tiles_;
    const bool act_last = act_final && st_.i + 1 == d_.m;
    // The core: a final row's sums are in Rows + Cols + 1 cycles after it entered.
    const bool row_done = !final_due_.empty() && final_due_.front().at == now_;
    const bool tile_done = row_done && final_due_.front().last;

    // Init engine.
    const uint32_t in_rows = accumulate ? d_.m : 0;
    const uint32_t in_total = in_rows + (bias ? 1 : 0);
    const bool in_active = computing && in_j_ < n_tiles_ && written_ + 1 >= in_j_;
    const bool in_asks_c = in_asked_ < in_rows;
    const bool c_req_valid = in_active && in_asked_ < in_total;
    const uint64_t in_addr = !c_req_valid ? 0
                             : in_asks_c  ? c_row_addr(in_asked_, in_j_)
                                          : d_.bias_addr + uint64_t(in_j_) * cols_ * 4;
    const uint32_t in_bytes = c_req_valid ? tile_cols(in_j_) * (in_asks_c ? c_esize_ : 4) : 0;
    const bool c_start = c_req_valid && c_.req_ready();
    const bool c_row = c_.row_valid();

    // Write engine: a whole row per request, as rows become final.
    const bool wr_req_valid =
        computing && wb_j_ < n_tiles_ && (summed_ > wb_j_ || (summed_ == wb_j_ && wb_m_ < finals_));
    const bool wb_accept = wr_req_valid && write_.req_ready();
    const uint32_t wr_bytes = wr_req_valid ? tile_cols(wb_j_) * c_esize_ : 0;

    // The command port.
    const bool cmd_valid = fetching && !cmd_asked_;
    const uint64_t cmd_addr = state_ == State::kFetchHeader
                                  ? args_.command_addr()
                                  : args_.command_addr() + 64 * (uint64_t(index_) + 1);
    const bool cmd_start = cmd_valid && cmd_.req_ready();
    const bool cmd_row = cmd_.row_valid();
    const bool all_idle = cmd_.idle() && a_.idle() && b_.idle() && c_.idle() && write_.idle();

    // The vector engine (the c group's requests instead of the init and
    // write engines').
    const bool vector = state_ == State::kVector;
    const VectorEngine::Request v_read = vector ? vector_.read() : VectorEngine::Request{};
    const VectorEngine::Request v_write = vector ? vector_.write() : VectorEngine::Request{};
    const bool v_row_ready = vector && vector_.row_ready();
    const bool v_asked = v_read.valid && c_.req_ready();
    const bool v_took = v_row_ready && c_row;
    const bool v_wrote = v_write.valid && write_.req_ready();

    // ---- the edge: ports and core first (they read the inputs above) ----
    uint32_t beats = 0;
    beats += cmd_.edge(now_, cmd_valid, cmd_addr, 64, fetching);
    beats += a_.edge(now_, la_valid, la_addr, la_values * 2, true);
    beats += b_.edge(now_, wq_asks, weight_addr, weight_bytes, take_b);
    beats += vector ? c_.edge(now_, v_read.valid, v_read.address, v_read.bytes, v_row_ready)
                    : c_.edge(now_, c_req_valid, in_addr, in_bytes, in_active);
    const uint32_t w_beats = vector ? write_.edge(now_, v_write.valid, v_write.address, v_write.bytes)
                                    : write_.edge(now_, wr_req_valid, c_row_addr(wb_m_, wb_j_), wr_bytes);
    result_.counters.dma_read_bytes += uint64_t(beats) * kBeatBytes;
    result_.counters.dma_write_bytes += uint64_t(w_beats) * kBeatBytes;
    if (row_done) final_due_.pop_front();
    if (act_valid && act_final) final_due_.push_back({now_ + rows_ + cols_ + 1, act_last});

    // ---- the controller's registers ----
    if (cmd_start) cmd_asked_ = true;
    if (fetching && cmd_row) cmd_asked_ = false;
    const State state = state_;
    switch (state) {
      case State::kFetchHeader:
      case State::kFetchCheck:
      case State::kFetchRun:
        if (cmd_row)
          state_ = state == State::kFetchHeader  ? State::kCheckHeader
                   : state == State::kFetchCheck ? State::kCheck
                                                 : State::kDecode;
        break;
      case State::kCheckHeader:
        if (const spec::ErrorCode error = spec::validate_header(header_, shape_);
            error != spec::ErrorCode::kOk) {
          finish(error, spec::kHeaderErrorIndex);
        } else {
          index_ = 0;
          state_ = State::kFetchCheck;
        }
        break;
      case State::kCheck:
        if (const spec::ErrorCode error =
                spec::validate_record(list_[index_].data(), args_.mem_bytes, shape_);
            error != spec::ErrorCode::kOk) {
          finish(error, index_);
        } else if (index_ + 1 == header_.count) {
          index_ = 0;
          state_ = State::kFetchRun;
        } else {
          ++index_;
          state_ = State::kFetchCheck;
        }
        break;
      case State::kDecode:
        if (spec::is_vector_opcode(list_[index_][0])) {
          vector_.start(spec::decode<spec::VectorDescriptor>(list_[index_].data()));
          state_ = State::kVector;
          break;
        }
        d_ = spec::decode<spec::GemmDescriptor>(list_[index_].data());
        n_tiles_ = (d_.n + cols_ - 1) / cols_;
        k_tiles_ = (d_.k + rows_ - 1) / rows_;
        c_esize_ = d_.flags & spec::flag::kOutputBf16 ? 2 : 4;
        la_.clear();
        a_loaded_ = chunk_ = 0;
        wq_.clear();
        sh_.clear();
        st_.clear();
        summed_ = finals_ = 0;
        in_j_ = in_asked_ = in_got_ = in_zeroed_ = inited_ = 0;
        wb_j_ = wb_m_ = written_ = 0;
        state_ = State::kCompute;
        break;
      case State::kCompute: {
        if (!act_valid && st_.j < n_tiles_) ++result_.counters.stall_cycles;
        if (act_valid) ++result_.array_cycles;
        if (written_ == n_tiles_ && all_idle) {
          result_.counters.macs += uint64_t(d_.m) * d_.n * d_.k;
          descriptor_done();
        }
        break;
      }
      case State::kVector: {
        // The front sees the engine's registered Done.
        const bool finished = vector_.done() && all_idle;
        vector_.edge(v_asked, v_took, v_wrote);
        if (finished) descriptor_done();
        break;
      }
      case State::kFinish:
        ++now_;
        return false;
    }

    // The engines' registers (they only move during Compute).
    for (uint32_t b = 0; b < 2; ++b) {
      if (act_valid && (st_.g & 1) == b)
        quiet_[b] = rows_ + cols_;
      else if (quiet_[b] != 0)
        --quiet_[b];
    }
    if (row_done) ++finals_;
    if (tile_done) {
      ++summed_;
      finals_ = 0;
    }
    if (la_step) la_.step(d_.m, k_tiles_);
    if (a_row) ++a_loaded_;
    if (act_valid && st_.j == 0) ++chunk_;
    if (wq_step) wq_.step(rows_, k_tiles_);
    if (weight_shift) sh_.step(rows_, k_tiles_);
    if (act_valid) st_.step(d_.m, k_tiles_);
    if (in_active) {
      const bool next_tile = in_got_ == in_total && (accumulate || in_zeroed_ == d_.m);
      if (c_start) ++in_asked_;
      if (c_row) ++in_got_;
      if (!accumulate && in_zeroed_ < d_.m) ++in_zeroed_;
      if (next_tile) {
        in_asked_ = in_got_ = in_zeroed_ = 0;
        ++in_j_;
        ++inited_;
      }
    }
    if (wb_accept) {
      if (++wb_m_ == d_.m) {
        wb_m_ = 0;
        ++wb_j_;
        ++written_;
      }
    }
    ++now_;
    return true;
  }

  uint32_t rows_, cols_;
  spec::ArrayShape shape_;
  const spec::CommandListHeader& header_;
  const std::vector<spec::CommandRecord>& list_;
  LaunchArguments args_;
  ReadPort cmd_;
  StripedReader a_, b_, c_;
  StripedWriter write_;
  LaunchTiming result_;
  uint64_t now_ = 0;

  VectorEngine vector_;
  State state_ = State::kFetchHeader;
  bool cmd_asked_ = false;
  uint32_t index_ = 0;
  spec::GemmDescriptor d_{};
  uint32_t n_tiles_ = 0, k_tiles_ = 0, c_esize_ = 4;
  TileCounter la_, wq_, sh_, st_;
  uint32_t a_loaded_ = 0, chunk_ = 0;  // A chunks stored; the one the stream needs next
  std::array<uint32_t, 2> quiet_{};
  struct Due {
    uint64_t at;  // the cycle row_done rises
    bool last;    // and tile_done with it
  };
  std::deque<Due> final_due_;
  uint32_t summed_ = 0, finals_ = 0;
  uint32_t in_j_ = 0, in_asked_ = 0, in_got_ = 0, in_zeroed_ = 0, inited_ = 0;
  uint32_t wb_j_ = 0, wb_m_ = 0, written_ = 0;
};

}  // namespace

LaunchTiming simulate_launch(spec::ArrayShape shape, const uint8_t* list, uint64_t list_bytes,
                             const LaunchArguments& arguments, BurstMemory& memory) {
  // Bytes past the list read as zeros (a board would answer DECERR, which
  // the driver's launch checks rule out).
  auto read = [&](uint64_t offset, void* out, std::size_t bytes) {
    std::memset(out, 0, bytes);
    if (spec::in_range(offset, bytes, list_bytes)) std::memcpy(out, list + offset, bytes);
  };
  spec::CommandListHeader header;
  read(0, &header, sizeof header);
  std::vector<spec::CommandRecord> records;
  if (spec::validate_header(header, shape) == spec::ErrorCode::kOk) {
    records.resize(header.count);
    for (uint32_t i = 0; i < header.count; ++i)
      read(spec::command_list_bytes(i), records[i].data(), spec::kBeatBytes);
  }
  return Kernel(shape, header, records, arguments, memory).run();
}

}  // namespace systole::timing
