// SPDX-License-Identifier: Apache-2.0
// The vector planner (label unit): every descriptor it writes passes the
// kernel's validation (the fields an opcode does not read are zero), work
// longer than one descriptor is split into pieces that cover it exactly
// once, and problems no pieces can hold are refused naming why.
#include "systole/vector_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "systole/validate.h"

namespace systole {
namespace {

using spec::Opcode;

constexpr uint64_t kMemory = uint64_t(1) << 40;  // room for the largest problems below
constexpr spec::ArrayShape kShape{4, 4, 1024, spec::feature::kVectorEngine};
constexpr std::size_t kMax = spec::kMaxVectorElements;

std::vector<spec::VectorDescriptor> plan(const VectorProblem& problem) {
  auto planned = plan_vector(problem);
  EXPECT_TRUE(planned.ok()) << planned.status().message();
  if (!planned.ok()) return {};
  for (std::size_t i = 0; i < planned->size(); ++i)
    EXPECT_EQ(spec::validate_vector_descriptor((*planned)[i], kMemory, kShape), spec::ErrorCode::kOk)
        << "descriptor " << i << " of " << spec::opcode_name(uint8_t(problem.opcode));
  return std::move(planned).value();
}

std::string refusal(const VectorProblem& problem) {
  auto planned = plan_vector(problem);
  EXPECT_FALSE(planned.ok());
  return planned.ok() ? std::string() : planned.status().message();
}

TEST(VectorPlan, WritesOnlyTheFieldsAnOpcodeReads) {
  // Every operand and scalar set: each opcode keeps those it reads.
  for (Opcode op : {Opcode::kAxpby, Opcode::kMul, Opcode::kRelu, Opcode::kReluGrad, Opcode::kSum,
                    Opcode::kSgd, Opcode::kAdam, Opcode::kToBf16}) {
    VectorProblem p;
    p.opcode = op;
    p.scalars = {0.5f, 0.25f, 0.125f, 1e-7f, true};
    p.n = 37;
    p.rows = 3;
    p.stride = 41;
    p.x = 1 << 20;
    p.y = 2 << 20;
    p.z = 3 << 20;
    p.w = 4 << 20;
    const std::vector<spec::VectorDescriptor> d = plan(p);
    ASSERT_EQ(d.size(), 1u) << spec::opcode_name(uint8_t(op));
    EXPECT_EQ(d[0].n, 37u);
    const spec::VectorOperands used = spec::vector_operands(op);
    EXPECT_EQ(d[0].x_addr, used.uses(0) ? p.x : 0);
    EXPECT_EQ(d[0].w_addr, used.uses(3) ? p.w : 0);
    EXPECT_EQ(d[0].rows, spec::vector_reads_rows(op) ? 3u : 0u);
    EXPECT_EQ(d[0].flags != 0, op == Opcode::kSgd);  // Nesterov; to_bf16 not transposed
    EXPECT_EQ(d[0].alpha, spec::vector_scalar_count(op) > 0 ? 0.5f : 0.0f);
  }
}

TEST(VectorPlan, SplitsElementwiseWorkIntoPiecesThatCoverItOnce) {
  // relu_grad over 2^26 + 5 values: two pieces, every operand advanced.
  VectorProblem mask;
  mask.opcode = Opcode::kReluGrad;
  mask.n = kMax + 5;
  mask.x = 64;
  mask.y = uint64_t(1) << 32;
  mask.z = uint64_t(2) << 32;
  const std::vector<spec::VectorDescriptor> d = plan(mask);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].n, kMax);
  EXPECT_EQ(d[1].n, 5u);
  EXPECT_EQ(d[1].x_addr, mask.x + kMax * 4);
  EXPECT_EQ(d[1].y_addr, mask.y + kMax * 4);
  EXPECT_EQ(d[1].z_addr, mask.z + kMax * 4);
}

TEST(VectorPlan, SplitsASumByColumnsKeepingItsRows) {
  // Column ranges, each summed over all its rows in order: the bits of one
  // descriptor.
  const std::size_t n = 2 * kMax + 3, stride = n + 16;
  const std::vector<spec::VectorDescriptor> d = plan(sum_problem(7, n, stride, 0, uint64_t(1) << 36));
  ASSERT_EQ(d.size(), 3u);
  for (std::size_t i = 0; i < d.size(); ++i) {
    EXPECT_EQ(d[i].rows, 7u);
    EXPECT_EQ(d[i].stride, stride);
    EXPECT_EQ(d[i].x_addr, i * kMax * 4);
    EXPECT_EQ(d[i].z_addr, (uint64_t(1) << 36) + i * kMax * 4);
  }
  EXPECT_EQ(d[2].n, 3u);
}

TEST(VectorPlan, SplitsACopyToBf16ByRows) {
  // 65536 + 2 rows of 9 values 12 apart: the second piece starts at row
  // 65536 of x and of the packed result.
  const uint32_t rows = spec::kMaxVectorRows + 2;
  const std::vector<spec::VectorDescriptor> d = plan(to_bf16_problem(rows, 9, 12, false, 1 << 12, 1 << 30));
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].rows, spec::kMaxVectorRows);
  EXPECT_EQ(d[1].rows, 2u);
  EXPECT_EQ(d[1].x_addr, (1u << 12) + uint64_t(spec::kMaxVectorRows) * 12 * 4);
  EXPECT_EQ(d[1].z_addr, (1u << 30) + uint64_t(spec::kMaxVectorRows) * 9 * 2);
  // One long row: pieces of its values.
  const std::vector<spec::VectorDescriptor> row =
      plan(to_bf16_problem(1, kMax + 1, kMax + 1, false, 0, 1 << 30));
  ASSERT_EQ(row.size(), 2u);
  EXPECT_EQ(row[1].n, 1u);
  EXPECT_EQ(row[1].x_addr, kMax * 4);
  EXPECT_EQ(row[1].z_addr, (1u << 30) + kMax * 2);
  // Transposed, one descriptor.
  const std::vector<spec::VectorDescriptor> t = plan(to_bf16_problem(16, 9, 9, true, 0, 1 << 30));
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].flags, spec::vector_flag::kTranspose);
}

TEST(VectorPlan, RefusesWhatNoPiecesCanHold) {
  VectorProblem empty;
  EXPECT_NE(refusal(empty).find("no values"), std::string::npos);
  VectorProblem gemm;
  gemm.opcode = Opcode::kGemm;
  gemm.n = 1;
  EXPECT_NE(refusal(gemm).find("not a vector-engine opcode"), std::string::npos);
  EXPECT_NE(
      refusal(sum_problem(spec::kMaxVectorRows + 1, 8, 8, 0, 4096)).find("more rows than one sum reads"),
      std::string::npos);
  EXPECT_NE(refusal(sum_problem(0, 8, 8, 0, 4096)).find("no rows"), std::string::npos);
  EXPECT_NE(refusal(sum_problem(2, 8, 7, 0, 4096)).find("row stride 7 is shorter"), std::string::npos);
  EXPECT_NE(refusal(to_bf16_problem(spec::kMaxVectorRows + 1, 8, 8, true, 0, 4096)).find("transposed"),
            std::string::npos);
  EXPECT_NE(refusal(sum_problem(2, 8, std::size_t(1) << 33, 0, 4096)).find("more than a descriptor holds"),
            std::string::npos);
  // The message names the opcode and the shape.
  EXPECT_EQ(refusal(sum_problem(2, 8, 7, 0, 4096)).rfind("vector plan: sum of 2 row(s) of 8 values", 0), 0u);
}

}  // namespace
}  // namespace systole
