// SPDX-License-Identifier: Apache-2.0
// Matrix products on a compute unit: operands to bf16 (bf16_rounding.h),
// staged in the unit's banks, tiled by plan_gemm, one launch per call
// list.
#include <algorithm>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

#include "systole/boards.h"
#include "systole/matmul.h"
#include "systole/trace.h"
#include "systole/vector_plan.h"
#include "unit_memory.h"

namespace systole {

Result<DeviceTensor> MatmulExecutor::allocate(std::size_t) {
  return Status(StatusCode::kUnavailable, "allocate: this executor keeps no tensors on the card");
}

Status MatmulExecutor::relu_mask_on_card(const DeviceTensor&, const DeviceTensor&, const DeviceTensor&,
                                         std::size_t) {
  return Status(StatusCode::kUnavailable, "relu mask: this executor keeps no tensors on the card");
}

void relu_mask(const float* gradient, const float* output, std::size_t count, float* masked) {
  const float* __restrict g = gradient;
  const float* __restrict y = output;
  float* __restrict out = masked;
  for (std::size_t i = 0; i < count; ++i) {
    const float value = g[i];
    out[i] = y[i] > 0.0f ? value : 0.0f;
  }
}

Status MatmulExecutor::relu_mask(const Operand& gradient, const Operand& output, const Destination& masked,
                                 std::size_t count) {
  const bool on_card = gradient.card && output.card && masked.card;
  const bool on_host = gradient.host && output.host && masked.host;
  if (on_card && (!on_host || supports(Feature::kCardTensors)))
    return relu_mask_on_card(gradient.card, output.card, masked.card, count);
  if (on_host) {
    systole::relu_mask(gradient.host, output.host, count, masked.host);
    return ok_status();
  }
  auto where = [](const Operand& x) { return x.card ? "on the card" : x.host ? "on the host" : "missing"; };
  return Status(StatusCode::kInvalidArgument, std::string("relu mask: the gradient is ") + where(gradient) +
                                                  ", the layer's output " + where(output) +
                                                  " and the masked gradient " + where(masked) +
                                                  ": all three must be on the host, or all on the card");
}

Status MatmulExecutor::conv_input_gradient_on_card(const ConvShape&, uint32_t, const Operand&, const Operand&,
                                                   float*) {
  return Status(StatusCode::kUnavailable,
                "conv input gradient on card: this executor keeps no tensors on the card");
}

Result<std::unique_ptr<DeviceMatmul>> DeviceMatmul::create(Device device, uint32_t unit,
                                                           std::chrono::milliseconds launch_timeout) {
  if (!device) return Status(StatusCode::kInvalidArgument, "no device");
  if (unit >= device.info().compute_units)
    return Status(StatusCode::kInvalidArgument, "compute unit " + std::to_string(unit) +
                                                    " does not exist (device has " +
                                                    std::to_string(device.info().compute_units) + ")");
  std::unique_ptr<DeviceMatmul> matmul(new DeviceMatmul());
  matmul->device_ = device;
  matmul->unit_ = unit;
  matmul->timeout_ = launch_timeout;
  matmul->memory_ = std::make_unique<UnitMemory>(device, unit);
  return matmul;
}

DeviceMatmul::DeviceMatmul() = default;
DeviceMatmul::~DeviceMatmul() = default;

void Intervals::add(std::size_t begin, std::size_t end) {
  if (begin >= end) return;
  // Merge with every span it touches; the list stays sorted and disjoint.
  auto first = std::lower_bound(spans_.begin(), spans_.end(), begin,
                                [](const auto& span, std::size_t at) { return span.second < at; });
  auto last = first;
  while (last != spans_.end() && last->first <= end) {
    begin = std::min(begin, last->first);
    end = std::max(end, last->second);
    ++last;
  }
  first = spans_.erase(first, last);
  spans_.insert(first, {begin, end});
}

bool Intervals::contains(std::size_t begin, std::size_t end) const {
  auto span = std::lower_bound(spans_.begin(), spans_.end(), begin,
                               [](const auto& s, std::size_t at) { return s.second <= at; });
  return begin >= end || (span != spans_.end() && span->first <= begin && end <= span->second);
}

std::vector<std::pair<std::size_t, std::size_t>> Intervals::gaps(std::size_t count) const {
  std::vector<std::pair<std::size_t, std::size_t>> gaps;
  std::size_t at = 0;
  for (const auto& [begin, end] : spans_) {
    if (begin >= count) break;
    if (begin > at) gaps.push_back({at, begin});
    at = std::max(at, end);
  }
  if (at < count) gaps.push_back({at, count});
  return gaps;
}

bool DeviceMatmul::supports(Feature feature) const {
  switch (feature) {
    case Feature::kCardTensors:
    case Feature::kConvInputGradient:
      // Both make bf16 copies and sums with the vector engine.
      return device_.info().has_vector_engine();
  }
  return false;
}

void DeviceMatmul::keep_resident(const ResidentParameters& resident) {
  resident_ = resident;
  pending_.clear();
  card_read_.clear();
  card_written_.clear();
}

void DeviceMatmul::values_changed() { resident_.values.mark_written(); }

Result<DeviceTensor> DeviceMatmul::allocate(std::size_t count) { return memory_->allocate(count); }

std::size_t DeviceMatmul::copied_tensors() const { return memory_->copied_tensors(resident_.values.id()); }

std::size_t DeviceMatmul::kept_rows_bytes() const { return memory_->kept_rows_bytes(); }

Result<uint64_t> DeviceMatmul::operand(const Operand& x, uint32_t rows, uint32_t cols, bool transposed,
                                       uint32_t stride, Port which, UnitSlot& slot,
                                       std::vector<spec::CommandRecord>& records) {
  if (!x.card) return memory_->stage(slot, x.host, nullptr, rows, cols, transposed, stride);
  // What the card reads of the parameters' values the host need not.
  const std::size_t span = std::size_t((transposed ? cols : rows) - 1) * stride + (transposed ? rows : cols);
  if (x.card.same_values(resident_.values)) card_read_.add(x.card.offset(), x.card.offset() + span);
  return memory_->copy(x.card, rows, cols, transposed, stride, which,
                       which == Port::kA ? "matmul: operand A" : "matmul: operand B", records);
}

Status DeviceMatmul::relu_mask_on_card(const DeviceTensor& gradient, const DeviceTensor& output,
                                       const DeviceTensor& masked, std::size_t count) {
  auto x = UnitMemory::address(gradient, count, "relu mask: the gradient");
  if (!x.ok()) return x.status();
  auto y = UnitMemory::address(output, count, "relu mask: the layer's output");
  if (!y.ok()) return y.status();
  const uint64_t x_addr = *x, y_addr = *y;
  auto z = memory_->result(masked, count, "relu mask: the masked gradient");
  if (!z.ok()) return z.status();
  VectorProblem mask;
  mask.opcode = spec::Opcode::kReluGrad;
  mask.n = count;
  mask.x = x_addr;
  mask.y = y_addr;
  mask.z = *z;
  return append_vector_plan(mask, pending_);
}

void DeviceMatmul::ensure_call_slots(std::size_t calls) {
  while (a_.size() < calls) {
    a_.push_back({Buffer(), memory_->bank(Port::kA)});
    b_.push_back({Buffer(), memory_->bank(Port::kB)});
    c_.push_back({Buffer(), memory_->bank(Port::kC)});
  }
}

Buffer* DeviceMatmul::import_result(std::size_t call, float* c, std::size_t bytes) {
  // Importing C and ending the import cost about 0.06 us here, copying it
  // down from the cache 0.03 us for 4 KiB and 0.12 us for 16 KiB: smaller
  // results are copied.
  constexpr std::size_t kImportBytes = 16 << 10;
  if (!imports_host_ || bytes < kImportBytes) return nullptr;
  auto imported = device_.import_host(c, bytes);
  if (!imported.ok()) {
    // A device that reaches only its own memory has C copied down from now
    // on; any other refusal, this time.
    if (imported.status().code() == StatusCode::kUnavailable) imports_host_ = false;
    return nullptr;
  }
  if (imported_.size() <= call) imported_.resize(call + 1);
  imported_[call] = std::move(imported).value();
  ++results_in_place_;
  return &imported_[call];
}

Status DeviceMatmul::run(const std::vector<MatmulCall>& calls) {
  const DeviceInfo& info = device_.info();
  ensure_call_slots(calls.size());
  imported_.clear();
  memory_->begin_run();
  using Clock = Trace::Clock;
  const Clock::time_point begun = Clock::now();
  double launch_seconds = 0;
  const uint32_t track = Trace::unit_track(unit_);
  // The vector work queued for this launch and the copies the card makes
  // first, then the products (pending_ keeps records_' memory).
  records_.clear();
  std::swap(records_, pending_);
  std::vector<spec::CommandRecord>& records = records_;
  std::vector<spec::CommandRecord>& products = products_;
  products.clear();
  // Products whose C stays on the card (not downloaded).
  std::vector<char>& on_card = on_card_;
  on_card.assign(calls.size(), false);
  std::optional<TraceScope> upload(std::in_place, "upload", "device", track);  // until the first launch
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const MatmulCall& call = calls[i];
    if (!(call.a || call.a_rows) || !(call.b || call.b_rows) || !call.c)
      return Status(StatusCode::kInvalidArgument, "matmul: an operand is missing");
    if ((call.a_rows && call.a_transposed) || (call.b_rows && call.b_transposed))
      return Status(StatusCode::kInvalidArgument, "matmul: an operand given as rows is not transposed");
    if ((call.a && call.a_rows) || (call.b && call.b_rows))
      return Status(StatusCode::kInvalidArgument, "matmul: an operand is given both as rows and as values");
    // C in the card's copy of the parameters' gradients (a weight's).
    const bool c_resident = call.c.card.same_values(resident_.gradients);
    if (call.c.card && call.accumulate && !c_resident)
      return Status(StatusCode::kInvalidArgument, "matmul: a result left on the card cannot accumulate");
    const uint32_t a_row = call.a_transposed ? call.m : call.k, b_row = call.b_transposed ? call.k : call.n;
    if (call.a_stride() < a_row || call.b_stride() < b_row)
      return Status(StatusCode::kInvalidArgument,
                    "matmul: a row stride (lda " + std::to_string(call.lda) + ", ldb " +
                        std::to_string(call.ldb) + ") is shorter than the stored rows (" +
                        std::to_string(a_row) + ", " + std::to_string(b_row) + ")");
    GemmProblem problem;
    problem.m = call.m;
    problem.n = call.n;
    problem.k = call.k;
    problem.bias = bool(call.bias);
    problem.relu = call.relu;
    problem.accumulate = call.accumulate;

    auto a = call.a_rows ? memory_->made_rows(call, *call.a_rows, call.m, call.k, a_[i])
                         : operand(call.a, call.m, call.k, call.a_transposed, call.a_stride(), Port::kA,
                                   a_[i], records);
    if (!a.ok()) return a.status();
    problem.a = {*a, call.k};

    auto b = call.b_rows ? memory_->made_rows(call, *call.b_rows, call.k, call.n, b_[i])
                         : operand(call.b, call.k, call.n, call.b_transposed, call.b_stride(), Port::kB,
                                   b_[i], records);
    if (!b.ok()) return b.status();
    problem.b = {*b, call.n};

    const std::size_t c_count = std::size_t(call.m) * call.n, c_bytes = c_count * sizeof(float);
    const std::size_t bias_bytes = call.bias.host && !call.bias.card ? call.n * sizeof(float) : 0;
    std::size_t bias_offset = 0;  // of a host bias in c_[i]
    if (call.c.card) {
      auto address = memory_->result(call.c.card, c_count, "matmul: result C");
      if (!address.ok()) return address.status();
      problem.c = {*address, call.n};
      on_card[i] = true;
      if (c_resident) {
        // The product lands in the card's gradients. Accumulating into what
        // the host wrote there, the host's values go up first.
        const std::size_t at = call.c.card.offset();
        if (call.accumulate && !card_written_.contains(at, at + c_count)) {
          if (!call.c.host)
            return Status(StatusCode::kInvalidArgument,
                          "matmul: accumulating into the card's gradients needs the host's copy of C");
          SYSTOLE_RETURN_IF_ERROR(call.c.card.part(0, c_count)->write(call.c.host));
        }
        card_written_.add(at, at + c_count);
      }
    } else if (Buffer* imported = import_result(i, call.c.host, c_bytes)) {
      // C in the caller's array itself: nothing goes up or comes down.
      problem.c = {imported->address(), call.n};
    } else {
      // C in the call's slot, uploaded only when accumulated into.
      SYSTOLE_RETURN_IF_ERROR(memory_->ensure(c_[i], c_bytes + bias_bytes));
      Buffer& c = c_[i].buffer;
      if (call.accumulate) {
        SYSTOLE_RETURN_IF_ERROR(c.write(call.c.host, c_bytes));
        SYSTOLE_RETURN_IF_ERROR(c.sync(Buffer::SyncDirection::kToDevice, c_bytes, 0));
      }
      problem.c = {c.address(), call.n};
      bias_offset = c_bytes;
    }
    if (bias_bytes) {
      // A bias the card does not hold goes up into the call's C slot,
      // behind C when C is there.
      SYSTOLE_RETURN_IF_ERROR(memory_->ensure(c_[i], bias_offset + bias_bytes));
      Buffer& c = c_[i].buffer;
      SYSTOLE_RETURN_IF_ERROR(c.write(call.bias.host, bias_bytes, bias_offset));
      SYSTOLE_RETURN_IF_ERROR(c.sync(Buffer::SyncDirection::kToDevice, bias_bytes, bias_offset));
      problem.bias_address = c.address() + bias_offset;
    } else if (call.bias.card) {
      auto address = UnitMemory::address(call.bias.card, call.n, "matmul: the bias");
      if (!address.ok()) return address.status();
      problem.bias_address = *address;
      if (call.bias.card.same_values(resident_.values))
        card_read_.add(call.bias.card.offset(), call.bias.card.offset() + call.n);
    }

    auto planned = plan_gemm(info, problem);
    if (!planned.ok()) return planned.status();
    for (const spec::GemmDescriptor& d : *planned) products.push_back(spec::record_of(d));
  }
  records.insert(records.end(), products.begin(), products.end());
  SYSTOLE_RETURN_IF_ERROR(launch(records, upload, launch_seconds));

  TraceScope download("download", "device", track);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (on_card[i] || (i < imported_.size() && imported_[i])) continue;
    const std::size_t bytes = std::size_t(calls[i].m) * calls[i].n * sizeof(float);
    SYSTOLE_RETURN_IF_ERROR(c_[i].buffer.sync(Buffer::SyncDirection::kFromDevice, bytes, 0));
    SYSTOLE_RETURN_IF_ERROR(c_[i].buffer.read(calls[i].c.host, bytes));
  }
  imported_.clear();
  times_.launch_seconds += launch_seconds;
  times_.staging_seconds += std::chrono::duration<double>(Clock::now() - begun).count() - launch_seconds;
  return ok_status();
}

Status DeviceMatmul::run_vector(const std::vector<spec::CommandRecord>& work) {
  using Clock = Trace::Clock;
  const Clock::time_point begun = Clock::now();
  double launch_seconds = 0;
  std::vector<spec::CommandRecord> records = std::exchange(pending_, {});
  records.insert(records.end(), work.begin(), work.end());
  std::optional<TraceScope> upload(std::in_place, "upload", "device", Trace::unit_track(unit_));
  SYSTOLE_RETURN_IF_ERROR(launch(records, upload, launch_seconds));
  times_.launch_seconds += launch_seconds;
  times_.staging_seconds += std::chrono::duration<double>(Clock::now() - begun).count() - launch_seconds;
  return ok_status();
}

Status DeviceMatmul::launch(const std::vector<spec::CommandRecord>& records,
                            std::optional<TraceScope>& upload, double& launch_seconds) {
  using Clock = Trace::Clock;
  Trace* trace = Trace::installed();
  const uint32_t track = Trace::unit_track(unit_);
  const uint32_t max_descriptors = device_.info().max_descriptors;
  for (std::size_t first = 0; first < records.size(); first += max_descriptors) {
    // Encoded straight into the list buffer's host view.
    const std::size_t count = std::min<std::size_t>(max_descriptors, records.size() - first);
    const std::size_t bytes = spec::command_list_bytes(count);
    SYSTOLE_RETURN_IF_ERROR(memory_->ensure(memory_->commands(), bytes));
    encode_command_list(&records[first], count, memory_->commands().buffer.map<uint8_t>());
    SYSTOLE_RETURN_IF_ERROR(memory_->commands().buffer.sync(Buffer::SyncDirection::kToDevice, bytes, 0));
    upload.reset();
    const Clock::time_point started = Clock::now();
    auto run = device_.start(unit_, memory_->commands().buffer);
    if (!run.ok()) return run.status();
    ++launches_;
    const Status done = run->wait(timeout_);
    if (done.code() == StatusCode::kTimeout)
      return Status(StatusCode::kTimeout, "compute unit " + std::to_string(unit_) + ": launch " +
                                              std::to_string(launches_) + " did not finish within " +
                                              std::to_string(timeout_.count()) + " ms");
    SYSTOLE_RETURN_IF_ERROR(done);
    const Clock::time_point finished = Clock::now();
    launch_seconds += std::chrono::duration<double>(finished - started).count();
    const spec::PerfCounters counters = run->counters();
    counters_ += counters;
    if (trace) {
      trace->span("launch", "device", track, started, finished,
                  {{"launch", double(launches_)},
                   {"descriptors", double(counters.descriptors_done)},
                   {"busy_cycles", double(counters.busy_cycles)},
                   {"stall_cycles", double(counters.stall_cycles)},
                   {"macs", double(counters.macs)},
                   {"dma_read_bytes", double(counters.dma_read_bytes)},
                   {"dma_write_bytes", double(counters.dma_write_bytes)}});
    }
  }
  return ok_status();
}

}  // namespace systole
