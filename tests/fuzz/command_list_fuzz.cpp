// SPDX-License-Identifier: Apache-2.0
// The kernel's command-list checks, differentially: [u16 length][command
// list][device memory] runs on a 4x4 sw_emu device through the HLS kernel
// (the executable spec) and through the fast engine. Both must end (no
// hang, no out-of-bounds access) with the same status, error code and error
// index, and leave the same memory image byte for byte, unless a
// descriptor's C overlaps its own A, B or bias (the interface leaves C
// unspecified then). Vector descriptors, whose overlaps the kernel
// refuses, run the same code (execute_vector) in both.
#include <algorithm>
#include <cstring>

#include "common/engines.h"
#include "fuzz_input.h"
#include "systole/validate.h"

namespace {

using namespace systole;

testing::Outcome run(EmuEngine engine, const std::vector<uint8_t>& memory, const std::vector<uint8_t>& list) {
  DeviceOptions options;
  options.array_rows = options.array_cols = 4;
  options.engine = engine;
  options.threads_per_unit = 1;
  options.hbm_banks = 2;
  options.bank_bytes = 1 << 20;
  Result<Device> device = Device::open("sw_emu", 0, options);
  if (!device.ok()) fuzz::fail("sw_emu did not open: " + device.status().to_string());
  return testing::run_on_device(*device, memory, list);
}

// [address, address + bytes) of the matrix spans, as the validator
// computes them.
bool overlap(uint64_t a, uint64_t a_bytes, uint64_t b, uint64_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

// Whether any descriptor the list holds writes C over its own inputs.
bool writes_over_its_inputs(const std::vector<uint8_t>& list) {
  for (std::size_t at = sizeof(spec::CommandListHeader); at + sizeof(spec::GemmDescriptor) <= list.size();
       at += sizeof(spec::GemmDescriptor)) {
    spec::GemmDescriptor d;
    std::memcpy(&d, list.data() + at, sizeof d);
    if (d.m == 0 || d.n == 0 || d.k == 0) continue;  // refused before any access
    const uint64_t c_bytes = spec::matrix_span_bytes(d.m, d.n, d.ldc, spec::output_element_bytes(d.flags));
    if (overlap(d.c_addr, c_bytes, d.a_addr, spec::matrix_span_bytes(d.m, d.k, d.lda, spec::kBf16Bytes)) ||
        overlap(d.c_addr, c_bytes, d.b_addr, spec::matrix_span_bytes(d.k, d.n, d.ldb, spec::kBf16Bytes)) ||
        ((d.flags & spec::flag::kBias) &&
         overlap(d.c_addr, c_bytes, d.bias_addr, uint64_t(d.n) * spec::kFp32Bytes)))
      return true;
  }
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const fuzz::TwoParts parts = fuzz::split(data, size);
  std::vector<uint8_t> list(parts.first.begin(), parts.first.end());
  std::vector<uint8_t> memory(parts.second.begin(),
                              parts.second.begin() + std::min<std::size_t>(parts.second.size(), 1 << 16));
  // Whole beats, so that every descriptor the kernel reads from the list
  // buffer is one the overlap check below sees (past the buffer, a fresh
  // device holds zeros: opcode 0, refused before any access).
  list.resize(std::max<std::size_t>((list.size() + spec::kBeatBytes - 1) / spec::kBeatBytes, 1) *
              spec::kBeatBytes);
  memory.resize(std::max<std::size_t>(memory.size(), spec::kBeatBytes));
  const testing::Outcome hls = run(EmuEngine::kHls, memory, list);
  const testing::Outcome fast = run(EmuEngine::kFast, memory, list);
  if (hls.status.code() != fast.status.code() || hls.error != fast.error ||
      hls.error_index != fast.error_index)
    fuzz::fail("the engines disagree: HLS " + hls.status.to_string() + " error " +
               spec::error_code_name(hls.error) + " at " + std::to_string(hls.error_index) + ", fast " +
               fast.status.to_string() + " error " + spec::error_code_name(fast.error) + " at " +
               std::to_string(fast.error_index));
  if (writes_over_its_inputs(list)) return 0;
  const std::string difference = testing::first_difference(hls.memory, fast.memory);
  if (!difference.empty()) fuzz::fail("the engines left different memory: " + difference);
  return 0;
}
