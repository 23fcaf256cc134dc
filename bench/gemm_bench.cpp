// SPDX-License-Identifier: Apache-2.0
// GEMM throughput of the sw_emu fast engine against two fp32 GEMMs measured
// in the same process: OpenBLAS's sgemm (through libblas.so.3, the BLAS
// Debian's PyTorch multiplies with) and Eigen's. Our side is timed as a
// layer sees it, from fp32 host operands to the fp32 result (DeviceMatmul:
// rounding to bf16, staging, packing and the bit-exact products included),
// on square sizes and the shapes the shipped models produce, on 1 and 2
// threads; the kernel alone (operands resident in device memory) too. The
// CPU's fp32 FMA peak is measured with a loop of independent FMAs, so each
// result is also a fraction of what this machine can do. Each of the three
// runs in a process of its own, forked before any thread exists: the idle
// threads of one library (OpenBLAS's spin before they sleep, an active
// OpenMP's spin for good) would otherwise take a core from the next.
// Prints a table and FIGURE lines.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <immintrin.h>
#include <omp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <Eigen/Dense>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "collector.h"
#include "fast_gemm.h"
#include "systole/driver.h"
#include "systole/gemm_plan.h"
#include "systole/matmul.h"

namespace {

using namespace systole;

struct Shape {
  const char* name;
  int m, n, k;
};
// Squares, then the shipped models' products (per replica of 2, the MLP's
// batch of 64; the CNNs' im2col products at their first and second
// convolution; the 10-logit layer; a weight gradient, tall and thin; the
// TPU guide CNN's second convolution on a chunk of 16 examples, as the
// layer splits a replica's 64 at the 128x128 array's K block: forward,
// weight gradient, input gradient).
constexpr Shape kShapes[] = {
    {"square 256", 256, 256, 256},          {"square 512", 512, 512, 512},
    {"square 1024", 1024, 1024, 1024},      {"square 2048", 2048, 2048, 2048},
    {"mlp dense 784->256", 64, 256, 784},   {"mlp dW 784x256", 784, 256, 64},
    {"logits 128->10", 64, 10, 128},        {"conv1 im2col K=9", 25088, 32, 9},
    {"conv2 im2col K=288", 21632, 64, 288}, {"cnn dense 1600->64", 128, 64, 1600},
    {"tpu conv2 forward", 9216, 256, 2304}, {"tpu conv2 dW", 256, 2304, 9216},
    {"tpu conv2 dX", 9216, 2304, 256},
};
constexpr int kShapeCount = int(sizeof kShapes / sizeof kShapes[0]);

void set_flops(benchmark::State& state, const Shape& s) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * s.m * s.n * s.k * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

std::vector<float> random_matrix(std::size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> values(count);
  for (float& v : values) v = normal(rng);
  return values;
}

// A shape's fp32 host operands (the same values for every library) and
// the call that multiplies them on a device.
struct HostProduct {
  std::vector<float> a, b, c;
  MatmulCall call;

  explicit HostProduct(const Shape& s)
      : a(random_matrix(std::size_t(s.m) * s.k, 1)),
        b(random_matrix(std::size_t(s.k) * s.n, 2)),
        c(std::size_t(s.m) * s.n) {
    call.m = uint32_t(s.m);
    call.n = uint32_t(s.n);
    call.k = uint32_t(s.k);
    call.a = a.data();
    call.b = b.data();
    call.c = c.data();
  }
  HostProduct(const HostProduct&) = delete;
  HostProduct& operator=(const HostProduct&) = delete;
};

void check(const Status& status) {
  if (!status.ok()) {
    std::fprintf(stderr, "gemm_bench: %s\n", status.to_string().c_str());
    std::abort();
  }
}

// OpenBLAS, found at run time through libblas.so.3 (Debian's alternative);
// absent when that BLAS is not OpenBLAS. Measured at its best: the
// environment's OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (which some machines
// set for older OpenBLAS builds) are removed before it loads, in the
// benchmark's process of its own, so that it runs the kernel it picks for
// the CPU it detects; that kernel's sgemm is then checked against an fp64
// product, and refused if it is wrong.
struct OpenBlas {
  using Sgemm = void (*)(int, int, int, int, int, int, float, const float*, int, const float*, int, float,
                         float*, int);
  using SetThreads = void (*)(int);
  using Text = const char* (*)();
  Sgemm sgemm = nullptr;
  SetThreads set_threads = nullptr;
  std::string why_not, kernel, removed;

  OpenBlas() {
    for (const char* name : {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"})
      if (const char* value = std::getenv(name)) {
        removed += std::string(removed.empty() ? "" : ", ") + name + "=" + value;
        unsetenv(name);
      }
    void* library = dlopen("libblas.so.3", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      why_not = std::string("cannot open libblas.so.3: ") + dlerror();
      return;
    }
    set_threads = reinterpret_cast<SetThreads>(dlsym(library, "openblas_set_num_threads"));
    sgemm = reinterpret_cast<Sgemm>(dlsym(library, "cblas_sgemm"));
    const auto corename = reinterpret_cast<Text>(dlsym(library, "openblas_get_corename"));
    const auto config = reinterpret_cast<Text>(dlsym(library, "openblas_get_config"));
    if (!set_threads || !sgemm || !corename || !config) {
      why_not = "libblas.so.3 is not OpenBLAS (install libopenblas0-pthread: scripts/install-deps bench)";
      sgemm = nullptr;
      return;
    }
    kernel = std::string(corename()) + " (" + config() + ")";
    if (const std::string wrong = check(); !wrong.empty()) {
      why_not = "OpenBLAS's " + kernel + " sgemm is wrong: " + wrong;
      sgemm = nullptr;
    }
  }

  // Where a 200 x 300 x 257 sgemm on both thread counts strays from the
  // fp64 product by more than fp32's rounding of the K terms could
  // (gamma_K of the sum of magnitudes, twice); "" when it never does.
  std::string check() const {
    constexpr int m = 200, k = 300, n = 257;
    std::mt19937 rng(3);
    std::normal_distribution<float> normal;
    std::vector<float> a(m * k), b(k * n), c(m * n);
    for (float& x : a) x = normal(rng);
    for (float& x : b) x = normal(rng);
    const double gamma = 2 * k * 0x1p-24 / (1 - k * 0x1p-24);
    for (int threads : {1, 2}) {
      set_threads(threads);
      sgemm(kRowMajor, kNoTrans, kNoTrans, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
      for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int p = 0; p < k; ++p) {
            exact += double(a[i * k + p]) * b[p * n + j];
            magnitude += std::fabs(double(a[i * k + p]) * b[p * n + j]);
          }
          if (std::fabs(c[i * n + j] - exact) > gamma * magnitude)
            return "C[" + std::to_string(i) + "][" + std::to_string(j) + "] on " + std::to_string(threads) +
                   " threads is " + std::to_string(c[i * n + j]) + ", exactly " + std::to_string(exact);
        }
    }
    return "";
  }
  static constexpr int kRowMajor = 101, kNoTrans = 111;
};
const OpenBlas& openblas() {
  static const OpenBlas blas;
  return blas;
}
constexpr int kCblasRowMajor = OpenBlas::kRowMajor, kCblasNoTrans = OpenBlas::kNoTrans;

void BM_OpenBlas(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  const OpenBlas& blas = openblas();
  if (!blas.sgemm) {
    state.SkipWithError(blas.why_not.c_str());
    return;
  }
  blas.set_threads(int(state.range(1)));
  HostProduct p(s);
  for (auto _ : state) {
    blas.sgemm(kCblasRowMajor, kCblasNoTrans, kCblasNoTrans, s.m, s.n, s.k, 1.0f, p.a.data(), s.k, p.b.data(),
               s.n, 0.0f, p.c.data(), s.n);
    benchmark::DoNotOptimize(p.c.data());
  }
  set_flops(state, s);
}

void BM_Eigen(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  Eigen::setNbThreads(int(state.range(1)));
  using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const RowMajor a = RowMajor::Random(s.m, s.k), b = RowMajor::Random(s.k, s.n);
  RowMajor c(s.m, s.n);
  for (auto _ : state) {
    c.noalias() = a * b;
    benchmark::DoNotOptimize(c.data());
  }
  set_flops(state, s);
}

Device open_fast(uint32_t threads) {
  DeviceOptions options;
  options.engine = EmuEngine::kFast;
  options.threads_per_unit = threads;
  return Device::open("sw_emu", 0, options).value();
}

// A layer's product: fp32 host operands to the fp32 result.
void BM_Systole(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  auto matmul = DeviceMatmul::create(open_fast(uint32_t(state.range(1))), 0, std::chrono::minutes(10));
  check(matmul.status());
  const HostProduct p(s);
  check((*matmul)->run(p.call));  // warm: buffers allocated and first touched
  for (auto _ : state) check((*matmul)->run(p.call));
  set_flops(state, s);
}

// The kernel alone: bf16 operands resident in device memory, the command
// list ready, as a board would have them.
void BM_SystoleKernel(benchmark::State& state) {
  const Shape& s = kShapes[state.range(0)];
  Device device = open_fast(uint32_t(state.range(1)));
  const uint64_t m = uint64_t(s.m), n = uint64_t(s.n), k = uint64_t(s.k);
  Buffer data = device.allocate(m * k * 2 + k * n * 2 + m * n * 4, 0).value();
  std::vector<uint16_t> operands(m * k + k * n);
  const std::vector<float> values = random_matrix(operands.size(), 3);
  round_to_bf16(values.data(), values.size(), operands.data());
  check(data.write(operands.data(), operands.size() * 2));
  check(data.sync(Buffer::SyncDirection::kToDevice));
  GemmProblem problem;
  problem.m = uint32_t(m);
  problem.n = uint32_t(n);
  problem.k = uint32_t(k);
  problem.a = {data.address(), uint32_t(k)};
  problem.b = {data.address() + m * k * 2, uint32_t(n)};
  problem.c = {data.address() + (m * k + k * n) * 2, uint32_t(n)};
  const auto lists =
      encode_command_lists(plan_gemm(device.info(), problem).value(), device.info().max_descriptors);
  std::vector<Buffer> commands;
  for (const auto& list : lists) {
    commands.push_back(device.allocate(list.size(), 1).value());
    check(commands.back().write(list.data(), list.size()));
    check(commands.back().sync(Buffer::SyncDirection::kToDevice));
  }
  auto run = [&] {
    for (const Buffer& list : commands) check(device.start(0, list).value().wait(std::chrono::minutes(10)));
  };
  run();  // warm: first-touch page faults of device memory
  for (auto _ : state) run();
  set_flops(state, s);
}

void BM_SystoleHls(benchmark::State& state) {
  DeviceOptions options;
  options.engine = EmuEngine::kHls;
  Device device = Device::open("sw_emu", 0, options).value();
  auto matmul = DeviceMatmul::create(device, 0, std::chrono::minutes(10));
  check(matmul.status());
  const Shape& s = kShapes[0];
  const HostProduct p(s);
  for (auto _ : state) check((*matmul)->run(p.call));
  set_flops(state, s);
}

// The fp32 FMA peak of `threads` cores in the widest vectors the fast
// engine uses here (AVX-512 where the CPU has it, else AVX2): each core
// runs 12 independent chains of FMAs (enough to cover the latency on two
// FMA pipes). chains() is inlined into each instruction set's parallel
// region, so its FMAs are that set's instructions.
constexpr int kPeakChains = 12;
constexpr long kPeakIterations = 50'000'000;
template <class Vector, Vector (*kSet1)(float), Vector (*kFma)(Vector, Vector, Vector)>
__attribute__((always_inline)) inline float chains(long iterations) {
  constexpr int kChains = kPeakChains, kLanes = sizeof(Vector) / sizeof(float);
  Vector acc[kChains];
  for (int i = 0; i < kChains; ++i) acc[i] = kSet1(float(i) * 1e-3f);
  const Vector x = kSet1(0.999999f), y = kSet1(1e-7f);
  for (long it = 0; it < iterations; ++it)
    for (int i = 0; i < kChains; ++i) acc[i] = kFma(acc[i], x, y);
  float lanes[kLanes], sum = 0;
  for (int i = 0; i < kChains; ++i) {
    std::memcpy(lanes, &acc[i], sizeof lanes);
    for (float lane : lanes) sum += lane;
  }
  return sum;
}
__attribute__((target("avx2,fma"))) inline __m256 set1_256(float x) { return _mm256_set1_ps(x); }
__attribute__((target("avx2,fma"))) inline __m256 fma_256(__m256 a, __m256 b, __m256 c) {
  return _mm256_fmadd_ps(a, b, c);
}
__attribute__((target("avx512f"))) inline __m512 set1_512(float x) { return _mm512_set1_ps(x); }
__attribute__((target("avx512f"))) inline __m512 fma_512(__m512 a, __m512 b, __m512 c) {
  return _mm512_fmadd_ps(a, b, c);
}
// Seconds for kPeakIterations x kPeakChains FMAs on each of `threads` cores.
__attribute__((target("avx2,fma"))) double peak_seconds_256(int threads) {
  const auto start = std::chrono::steady_clock::now();
  float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  sink += chains<__m256, set1_256, fma_256>(kPeakIterations);
  benchmark::DoNotOptimize(sink);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
__attribute__((target("avx512f"))) double peak_seconds_512(int threads) {
  const auto start = std::chrono::steady_clock::now();
  float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
  sink += chains<__m512, set1_512, fma_512>(kPeakIterations);
  benchmark::DoNotOptimize(sink);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
bool has_avx512() { return sw_emu::fast_gemm_supports(sw_emu::FastGemmIsa::kAvx512); }
const char* peak_isa() { return has_avx512() ? "AVX-512" : "AVX2"; }
double fma_peak_gflops(int threads) {
  const int lanes = has_avx512() ? 16 : 8;
  double best = 0;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const double seconds = has_avx512() ? peak_seconds_512(threads) : peak_seconds_256(threads);
    best = std::max(best, double(threads) * kPeakIterations * kPeakChains * lanes * 2 / seconds * 1e-9);
  }
  return best;
}

void shapes_and_threads(benchmark::internal::Benchmark* b) {
  for (int threads : {1, 2})
    for (int shape = 0; shape < kShapeCount; ++shape) b->Args({shape, threads});
}

BENCHMARK(BM_OpenBlas)->Apply(shapes_and_threads)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Eigen)->Apply(shapes_and_threads)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Systole)->Apply(shapes_and_threads)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SystoleKernel)->Args({2, 1})->Args({2, 2})->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SystoleHls)->UseRealTime()->Unit(benchmark::kMillisecond);

// Runs the benchmarks matching `filter` in a child process, which prints
// as usual and sends its counters back through a pipe into `collector`.
// SYSTOLE_GEMM_BENCH_IN_PROCESS=1 runs them here instead (for a profiler).
void run_isolated(const std::string& filter, bench::Collector& collector) {
  if (std::getenv("SYSTOLE_GEMM_BENCH_IN_PROCESS")) {
    benchmark::RunSpecifiedBenchmarks(&collector, filter);
    return;
  }
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) std::abort();
  std::fflush(stdout);
  const pid_t child = fork();
  if (child < 0) std::abort();
  if (child == 0) {
    close(pipe_ends[0]);
    bench::Collector results("GFLOP/s");
    benchmark::RunSpecifiedBenchmarks(&results, filter);
    std::fflush(stdout);
    for (const auto& [name, value] : results.values())
      dprintf(pipe_ends[1], "%s %.17g\n", name.c_str(), value);
    std::_Exit(0);
  }
  close(pipe_ends[1]);
  std::string text;
  char chunk[4096];
  for (ssize_t got; (got = read(pipe_ends[0], chunk, sizeof chunk)) > 0;)
    text.append(chunk, std::size_t(got));
  close(pipe_ends[0]);
  waitpid(child, nullptr, 0);
  for (std::size_t at = 0, end; (end = text.find('\n', at)) != std::string::npos; at = end + 1) {
    const std::string line = text.substr(at, end - at);
    const std::size_t space = line.rfind(' ');
    collector.set(line.substr(0, space), std::strtod(line.c_str() + space + 1, nullptr));
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  bench::Collector collector("GFLOP/s");
  // Each family's runs, narrowed by --benchmark_filter when one is given.
  const std::string filter = benchmark::GetBenchmarkFilter();
  for (const std::string family :
       {"BM_Systole", "BM_SystoleKernel", "BM_SystoleHls", "BM_Eigen", "BM_OpenBlas"})
    run_isolated(filter.empty() || filter == "." ? "^" + family + "/" : "^" + family + "(/.*)?" + filter,
                 collector);
  benchmark::Shutdown();
  auto lookup = [&](const char* name, int shape, int threads) {
    return collector[std::string(name) + "/" + std::to_string(shape) + "/" + std::to_string(threads) +
                     "/real_time"];
  };

  const double peak[3] = {0, fma_peak_gflops(1), fma_peak_gflops(2)};
  std::printf("\nfp32 FMA peak of this CPU in %s (measured): %.1f GFLOP/s on 1 thread, %.1f on 2\n",
              peak_isa(), peak[1], peak[2]);
  if (!openblas().sgemm)
    std::printf("OpenBLAS: %s\n", openblas().why_not.c_str());
  else
    std::printf("OpenBLAS: kernel %s, sgemm checked against fp64; %s\n", openblas().kernel.c_str(),
                openblas().removed.empty()
                    ? "no OpenBLAS overrides in the environment"
                    : ("removed from its process's environment: " + openblas().removed).c_str());
  std::printf("\nsw_emu fast engine, fp32 host operands to fp32 result (128x128 array), GFLOP/s\n");
  std::printf("%-20s %6s %6s %5s %3s %9s %9s %9s %8s %8s %7s\n", "shape", "M", "N", "K", "thr", "systole",
              "openblas", "eigen", "/openblas", "/eigen", "of peak");
  for (int threads : {1, 2}) {
    double weakest_blas = 1e30, weakest_eigen = 1e30;
    const char* weakest_blas_shape = "";
    for (int i = 0; i < kShapeCount; ++i) {
      const Shape& s = kShapes[i];
      const double ours = lookup("BM_Systole", i, threads), blas = lookup("BM_OpenBlas", i, threads),
                   eigen = lookup("BM_Eigen", i, threads);
      std::printf("%-20s %6d %6d %5d %3d %9.1f %9.1f %9.1f %8.2f %8.2f %6.0f%%\n", s.name, s.m, s.n, s.k,
                  threads, ours, blas, eigen, blas > 0 ? ours / blas : 0, eigen > 0 ? ours / eigen : 0,
                  100 * ours / peak[threads]);
      if (blas > 0 && ours / blas < weakest_blas) {
        weakest_blas = ours / blas;
        weakest_blas_shape = s.name;
      }
      if (eigen > 0) weakest_eigen = std::min(weakest_eigen, ours / eigen);
    }
    if (weakest_blas < 1e30)
      std::printf("FIGURE gemm_vs_openblas_min_%dt %.2f ratio (%s)\n", threads, weakest_blas,
                  weakest_blas_shape);
    if (weakest_eigen < 1e30)
      std::printf("FIGURE gemm_vs_eigen_min_%dt %.2f ratio\n", threads, weakest_eigen);
    const double square = lookup("BM_Systole", 2, threads), square_blas = lookup("BM_OpenBlas", 2, threads);
    if (square > 0 && square_blas > 0)
      std::printf("FIGURE gemm_vs_openblas_1024_%dt %.2f ratio\n", threads, square / square_blas);
    if (square > 0) {
      std::printf("FIGURE gemm_sw_emu_gflops_%dt %.1f GFLOP/s (1024^3 from fp32 host operands)\n", threads,
                  square);
      std::printf("FIGURE gemm_fraction_of_fma_peak_%dt %.2f ratio (1024^3; %s peak %.1f GFLOP/s)\n", threads,
                  square / peak[threads], peak_isa(), peak[threads]);
    }
    if (const double kernel = collector["BM_SystoleKernel/2/" + std::to_string(threads) + "/real_time"];
        kernel > 0)
      std::printf("FIGURE gemm_kernel_gflops_%dt %.1f GFLOP/s (1024^3, operands resident)\n", threads,
                  kernel);
  }
  if (const double hls = collector["BM_SystoleHls/real_time"]; hls > 0)
    std::printf("FIGURE gemm_hls_kernel_gflops_256 %.2f GFLOP/s\n", hls);
  return 0;
}
