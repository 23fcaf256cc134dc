// SPDX-License-Identifier: Apache-2.0
// Matrix products on a compute unit: operands to bf16 (transposing on the
// way), staged in the unit's banks, tiled by plan_gemm, one launch per call
// list.
#include <algorithm>
#include <cstring>
#include <optional>

#include "systole/boards.h"
#include "systole/matmul.h"
#include "systole/numerics.h"
#include "systole/trace.h"

namespace systole {
namespace {

// Unit u keeps its buffers in banks 4u .. 4u+3 (the banks Makefile.fpga
// connects to its ports): A, B, C and the command list each in their own
// (spec::operand_bank).
using spec::Operand;

// f32_to_bf16 of `rows` rows of `cols` values, `stride` apart, into
// `out` packed. Compiled twice, and picked by the CPU at load time: the
// conversion vectorises 8 values wide with AVX2 (2x the baseline's 4).
__attribute__((target_clones("avx2", "default"))) void convert_rows(const float* x, uint32_t rows,
                                                                    uint32_t cols, uint32_t stride,
                                                                    uint16_t* out) {
  if (stride == cols) {
    numerics::f32_to_bf16_array(x, out, std::size_t(rows) * cols);
    return;
  }
  for (uint32_t r = 0; r < rows; ++r)
    numerics::f32_to_bf16_array(x + std::size_t(r) * stride, out + std::size_t(r) * cols, cols);
}

// rows x cols of op(X) as bf16, row-major, from X (rows x cols, or cols x
// rows when transposed; `stride` elements from one stored row to the next).
// A transpose goes through `scratch` in fp32 so that the conversion runs
// over contiguous arrays.
void to_bf16(const float* x, uint32_t rows, uint32_t cols, bool transposed, uint32_t stride,
             std::vector<float>& scratch, uint16_t* out) {
  if (transposed) {
    scratch.resize(std::size_t(rows) * cols);
    // Blocks of columns: the writes run along rows, and the block's
    // strided reads stay in L1.
    constexpr uint32_t kBlock = 64;
    for (uint32_t c0 = 0; c0 < cols; c0 += kBlock) {
      const uint32_t c1 = std::min(cols, c0 + kBlock);
      for (uint32_t r = 0; r < rows; ++r)
        for (uint32_t c = c0; c < c1; ++c)
          scratch[std::size_t(r) * cols + c] = x[std::size_t(c) * stride + r];
    }
    x = scratch.data();
    stride = cols;
  }
  convert_rows(x, rows, cols, stride, out);
}

}  // namespace

void round_to_bf16(const float* in, std::size_t count, uint16_t* out) {
  // One row: convert_rows takes 32-bit sizes.
  constexpr std::size_t kPiece = std::size_t(1) << 30;
  for (std::size_t done = 0; done < count; done += kPiece) {
    const uint32_t piece = uint32_t(std::min(kPiece, count - done));
    convert_rows(in + done, 1, piece, piece, out + done);
  }
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
  matmul->commands_.bank = spec::operand_bank(unit, Operand::kCommands, device.info().hbm_banks);
  return matmul;
}

Status DeviceMatmul::ensure(Slot& slot, std::size_t bytes) {
  if (slot.buffer && slot.buffer.size() >= bytes) return ok_status();
  // Grow by half again, so that a run of slightly larger calls does not
  // reallocate every time.
  const std::size_t size = std::max(bytes, slot.buffer ? slot.buffer.size() * 3 / 2 : bytes);
  slot.buffer = Buffer();
  auto buffer = device_.allocate(size, slot.bank);
  if (!buffer.ok()) return buffer.status();
  slot.buffer = std::move(buffer).value();
  return ok_status();
}

Result<uint64_t> DeviceMatmul::stage(Slot& slot, const float* x, const OperandRows* made, uint32_t rows,
                                     uint32_t cols, bool transposed, uint32_t stride) {
  const std::size_t bytes = std::size_t(rows) * cols * sizeof(uint16_t);
  SYSTOLE_RETURN_IF_ERROR(ensure(slot, bytes));
  // Written straight into the buffer's host view: on the emulators that is
  // device memory, and the sync moves nothing.
  uint16_t* view = slot.buffer.map<uint16_t>();
  if (made)
    made->bf16(view);
  else
    to_bf16(x, rows, cols, transposed, stride, transposed_, view);
  SYSTOLE_RETURN_IF_ERROR(slot.buffer.sync(Buffer::SyncDirection::kToDevice, bytes, 0));
  return slot.buffer.address();
}

Status DeviceMatmul::run(const std::vector<MatmulCall>& calls) {
  const DeviceInfo& info = device_.info();
  const uint32_t banks = info.hbm_banks;
  while (a_.size() < calls.size()) {
    a_.push_back({Buffer(), spec::operand_bank(unit_, Operand::kA, banks)});
    b_.push_back({Buffer(), spec::operand_bank(unit_, Operand::kB, banks)});
    c_.push_back({Buffer(), spec::operand_bank(unit_, Operand::kC, banks)});
  }
  using Clock = Trace::Clock;
  const Clock::time_point begun = Clock::now();
  double launch_seconds = 0;
  Trace* trace = Trace::installed();
  const uint32_t track = Trace::unit_track(unit_);
  std::vector<spec::GemmDescriptor> descriptors;
  std::optional<TraceScope> upload(std::in_place, "upload", "device", track);  // until the first launch
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const MatmulCall& call = calls[i];
    if (!(call.a || call.a_rows) || !(call.b || call.b_rows) || !call.c)
      return Status(StatusCode::kInvalidArgument, "matmul: an operand is missing");
    if ((call.a_rows && call.a_transposed) || (call.b_rows && call.b_transposed))
      return Status(StatusCode::kInvalidArgument, "matmul: an operand given as rows is not transposed");
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
    problem.bias = call.bias != nullptr;
    problem.relu = call.relu;
    problem.accumulate = call.accumulate;

    auto a = stage(a_[i], call.a, call.a_rows, call.m, call.k, call.a_transposed, call.a_stride());
    if (!a.ok()) return a.status();
    problem.a = {*a, call.k};

    auto b = stage(b_[i], call.b, call.b_rows, call.k, call.n, call.b_transposed, call.b_stride());
    if (!b.ok()) return b.status();
    problem.b = {*b, call.n};

    // C, then the bias behind it; C is uploaded only when accumulated into.
    const std::size_t c_bytes = std::size_t(call.m) * call.n * sizeof(float);
    SYSTOLE_RETURN_IF_ERROR(ensure(c_[i], c_bytes + (call.bias ? call.n * sizeof(float) : 0)));
    Buffer* c = &c_[i].buffer;
    if (call.accumulate) {
      SYSTOLE_RETURN_IF_ERROR(c->write(call.c, c_bytes));
      SYSTOLE_RETURN_IF_ERROR(c->sync(Buffer::SyncDirection::kToDevice, c_bytes, 0));
    }
    if (call.bias) {
      SYSTOLE_RETURN_IF_ERROR(c->write(call.bias, call.n * sizeof(float), c_bytes));
      SYSTOLE_RETURN_IF_ERROR(c->sync(Buffer::SyncDirection::kToDevice, call.n * sizeof(float), c_bytes));
    }
    problem.c = {c->address(), call.n};
    problem.bias_address = c->address() + c_bytes;

    auto planned = plan_gemm(info, problem);
    if (!planned.ok()) return planned.status();
    descriptors.insert(descriptors.end(), planned->begin(), planned->end());
  }

  for (const std::vector<uint8_t>& list : encode_command_lists(descriptors, info.max_descriptors)) {
    SYSTOLE_RETURN_IF_ERROR(ensure(commands_, list.size()));
    SYSTOLE_RETURN_IF_ERROR(commands_.buffer.write(list.data(), list.size()));
    SYSTOLE_RETURN_IF_ERROR(commands_.buffer.sync(Buffer::SyncDirection::kToDevice, list.size(), 0));
    upload.reset();
    const Clock::time_point started = Clock::now();
    auto run = device_.start(unit_, commands_.buffer);
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

  TraceScope download("download", "device", track);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const std::size_t bytes = std::size_t(calls[i].m) * calls[i].n * sizeof(float);
    SYSTOLE_RETURN_IF_ERROR(c_[i].buffer.sync(Buffer::SyncDirection::kFromDevice, bytes, 0));
    SYSTOLE_RETURN_IF_ERROR(c_[i].buffer.read(calls[i].c, bytes));
  }
  times_.launch_seconds += launch_seconds;
  times_.staging_seconds += std::chrono::duration<double>(Clock::now() - begun).count() - launch_seconds;
  return ok_status();
}

}  // namespace systole
