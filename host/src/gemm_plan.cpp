// SPDX-License-Identifier: Apache-2.0
// GEMM tiling into device-sized descriptors, and command-list encoding.
#include "systole/gemm_plan.h"

#include <algorithm>
#include <string>

namespace systole {

Result<std::vector<spec::GemmDescriptor>> plan_gemm(const DeviceInfo& device, const GemmProblem& p) {
  if (p.m == 0 || p.n == 0 || p.k == 0)
    return Status(StatusCode::kInvalidArgument, "GEMM dimensions must be >= 1, got M=" + std::to_string(p.m) +
                                                    " N=" + std::to_string(p.n) +
                                                    " K=" + std::to_string(p.k));
  if (p.a.ld < p.k || p.b.ld < p.n || p.c.ld < p.n)
    return Status(StatusCode::kInvalidArgument,
                  "leading dimensions must cover a row (lda >= K, ldb >= N, ldc >= N)");
  if (p.output_bf16 && p.accumulate)
    return Status(StatusCode::kInvalidArgument, "accumulating into C needs fp32 output");
  if (p.output_bf16 && p.k > device.max_k)
    return Status(
        StatusCode::kInvalidArgument,
        "bf16 output needs K <= max_k (" + std::to_string(device.max_k) + "), got K=" + std::to_string(p.k));
  if (device.max_m == 0 || device.max_n == 0 || device.max_k == 0 || device.max_k % device.shape.rows != 0)
    return Status(StatusCode::kInvalidArgument, "device limits are unusable");

  const uint32_t c_bytes = p.output_bf16 ? spec::kBf16Bytes : spec::kFp32Bytes;
  std::vector<spec::GemmDescriptor> descriptors;
  for (uint32_t m0 = 0; m0 < p.m; m0 += device.max_m) {
    for (uint32_t n0 = 0; n0 < p.n; n0 += device.max_n) {
      for (uint32_t k0 = 0; k0 < p.k; k0 += device.max_k) {
        spec::GemmDescriptor d{};
        d.opcode = static_cast<uint8_t>(spec::Opcode::kGemm);
        d.m = std::min(device.max_m, p.m - m0);
        d.n = std::min(device.max_n, p.n - n0);
        d.k = std::min(device.max_k, p.k - k0);
        d.lda = p.a.ld;
        d.ldb = p.b.ld;
        d.ldc = p.c.ld;
        d.a_addr = p.a.address + (uint64_t(m0) * p.a.ld + k0) * spec::kBf16Bytes;
        d.b_addr = p.b.address + (uint64_t(k0) * p.b.ld + n0) * spec::kBf16Bytes;
        d.c_addr = p.c.address + (uint64_t(m0) * p.c.ld + n0) * c_bytes;
        const bool last = k0 + d.k == p.k;
        if (k0 > 0 || p.accumulate) d.flags |= spec::flag::kAccumulate;
        if (last && p.bias) {
          d.flags |= spec::flag::kBias;
          d.bias_addr = p.bias_address + uint64_t(n0) * spec::kFp32Bytes;
        }
        if (last && p.relu) d.flags |= spec::flag::kRelu;
        if (p.output_bf16) d.flags |= spec::flag::kOutputBf16;
        descriptors.push_back(d);
      }
    }
  }
  return descriptors;
}

void encode_command_list(const spec::CommandRecord* records, std::size_t count, uint8_t* out) {
  spec::encode(spec::command_list_header(uint32_t(count)), out);
  for (std::size_t i = 0; i < count; ++i)
    std::copy(records[i].begin(), records[i].end(), out + spec::kBeatBytes * (i + 1));
}

std::vector<std::vector<uint8_t>> encode_command_lists(const std::vector<spec::CommandRecord>& records,
                                                       uint32_t max_descriptors) {
  std::vector<std::vector<uint8_t>> lists;
  for (std::size_t first = 0; first < records.size(); first += max_descriptors) {
    const std::size_t count = std::min<std::size_t>(max_descriptors, records.size() - first);
    std::vector<uint8_t> bytes(spec::command_list_bytes(count));
    encode_command_list(&records[first], count, bytes.data());
    lists.push_back(std::move(bytes));
  }
  return lists;
}

std::vector<std::vector<uint8_t>> encode_command_lists(const std::vector<spec::GemmDescriptor>& descriptors,
                                                       uint32_t max_descriptors) {
  std::vector<spec::CommandRecord> records;
  records.reserve(descriptors.size());
  for (const spec::GemmDescriptor& d : descriptors) records.push_back(spec::record_of(d));
  return encode_command_lists(records, max_descriptors);
}

}  // namespace systole
