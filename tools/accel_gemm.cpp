// SPDX-License-Identifier: Apache-2.0
// accel_gemm: multiplies random or .npy matrices of any shape on a Systole
// device, checks the result bit for bit against the HLS kernel (the
// executable spec) and against fp64 on sampled entries, and prints time,
// GFLOP/s and the device's performance counters.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>
#include <xtensor/xadapt.hpp>
#include <xtensor/xnpy.hpp>

#include "guarded_main.h"
#include "npy_matrix.h"
#include "systole/boards.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/numerics.h"
#include "systole/output_file.h"

namespace {

using namespace systole;
using Clock = std::chrono::steady_clock;

struct Options {
  uint32_t m = 1024, n = 1024, k = 1024;
  std::string a_path, b_path, out_path;
  bool bias = false, relu = false, output_bf16 = false;
  std::string backend = "sw_emu";
  std::string device = "0";  // an index, or the uart backend's serial port
  uint32_t baud = 115200;
  std::string array = "128x128";
  std::string engine = "fast";
  std::string xclbin;
  std::string trace_fst;
  uint32_t units = 1, threads = 0, repeat = 3, seed = 1;
  std::string verify = "auto";
  PerfOptions perf;
};

// The operands on the host: A, B as bf16 bits, bias as fp32.
struct HostGemm {
  uint32_t m = 0, n = 0, k = 0;
  std::vector<uint16_t> a, b;
  std::vector<float> bias;
};

Result<std::vector<uint16_t>> load_matrix(const std::string& path, const char* name, uint32_t& rows,
                                          uint32_t& cols) {
  auto matrix = tools::read_npy_matrix(path);
  if (!matrix.ok())
    return Status(matrix.status().code(), std::string(name) + ": " + matrix.status().message());
  rows = matrix->rows;
  cols = matrix->cols;
  std::vector<uint16_t> bits(matrix->values.size());
  std::transform(matrix->values.begin(), matrix->values.end(), bits.begin(),
                 [](float v) { return numerics::f32_to_bf16(v); });
  return bits;
}

Result<HostGemm> make_operands(const Options& options) {
  HostGemm gemm;
  std::mt19937 rng(options.seed);
  std::normal_distribution<float> normal;
  if (!options.a_path.empty() || !options.b_path.empty()) {
    if (options.a_path.empty() || options.b_path.empty())
      return Status(StatusCode::kInvalidArgument, "--a and --b go together");
    uint32_t a_cols = 0, b_rows = 0;
    auto a = load_matrix(options.a_path, "--a", gemm.m, a_cols);
    if (!a.ok()) return a.status();
    auto b = load_matrix(options.b_path, "--b", b_rows, gemm.n);
    if (!b.ok()) return b.status();
    if (a_cols != b_rows)
      return Status(StatusCode::kInvalidArgument, "--a is " + std::to_string(gemm.m) + "x" +
                                                      std::to_string(a_cols) + " but --b is " +
                                                      std::to_string(b_rows) + "x" + std::to_string(gemm.n) +
                                                      ": A's columns must equal B's rows");
    gemm.k = a_cols;
    gemm.a = std::move(a).value();
    gemm.b = std::move(b).value();
  } else {
    gemm.m = options.m;
    gemm.n = options.n;
    gemm.k = options.k;
    gemm.a.resize(uint64_t(gemm.m) * gemm.k);
    gemm.b.resize(uint64_t(gemm.k) * gemm.n);
    for (uint16_t& v : gemm.a) v = numerics::f32_to_bf16(normal(rng));
    for (uint16_t& v : gemm.b) v = numerics::f32_to_bf16(normal(rng));
  }
  if (options.bias) {
    gemm.bias.resize(gemm.n);
    for (float& v : gemm.bias) v = normal(rng);
  }
  return gemm;
}

// A GEMM resident on a device, split by rows across its compute units.
class DeviceGemm {
 public:
  static Result<DeviceGemm> create(Device device, const HostGemm& gemm, const Options& options) {
    DeviceGemm d;
    d.device_ = device;
    d.m_ = gemm.m;
    d.n_ = gemm.n;
    d.c_bytes_ = options.output_bf16 ? 2 : 4;
    const DeviceInfo& info = device.info();
    // A, B, C and bias in separate banks where there are enough (separate
    // pseudo-channels), the command lists in the banks after them; a small
    // board has one bank for all.
    const uint32_t banks = info.hbm_banks;
    auto a = device.allocate(gemm.a.size() * 2, 0);
    auto b = device.allocate(gemm.b.size() * 2, 1 % banks);
    auto c = device.allocate(uint64_t(gemm.m) * gemm.n * d.c_bytes_, 2 % banks);
    auto bias = device.allocate(std::max<std::size_t>(gemm.n * 4, 4), 3 % banks);
    for (auto* r : {&a, &b, &c, &bias})
      if (!r->ok()) return r->status();
    // Every buffer the command lists reference lives as long as this object.
    d.operands_ = {a.value(), b.value(), bias.value()};
    d.c_ = c.value();
    SYSTOLE_RETURN_IF_ERROR(upload(*a, gemm.a.data(), gemm.a.size() * 2));
    SYSTOLE_RETURN_IF_ERROR(upload(*b, gemm.b.data(), gemm.b.size() * 2));
    if (!gemm.bias.empty()) SYSTOLE_RETURN_IF_ERROR(upload(*bias, gemm.bias.data(), gemm.bias.size() * 4));

    const uint32_t units = std::min(info.compute_units, gemm.m);
    for (uint32_t unit = 0; unit < units; ++unit) {
      const uint32_t row0 = uint32_t(uint64_t(gemm.m) * unit / units);
      const uint32_t row1 = uint32_t(uint64_t(gemm.m) * (unit + 1) / units);
      GemmProblem problem;
      problem.m = row1 - row0;
      problem.n = gemm.n;
      problem.k = gemm.k;
      problem.a = {a->address() + uint64_t(row0) * gemm.k * 2, gemm.k};
      problem.b = {b->address(), gemm.n};
      problem.c = {d.c_.address() + uint64_t(row0) * gemm.n * d.c_bytes_, gemm.n};
      problem.bias = options.bias;
      problem.bias_address = bias->address();
      problem.relu = options.relu;
      problem.output_bf16 = options.output_bf16;
      auto descriptors = plan_gemm(info, problem);
      if (!descriptors.ok()) return descriptors.status();
      d.descriptors_ += descriptors->size();
      std::vector<Buffer> lists;
      for (const auto& list : encode_command_lists(*descriptors, info.max_descriptors)) {
        auto buffer = device.allocate(list.size(), banks > 4 ? 4 + unit % (banks - 4) : 3 % banks);
        if (!buffer.ok()) return buffer.status();
        SYSTOLE_RETURN_IF_ERROR(upload(*buffer, list.data(), list.size()));
        lists.push_back(std::move(buffer).value());
      }
      d.lists_.push_back(std::move(lists));
    }
    return d;
  }

  // Runs every unit's command lists (units in parallel, lists in order).
  Status run(spec::PerfCounters& total) {
    total = spec::PerfCounters();
    for (std::size_t step = 0;; ++step) {
      std::vector<std::pair<uint32_t, Run>> runs;
      for (uint32_t unit = 0; unit < lists_.size(); ++unit) {
        if (step >= lists_[unit].size()) continue;
        auto run = device_.start(unit, lists_[unit][step]);
        if (!run.ok()) return run.status();
        runs.emplace_back(unit, std::move(run).value());
      }
      if (runs.empty()) return ok_status();
      for (auto& [unit, run] : runs) {
        const Status status = run.wait(std::chrono::minutes(30));
        if (!status.ok())
          return Status(status.code(), "compute unit " + std::to_string(unit) + ": " + status.message());
        const spec::PerfCounters c = run.counters();
        total.busy_cycles = std::max(total.busy_cycles, c.busy_cycles);
        total.macs += c.macs;
        total.dma_read_bytes += c.dma_read_bytes;
        total.dma_write_bytes += c.dma_write_bytes;
        total.stall_cycles += c.stall_cycles;
        total.descriptors_done += c.descriptors_done;
      }
    }
  }

  Result<std::vector<uint8_t>> result() {
    std::vector<uint8_t> bytes(uint64_t(m_) * n_ * c_bytes_);
    SYSTOLE_RETURN_IF_ERROR(c_.sync(Buffer::SyncDirection::kFromDevice));
    SYSTOLE_RETURN_IF_ERROR(c_.read(bytes.data(), bytes.size()));
    return bytes;
  }

  std::size_t descriptors() const { return descriptors_; }

 private:
  static Status upload(Buffer& buffer, const void* data, std::size_t bytes) {
    SYSTOLE_RETURN_IF_ERROR(buffer.write(data, bytes));
    return buffer.sync(Buffer::SyncDirection::kToDevice);
  }

  Device device_;
  std::vector<Buffer> operands_;  // A, B, bias
  Buffer c_;
  uint32_t m_ = 0, n_ = 0, c_bytes_ = 4;
  std::vector<std::vector<Buffer>> lists_;
  std::size_t descriptors_ = 0;
};

float output_value(const std::vector<uint8_t>& c, uint64_t index, bool bf16) {
  if (bf16) {
    uint16_t bits;
    std::memcpy(&bits, c.data() + index * 2, 2);
    return numerics::bf16_to_f32(bits);
  }
  float value;
  std::memcpy(&value, c.data() + index * 4, 4);
  return value;
}

// Largest error over sampled entries against fp64 on the same bf16 inputs,
// relative to sum |a||b| (the scale of the rounding errors).
double sampled_error(const HostGemm& gemm, const std::vector<uint8_t>& c, const Options& options) {
  std::mt19937 rng(options.seed + 1);
  double worst = 0;
  for (int sample = 0; sample < 2000; ++sample) {
    const uint32_t i = rng() % gemm.m, j = rng() % gemm.n;
    double exact = 0, scale = 0;
    for (uint32_t p = 0; p < gemm.k; ++p) {
      const double a = numerics::bf16_to_f32(gemm.a[uint64_t(i) * gemm.k + p]);
      const double b = numerics::bf16_to_f32(gemm.b[uint64_t(p) * gemm.n + j]);
      exact += a * b;
      scale += std::fabs(a * b);
    }
    if (!gemm.bias.empty()) {
      exact += gemm.bias[j];
      scale += std::fabs(gemm.bias[j]);
    }
    if (options.relu) exact = std::max(exact, 0.0);
    const double got = output_value(c, uint64_t(i) * gemm.n + j, options.output_bf16);
    worst = std::max(worst, std::fabs(got - exact) / std::max(scale, 1e-30));
  }
  return worst;
}

Status write_npy(const std::string& path, const std::vector<uint8_t>& c, const HostGemm& gemm, bool bf16) {
  std::vector<float> values(uint64_t(gemm.m) * gemm.n);
  for (uint64_t i = 0; i < values.size(); ++i) values[i] = output_value(c, i, bf16);
  const std::string npy = xt::dump_npy(xt::adapt(values, std::vector<std::size_t>{gemm.m, gemm.n}));
  auto file = OutputFile::create(path);
  if (!file.ok()) return Status(file.status().code(), "--out: " + file.status().message());
  Status status = file->write(npy.data(), npy.size());
  if (status.ok()) status = file->commit();
  if (!status.ok()) return Status(status.code(), "--out: " + status.message());
  return ok_status();
}

int run(const Options& options) {
  auto fail = [](const Status& status) {
    std::fprintf(stderr, "accel_gemm: %s\n", status.to_string().c_str());
    return 2;
  };
  auto shape = parse_array_shape(options.array);
  if (!shape.ok()) return fail(Status(shape.status().code(), "--array: " + shape.status().message()));
  if (options.engine != "fast" && options.engine != "hls")
    return fail(
        Status(StatusCode::kInvalidArgument, "--engine: expected fast or hls, got '" + options.engine + "'"));
  if (options.verify != "auto" && options.verify != "full" && options.verify != "none")
    return fail(Status(StatusCode::kInvalidArgument,
                       "--verify: expected auto, full or none, got '" + options.verify + "'"));
  auto gemm = make_operands(options);
  if (!gemm.ok()) return fail(gemm.status());

  DeviceOptions device_options;
  device_options.array_rows = shape->rows;
  device_options.array_cols = shape->cols;
  device_options.compute_units = options.units;
  device_options.threads_per_unit = options.threads;
  device_options.engine = options.engine == "hls" ? EmuEngine::kHls : EmuEngine::kFast;
  device_options.xclbin = options.xclbin;
  device_options.hw_emu.trace_fst = options.trace_fst;
  device_options.perf = options.perf;
  device_options.uart.baud = options.baud;
  uint32_t device_index = 0;
  const Status device_status = parse_device(options.device, &device_index, &device_options);
  if (!device_status.ok()) return fail(device_status);
  auto device = Device::open(options.backend, device_index, device_options);
  if (!device.ok()) return fail(device.status());
  auto device_gemm = DeviceGemm::create(*device, *gemm, options);
  if (!device_gemm.ok()) return fail(device_gemm.status());

  const DeviceInfo& info = device->info();
  std::printf("device   %s, %u compute unit(s), limits M<=%u N<=%u K<=%u\n", info.name.c_str(),
              info.compute_units, info.max_m, info.max_n, info.max_k);
  std::printf("gemm     C[%ux%u] = A[%ux%u] * B[%ux%u]%s%s, %s output, %zu descriptors\n", gemm->m, gemm->n,
              gemm->m, gemm->k, gemm->k, gemm->n, options.bias ? " + bias" : "", options.relu ? ", ReLU" : "",
              options.output_bf16 ? "bf16" : "fp32", device_gemm->descriptors());

  spec::PerfCounters counters;
  double best = 1e30;
  const std::optional<CardModel> model = device->card_model();
  std::optional<Projection> before;
  for (uint32_t i = 0; i < std::max(1u, options.repeat); ++i) {
    if (model) before = model->projection();
    const auto start = Clock::now();
    const Status status = device_gemm->run(counters);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (!status.ok()) return fail(status);
    best = std::min(best, seconds);
  }
  const double flops = 2.0 * gemm->m * gemm->n * gemm->k;
  std::printf("time     %.3f ms (best of %u) on this machine, %.1f GFLOP/s\n", best * 1e3,
              std::max(1u, options.repeat), flops / best * 1e-9);
  std::printf("counters busy_cycles=%llu macs=%llu dma_read=%llu B dma_write=%llu B stalls=%llu\n",
              (unsigned long long)counters.busy_cycles, (unsigned long long)counters.macs,
              (unsigned long long)counters.dma_read_bytes, (unsigned long long)counters.dma_write_bytes,
              (unsigned long long)counters.stall_cycles);
  if (counters.busy_cycles > 0)
    std::printf("         array utilization %.1f%% (%s)\n",
                100.0 * double(counters.macs) / options.units /
                    (double(counters.busy_cycles) * info.shape.rows * info.shape.cols),
                options.backend == "sw_emu" ? "sw_emu: modelled schedule, no memory stalls"
                : options.backend == "perf" ? "the RTL controller's cycle model on the board's memory"
                                            : "measured");
  if (model) {
    // The last run, as the board would take it: its syncs and launches.
    const Projection p = model->projection().since(*before);
    std::printf("project  %s (a projection, not a measurement)\n", p.board.c_str());
    std::printf(
        "         %.3f ms per GEMM, %.1f GFLOP/s: launches %.3f ms (array utilization %.1f%%), "
        "host link %.3f ms; bound by %s\n",
        p.seconds * 1e3, flops / p.seconds * 1e-9, p.launch_seconds * 1e3, 100.0 * p.utilization(),
        p.link_seconds * 1e3, p.bound());
  } else if (options.backend == "hw_emu" && counters.busy_cycles > 0) {
    std::printf("         at 300 MHz the RTL's %llu cycles take %.3f ms: %.1f GFLOP/s in the kernel\n",
                (unsigned long long)counters.busy_cycles, counters.busy_cycles / 300e6 * 1e3,
                flops / (counters.busy_cycles / 300e6) * 1e-9 / options.units);
  }

  auto result = device_gemm->result();
  if (!result.ok()) return fail(result.status());
  int exit_code = 0;
  const bool spec_check =
      options.verify == "full" ||
      (options.verify == "auto" && flops <= 8e9 && !(options.backend == "sw_emu" && options.engine == "hls"));
  if (spec_check) {
    DeviceOptions spec_options = device_options;
    spec_options.engine = EmuEngine::kHls;
    spec_options.compute_units = 1;
    spec_options.array_rows = info.shape.rows;  // a board's own array (uart: 1x1)
    spec_options.array_cols = info.shape.cols;
    auto spec_device = Device::open("sw_emu", 0, spec_options);
    if (!spec_device.ok()) return fail(spec_device.status());
    auto spec_gemm = DeviceGemm::create(*spec_device, *gemm, options);
    if (!spec_gemm.ok()) return fail(spec_gemm.status());
    spec::PerfCounters ignored;
    const Status status = spec_gemm->run(ignored);
    if (!status.ok()) return fail(status);
    auto expected = spec_gemm->result();
    if (!expected.ok()) return fail(expected.status());
    const std::size_t same =
        std::mismatch(result->begin(), result->end(), expected->begin()).first - result->begin();
    if (same == result->size()) {
      std::printf("verify   bit-exact against the HLS kernel (sw_emu hls, same array)\n");
    } else {
      std::printf("verify   MISMATCH against the HLS kernel at output element %zu\n",
                  same / (options.output_bf16 ? 2 : 4));
      exit_code = 1;
    }
  } else if (options.verify == "auto") {
    std::printf("verify   bit-exact check skipped above 8 GFLOP (use --verify full)\n");
  }
  if (options.verify != "none") {
    const double error = sampled_error(*gemm, *result, options);
    // bf16 output rounds to 2^-9 relative; fp32 accumulation stays far below.
    const double bound = options.output_bf16 ? 1.0 / 256 : 1e-5;
    std::printf("verify   max error vs fp64 on 2000 sampled entries: %.2e of sum|a*b| (bound %.0e)\n", error,
                bound);
    if (!(error <= bound)) exit_code = 1;
  }
  if (!options.out_path.empty()) {
    const Status status = write_npy(options.out_path, *result, *gemm, options.output_bf16);
    if (!status.ok()) return fail(status);
    std::printf("wrote    %s\n", options.out_path.c_str());
  }
  return exit_code;
}

}  // namespace

int tool_main(int argc, char** argv) {
  CLI::App app{"Multiply matrices on a Systole device and check the result."};
  Options options;
  app.add_option("--m", options.m, "rows of A and C (random operands)")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--n", options.n, "columns of B and C (random operands)")->check(CLI::Range(1u, 1u << 20));
  app.add_option("--k", options.k, "columns of A, rows of B (random operands)")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_option("--a", options.a_path, "A as a float32 .npy file (rounded to bf16)");
  app.add_option("--b", options.b_path, "B as a float32 .npy file (rounded to bf16)");
  app.add_option("--out", options.out_path, "write C as a float32 .npy file");
  app.add_flag("--bias", options.bias, "add a random fp32 bias per column");
  app.add_flag("--relu", options.relu, "apply ReLU");
  app.add_flag("--bf16-out", options.output_bf16, "bf16 output (else fp32)");
  app.add_option("--backend", options.backend, "sw_emu, hw_emu, xrt, perf or uart (as this build has them)");
  std::string boards;
  for (const spec::Board& board : spec::kBoards)
    boards += (boards.empty() ? "" : ", ") + std::string(board.name);
  app.add_option("--board", options.perf.board, "perf: the board modelled (" + boards + ")");
  app.add_option("--clock-mhz", options.perf.clock_mhz, "perf: kernel clock (default: the board's)");
  app.add_option("--pcie-gen", options.perf.pcie_gen, "perf: PCIe generation (default: the board's)");
  app.add_option("--pcie-lanes", options.perf.pcie_lanes, "perf: PCIe lanes (default: the board's)");
  app.add_option("--xclbin", options.xclbin, "xrt: the bitstream to load");
  app.add_option("--trace-fst", options.trace_fst, "hw_emu: write an FST waveform of the run here");
  app.add_option("--device", options.device,
                 "device index, or the uart backend's serial port (/dev/ttyUSB1)");
  app.add_option("--baud", options.baud, "uart: the serial link's baud rate");
  app.add_option("--array", options.array, "array size of an emulated device, ROWSxCOLS");
  app.add_option("--engine", options.engine, "sw_emu engine: fast or hls");
  app.add_option("--units", options.units, "compute units (array instances); rows are split")
      ->check(CLI::Range(1u, 64u));
  app.add_option("--threads", options.threads, "threads per unit (fast engine); 0 = cores / units");
  app.add_option("--repeat", options.repeat, "timed runs; the best is reported");
  app.add_option("--seed", options.seed, "seed of the random operands");
  app.add_option("--verify", options.verify, "auto, full or none");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help exits 0; every usage error exits 2, like every input error.
    return app.exit(e) == 0 ? 0 : 2;
  }
  return run(options);
}

int main(int argc, char** argv) { return systole::tools::guarded_main("accel_gemm", tool_main, argc, argv); }
