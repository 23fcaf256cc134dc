// SPDX-License-Identifier: Apache-2.0
// Malformed command lists (label emu): each gets its specific error code and
// index from both sw_emu engines, and the launch writes nothing at all, even
// when the bad descriptor comes after good ones.
#include <gtest/gtest.h>

#include <functional>

#include "common/engines.h"
#include "common/random_workload.h"
#include "systole/gemm_plan.h"

namespace systole::testing {
namespace {

constexpr spec::ArrayShape kShape{8, 8};
constexpr uint64_t kDeviceBytes = 2 * (64ull << 20);  // as engines.cpp opens it

struct Corruption {
  const char* name;
  std::function<void(spec::GemmDescriptor&)> apply;
  spec::ErrorCode expected;
};

const Corruption kDescriptorCorruptions[] = {
    {"opcode", [](auto& d) { d.opcode = 10; }, spec::ErrorCode::kBadOpcode},
    {"opcode_high", [](auto& d) { d.opcode = 0x81; }, spec::ErrorCode::kBadOpcode},
    {"opcode_zero", [](auto& d) { d.opcode = 0; }, spec::ErrorCode::kBadOpcode},
    {"unknown_flag", [](auto& d) { d.flags |= 0x10; }, spec::ErrorCode::kBadFlags},
    {"reserved0", [](auto& d) { d.reserved0 = 1; }, spec::ErrorCode::kBadFlags},
    {"reserved1", [](auto& d) { d.reserved1 = 0x100; }, spec::ErrorCode::kBadFlags},
    {"m_zero", [](auto& d) { d.m = 0; }, spec::ErrorCode::kBadDimension},
    {"n_zero", [](auto& d) { d.n = 0; }, spec::ErrorCode::kBadDimension},
    {"k_zero", [](auto& d) { d.k = 0; }, spec::ErrorCode::kBadDimension},
    {"m_too_big", [](auto& d) { d.m = kShape.max_m() + 1; }, spec::ErrorCode::kBadDimension},
    {"k_too_big",
     [](auto& d) {
       d.k = kShape.max_k() + 1;
       d.lda = d.k;
     },
     spec::ErrorCode::kBadDimension},
    {"n_too_big", [](auto& d) { d.n = kShape.max_n() + 1; }, spec::ErrorCode::kBadDimension},
    {"lda_short", [](auto& d) { d.lda = d.k - 1; }, spec::ErrorCode::kBadLeadingDim},
    {"ldb_short", [](auto& d) { d.ldb = d.n - 1; }, spec::ErrorCode::kBadLeadingDim},
    {"ldc_short", [](auto& d) { d.ldc = d.n - 1; }, spec::ErrorCode::kBadLeadingDim},
    {"a_odd", [](auto& d) { d.a_addr += 1; }, spec::ErrorCode::kMisalignedAddress},
    {"c_fp32_half",
     [](auto& d) {
       d.flags &= ~spec::flag::kOutputBf16;
       d.c_addr += 2;
     },
     spec::ErrorCode::kMisalignedAddress},
    {"bias_half",
     [](auto& d) {
       d.flags |= spec::flag::kBias;
       d.bias_addr = 2;
     },
     spec::ErrorCode::kMisalignedAddress},
    {"b_past_end", [](auto& d) { d.b_addr = kDeviceBytes; }, spec::ErrorCode::kAddressOutOfRange},
    {"c_straddles_end",
     [](auto& d) {
       d.c_addr = kDeviceBytes - 4;
       d.m = 2;
     },
     spec::ErrorCode::kAddressOutOfRange},
    {"huge_ldc",
     [](auto& d) {
       d.ldc = 0xFFFFFFFF;
       d.m = 256;
     },
     spec::ErrorCode::kAddressOutOfRange},
    {"bias_past_end",
     [](auto& d) {
       d.flags |= spec::flag::kBias;
       d.bias_addr = kDeviceBytes;
     },
     spec::ErrorCode::kAddressOutOfRange},
    {"a_near_2_64", [](auto& d) { d.a_addr = ~uint64_t(0) - 1; }, spec::ErrorCode::kAddressOutOfRange},
};

class DescriptorErrors : public ::testing::TestWithParam<std::tuple<EmuEngine, Corruption>> {};

TEST_P(DescriptorErrors, ReportCodeAndIndexAndWriteNothing) {
  const auto& [engine, corruption] = GetParam();
  WorkloadOptions options;
  options.shape = kShape;
  options.descriptors = 4;
  const uint32_t seed = 11;
  const Workload workload = make_workload(seed, options);
  std::vector<spec::GemmDescriptor> descriptors = workload.rebased(0);
  const uint32_t bad = 2;  // descriptors 0 and 1 are valid and must not run
  corruption.apply(descriptors[bad]);
  const auto list = encode_command_lists(descriptors, kShape.max_descriptors()).at(0);

  const Outcome outcome = run_sw_emu_list(workload.memory, list, kShape, engine);
  SCOPED_TRACE(std::string("seed ") + std::to_string(seed) + ", corruption " + corruption.name);
  EXPECT_EQ(outcome.status.code(), StatusCode::kDeviceError) << outcome.status.to_string();
  EXPECT_EQ(outcome.error, corruption.expected)
      << spec::error_code_name(outcome.error) << " instead of " << spec::error_code_name(corruption.expected);
  EXPECT_EQ(outcome.error_index, bad);
  EXPECT_NE(outcome.status.message().find("descriptor 2"), std::string::npos) << outcome.status.message();
  EXPECT_EQ(outcome.counters.descriptors_done, 0u);
  EXPECT_EQ(first_difference(workload.memory, outcome.memory), "") << "memory was written";
}

INSTANTIATE_TEST_SUITE_P(Emu, DescriptorErrors,
                         ::testing::Combine(::testing::Values(EmuEngine::kHls, EmuEngine::kFast),
                                            ::testing::ValuesIn(kDescriptorCorruptions)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == EmuEngine::kHls ? "hls_" : "fast_") +
                                  std::get<1>(info.param).name;
                         });

struct HeaderCorruption {
  const char* name;
  std::function<void(spec::CommandListHeader&)> apply;
  spec::ErrorCode expected;
};

const HeaderCorruption kHeaderCorruptions[] = {
    {"magic", [](auto& h) { h.magic ^= 1; }, spec::ErrorCode::kBadMagic},
    {"version", [](auto& h) { h.version_major = spec::kVersionMajor + 1; }, spec::ErrorCode::kBadVersion},
    {"count_zero", [](auto& h) { h.count = 0; }, spec::ErrorCode::kBadCount},
    {"count_too_big", [](auto& h) { h.count = kShape.max_descriptors() + 1; }, spec::ErrorCode::kBadCount},
    {"reserved", [](auto& h) { h.reserved[12] = 5; }, spec::ErrorCode::kBadFlags},
};

class HeaderErrors : public ::testing::TestWithParam<std::tuple<EmuEngine, HeaderCorruption>> {};

TEST_P(HeaderErrors, ReportCodeAndWriteNothing) {
  const auto& [engine, corruption] = GetParam();
  WorkloadOptions options;
  options.shape = kShape;
  options.descriptors = 2;
  const Workload workload = make_workload(5, options);
  auto list = encode_command_lists(workload.rebased(0), kShape.max_descriptors()).at(0);
  auto header = spec::decode<spec::CommandListHeader>(list.data());
  corruption.apply(header);
  spec::encode(header, list.data());
  const std::vector<uint8_t>& memory = workload.memory;

  const Outcome outcome = run_sw_emu_list(memory, list, kShape, engine);
  SCOPED_TRACE(corruption.name);
  EXPECT_EQ(outcome.status.code(), StatusCode::kDeviceError) << outcome.status.to_string();
  EXPECT_EQ(outcome.error, corruption.expected)
      << spec::error_code_name(outcome.error) << " instead of " << spec::error_code_name(corruption.expected);
  EXPECT_EQ(outcome.error_index, spec::kHeaderErrorIndex);
  EXPECT_NE(outcome.status.message().find("header"), std::string::npos);
  EXPECT_EQ(first_difference(memory, outcome.memory), "") << "memory was written";
}

INSTANTIATE_TEST_SUITE_P(Emu, HeaderErrors,
                         ::testing::Combine(::testing::Values(EmuEngine::kHls, EmuEngine::kFast),
                                            ::testing::ValuesIn(kHeaderCorruptions)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param) == EmuEngine::kHls ? "hls_" : "fast_") +
                                  std::get<1>(info.param).name;
                         });

}  // namespace
}  // namespace systole::testing
