// SPDX-License-Identifier: Apache-2.0
// Test executors of matrix products.
#include "common/matmul_executors.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "reference/reference.h"
#include "systole/gemm_plan.h"
#include "systole/numerics.h"

namespace systole::testing {
namespace {

// Element (r, c) of op(X), X stored with `stride` elements per row.
float element(const float* x, bool transposed, uint32_t stride, uint32_t r, uint32_t c) {
  return transposed ? x[std::size_t(c) * stride + r] : x[std::size_t(r) * stride + c];
}

// `call` with an operand given as rows made into fp32 in `a` (or `b`).
MatmulCall stored(MatmulCall call, std::vector<float>& a, std::vector<float>& b) {
  auto store = [](const OperandRows*& rows, Operand& x, uint32_t& stride, std::size_t size,
                  std::vector<float>& storage) {
    if (!rows) return;
    storage.resize(size);
    rows->fp32(storage.data());
    x = storage.data();
    rows = nullptr;
    stride = 0;
  };
  store(call.a_rows, call.a, call.lda, std::size_t(call.m) * call.k, a);
  store(call.b_rows, call.b, call.ldb, std::size_t(call.k) * call.n, b);
  return call;
}

}  // namespace

Status ExactMatmul::run(const std::vector<MatmulCall>& calls) {
  ++launches_;
  std::vector<float> a, b;
  for (const MatmulCall& given : calls) {
    const MatmulCall call = stored(given, a, b);
    for (uint32_t i = 0; i < call.m; ++i)
      for (uint32_t j = 0; j < call.n; ++j) {
        double sum = call.accumulate ? call.c.host[std::size_t(i) * call.n + j] : 0.0;
        for (uint32_t p = 0; p < call.k; ++p)
          sum += double(element(call.a.host, call.a_transposed, call.a_stride(), i, p)) *
                 element(call.b.host, call.b_transposed, call.b_stride(), p, j);
        if (call.bias) sum += call.bias.host[j];
        if (call.relu && !(sum > 0)) sum = 0;
        call.c.host[std::size_t(i) * call.n + j] = float(sum);
      }
  }
  return ok_status();
}

Status ReferenceMatmul::run(const std::vector<MatmulCall>& calls) {
  ++launches_;
  std::vector<float> a, b;
  for (const MatmulCall& given : calls) {
    const MatmulCall call = stored(given, a, b);
    // Memory: A (bf16, op applied), B (bf16), C (fp32), bias (fp32).
    const std::size_t a_bytes = std::size_t(call.m) * call.k * 2, b_bytes = std::size_t(call.k) * call.n * 2;
    const std::size_t c_bytes = std::size_t(call.m) * call.n * 4;
    std::vector<uint8_t> memory(a_bytes + b_bytes + c_bytes + std::size_t(call.n) * 4);
    auto put_bf16 = [&](std::size_t at, float value) {
      const uint16_t bits = reference::f32_to_bf16(numerics::f32_bits(value));
      std::memcpy(memory.data() + at, &bits, 2);
    };
    for (uint32_t i = 0; i < call.m; ++i)
      for (uint32_t p = 0; p < call.k; ++p)
        put_bf16((std::size_t(i) * call.k + p) * 2,
                 element(call.a.host, call.a_transposed, call.a_stride(), i, p));
    for (uint32_t p = 0; p < call.k; ++p)
      for (uint32_t j = 0; j < call.n; ++j)
        put_bf16(a_bytes + (std::size_t(p) * call.n + j) * 2,
                 element(call.b.host, call.b_transposed, call.b_stride(), p, j));
    if (call.accumulate) std::memcpy(memory.data() + a_bytes + b_bytes, call.c.host, c_bytes);
    if (call.bias)
      std::memcpy(memory.data() + a_bytes + b_bytes + c_bytes, call.bias.host, std::size_t(call.n) * 4);
    GemmProblem problem;
    problem.m = call.m;
    problem.n = call.n;
    problem.k = call.k;
    problem.a = {0, call.k};
    problem.b = {a_bytes, call.n};
    problem.c = {a_bytes + b_bytes, call.n};
    problem.bias = bool(call.bias);
    problem.bias_address = a_bytes + b_bytes + c_bytes;
    problem.relu = call.relu;
    problem.accumulate = call.accumulate;
    auto descriptors = plan_gemm(device_, problem);
    if (!descriptors.ok()) return descriptors.status();
    for (const spec::GemmDescriptor& d : *descriptors) reference::gemm(d, device_.shape.rows, memory);
    std::memcpy(call.c.host, memory.data() + a_bytes + b_bytes, c_bytes);
  }
  return ok_status();
}

Result<DeviceTensor> CardKeepingMatmul::allocate(std::size_t count) {
  auto buffer = device_.allocate(std::max<std::size_t>(count, 1) * sizeof(float), 0);
  if (!buffer.ok()) return buffer.status();
  ++tensors;
  return DeviceTensor::over(std::move(buffer).value(), 0, count);
}

Result<std::vector<float>> CardKeepingMatmul::values(const DeviceTensor& x, std::size_t count) {
  if (!x) return Status(StatusCode::kInvalidArgument, "not on the card");
  if (count > x.count()) return Status(StatusCode::kInvalidArgument, "shorter on the card");
  const std::size_t block = std::size_t(x.block_rows()) * x.block_cols();
  // A view is read in whole blocks.
  const std::size_t stored_count = x.reads_in_order() ? count : (count + block - 1) / block * block;
  auto stored = x.part(0, stored_count);
  if (!stored.ok()) return stored.status();
  std::vector<float> read(stored_count);
  SYSTOLE_RETURN_IF_ERROR(stored->read(read.data()));
  if (x.reads_in_order()) return read;
  views_.insert({x.id(), x.block_rows()});
  // Value j of a block reads the block's transpose: j = c * rows + r is
  // stored at r * cols + c.
  std::vector<float> viewed(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t b = i / block, j = i % block;
    viewed[i] = read[b * block + (j % x.block_rows()) * x.block_cols() + j / x.block_rows()];
  }
  return viewed;
}

Status CardKeepingMatmul::run(const std::vector<MatmulCall>& calls) {
  std::vector<MatmulCall> here = calls;
  std::vector<std::vector<float>> operands;  // what the calls read from the card
  operands.reserve(3 * calls.size());
  for (MatmulCall& call : here) {
    auto read = [&](Operand& x, bool transposed, uint32_t stride, uint32_t rows, uint32_t cols) -> Status {
      if (!x.card) return ok_status();
      const uint32_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
      auto found = values(x.card, std::size_t(stored_rows - 1) * stride + stored_cols);
      if (!found.ok()) return found.status();
      operands.push_back(std::move(found).value());
      x = operands.back().data();
      ++operands_read;
      return ok_status();
    };
    SYSTOLE_RETURN_IF_ERROR(read(call.a, call.a_transposed, call.a_stride(), call.m, call.k));
    SYSTOLE_RETURN_IF_ERROR(read(call.b, call.b_transposed, call.b_stride(), call.k, call.n));
    if (call.c.card) {
      if (call.accumulate) return Status(StatusCode::kInvalidArgument, "accumulating on the card");
      if (call.c.card.is_view()) return Status(StatusCode::kInvalidArgument, "writing a view");
      if (std::size_t(call.m) * call.n > call.c.card.count())
        return Status(StatusCode::kInvalidArgument, "a result longer than its tensor on the card");
      operands.emplace_back(std::size_t(call.m) * call.n);
      call.c = operands.back().data();
      ++results_left;
    }
  }
  SYSTOLE_RETURN_IF_ERROR(reference_.run(here));
  for (std::size_t i = 0; i < calls.size(); ++i)
    if (calls[i].c.card) {
      DeviceTensor c = calls[i].c.card;
      auto part = c.part(0, std::size_t(calls[i].m) * calls[i].n);
      if (!part.ok()) return part.status();
      SYSTOLE_RETURN_IF_ERROR(part->write(here[i].c.host));
    }
  return ok_status();
}

Status CardKeepingMatmul::relu_mask_on_card(const DeviceTensor& gradient, const DeviceTensor& output,
                                            const DeviceTensor& masked, std::size_t count) {
  auto g = values(gradient, count), y = values(output, count);
  if (!g.ok() || !y.ok()) return Status(StatusCode::kInvalidArgument, "relu mask: not on the card");
  std::vector<float> kept(count);
  for (std::size_t i = 0; i < count; ++i) kept[i] = (*y)[i] > 0.0f ? (*g)[i] : 0.0f;
  DeviceTensor out = masked;
  SYSTOLE_RETURN_IF_ERROR(out.write(kept.data()));
  ++masks;
  return ok_status();
}

Status CardKeepingMatmul::sum(const SumCall& call) {
  if (!call.x.card) return MatmulExecutor::sum(call);
  auto x = values(call.x.card, std::size_t(call.rows) * call.width);
  if (!x.ok()) return Status(StatusCode::kInvalidArgument, "sum: not on the card");
  sum_rows(x->data(), call.rows, call.width, call.tile_rows(k_tile()), call.out.host);
  ++sums_read;
  return ok_status();
}

}  // namespace systole::testing
