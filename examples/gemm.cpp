// SPDX-License-Identifier: Apache-2.0
// A GEMM on a device: C = A B + bias, through the tiler, on an emulated
// 128x128 array (or a board: gemm xrt 0). The operands are rounded to
// bfloat16 on the way in and the products summed in fp32, so the result is
// compared with a double-precision product of the rounded operands.
//
//   gemm [backend [device]]     backend: sw_emu (default), hw_emu, xrt
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "systole/matmul.h"
#include "systole/numerics.h"

int main(int argc, char** argv) {
  using namespace systole;
  const std::string backend = argc > 1 ? argv[1] : "sw_emu";
  const uint32_t index = argc > 2 ? uint32_t(std::strtoul(argv[2], nullptr, 10)) : 0;

  // Sizes that are not multiples of the array: the tiler pads the edges.
  const uint32_t m = 300, n = 250, k = 517;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> a(std::size_t(m) * k), b(std::size_t(k) * n), bias(n), c(std::size_t(m) * n);
  for (float& x : a) x = normal(rng);
  for (float& x : b) x = normal(rng);
  for (float& x : bias) x = normal(rng);

  DeviceOptions options;  // an emulated device: 128x128, one compute unit
  Result<Device> device = Device::open(backend, index, options);
  if (!device.ok()) {
    std::fprintf(stderr, "gemm: %s\n", device.status().to_string().c_str());
    return 1;
  }
  auto matmul = DeviceMatmul::create(*device, /*unit=*/0, std::chrono::seconds(60));
  if (!matmul.ok()) {
    std::fprintf(stderr, "gemm: %s\n", matmul.status().to_string().c_str());
    return 1;
  }
  MatmulCall call;
  call.m = m, call.n = n, call.k = k;
  call.a = a.data(), call.b = b.data(), call.bias = bias.data(), call.c = c.data();
  const auto start = std::chrono::steady_clock::now();
  const Status status = (*matmul)->run(call);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!status.ok()) {
    std::fprintf(stderr, "gemm: %s\n", status.to_string().c_str());
    return 1;
  }

  // The largest error relative to the magnitude of the terms summed.
  auto rounded = [](float x) { return double(numerics::bf16_to_f32(numerics::f32_to_bf16(x))); };
  double worst = 0;
  for (uint32_t i = 0; i < m; ++i)
    for (uint32_t j = 0; j < n; ++j) {
      double exact = bias[j], magnitude = std::fabs(bias[j]);
      for (uint32_t p = 0; p < k; ++p) {
        const double term = rounded(a[std::size_t(i) * k + p]) * rounded(b[std::size_t(p) * n + j]);
        exact += term;
        magnitude += std::fabs(term);
      }
      worst = std::fmax(worst, std::fabs(c[std::size_t(i) * n + j] - exact) / magnitude);
    }
  std::printf("%s: %ux%u array, C[%u x %u] = A[%u x %u] B + bias in %llu launch(es), %.3f s\n",
              device->info().name.c_str(), device->info().shape.rows, device->info().shape.cols, m, n, m, k,
              static_cast<unsigned long long>((*matmul)->launches()), seconds);
  std::printf("largest error relative to sum |terms|: %.2e (fp32 accumulation: < 1e-5)\n", worst);
  return worst < 1e-5 ? 0 : 1;
}
