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
  auto store = [](const OperandRows*& rows, const float*& x, uint32_t& stride, std::size_t size,
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
        double sum = call.accumulate ? call.c[std::size_t(i) * call.n + j] : 0.0;
        for (uint32_t p = 0; p < call.k; ++p)
          sum += double(element(call.a, call.a_transposed, call.a_stride(), i, p)) *
                 element(call.b, call.b_transposed, call.b_stride(), p, j);
        if (call.bias) sum += call.bias[j];
        if (call.relu && !(sum > 0)) sum = 0;
        call.c[std::size_t(i) * call.n + j] = float(sum);
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
                 element(call.a, call.a_transposed, call.a_stride(), i, p));
    for (uint32_t p = 0; p < call.k; ++p)
      for (uint32_t j = 0; j < call.n; ++j)
        put_bf16(a_bytes + (std::size_t(p) * call.n + j) * 2,
                 element(call.b, call.b_transposed, call.b_stride(), p, j));
    if (call.accumulate) std::memcpy(memory.data() + a_bytes + b_bytes, call.c, c_bytes);
    if (call.bias)
      std::memcpy(memory.data() + a_bytes + b_bytes + c_bytes, call.bias, std::size_t(call.n) * 4);
    GemmProblem problem;
    problem.m = call.m;
    problem.n = call.n;
    problem.k = call.k;
    problem.a = {0, call.k};
    problem.b = {a_bytes, call.n};
    problem.c = {a_bytes + b_bytes, call.n};
    problem.bias = call.bias != nullptr;
    problem.bias_address = a_bytes + b_bytes + c_bytes;
    problem.relu = call.relu;
    problem.accumulate = call.accumulate;
    auto descriptors = plan_gemm(device_, problem);
    if (!descriptors.ok()) return descriptors.status();
    for (const spec::GemmDescriptor& d : *descriptors) reference::gemm(d, device_.shape.rows, memory);
    std::memcpy(call.c, memory.data() + a_bytes + b_bytes, c_bytes);
  }
  return ok_status();
}

Result<std::pair<const CardKeepingMatmul::Kept*, std::size_t>> CardKeepingMatmul::find(
    const float* p, std::size_t count) const {
  auto at = tensors_.upper_bound(p);
  if (at == tensors_.begin()) return Status(StatusCode::kInvalidArgument, "not on the card");
  --at;
  const auto offset =
      std::size_t(reinterpret_cast<std::uintptr_t>(p) - reinterpret_cast<std::uintptr_t>(at->first)) /
      sizeof(float);
  if (offset >= at->second.count || count > at->second.count - offset)
    return Status(StatusCode::kInvalidArgument, "not on the card, or shorter there");
  return std::pair{&at->second, offset};
}

Result<std::vector<float>> CardKeepingMatmul::values(const float* p, std::size_t count) const {
  auto found = find(p, count);
  if (!found.ok()) return found.status();
  const auto [kept, offset] = *found;
  if (!kept->of)
    return std::vector<float>(kept->values.begin() + offset, kept->values.begin() + offset + count);
  auto whole = values(kept->of, kept->count);
  if (!whole.ok()) return whole.status();
  // Value j of a block reads the block's transpose: j = c * rows + r is
  // stored at r * cols + c.
  const std::size_t block = std::size_t(kept->rows) * kept->cols;
  std::vector<float> read(count);
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t at = offset + i, b = at / block, j = at % block;
    read[i] = (*whole)[b * block + (j % kept->rows) * kept->cols + j / kept->rows];
  }
  return read;
}

Status CardKeepingMatmul::run(const std::vector<MatmulCall>& calls) {
  std::vector<MatmulCall> here = calls;
  std::vector<std::vector<float>> operands;  // what the calls read from the card
  operands.reserve(2 * calls.size());
  for (MatmulCall& call : here) {
    auto read = [&](const float*& x, bool& on_card, bool transposed, uint32_t stride, uint32_t rows,
                    uint32_t cols) -> Status {
      if (!on_card) return ok_status();
      const uint32_t stored_rows = transposed ? cols : rows, stored_cols = transposed ? rows : cols;
      auto found = values(x, std::size_t(stored_rows - 1) * stride + stored_cols);
      if (!found.ok()) return found.status();
      operands.push_back(std::move(found).value());
      x = operands.back().data();
      on_card = false;
      ++operands_read;
      return ok_status();
    };
    SYSTOLE_RETURN_IF_ERROR(read(call.a, call.a_on_card, call.a_transposed, call.a_stride(), call.m, call.k));
    SYSTOLE_RETURN_IF_ERROR(read(call.b, call.b_on_card, call.b_transposed, call.b_stride(), call.k, call.n));
    if (call.c_on_card) {
      if (call.accumulate) return Status(StatusCode::kInvalidArgument, "accumulating on the card");
      const std::size_t count = std::size_t(call.m) * call.n;
      auto held = find(call.c, count);
      if (!held.ok()) {
        SYSTOLE_RETURN_IF_ERROR(hold_on_card(call.c, count));
        held = find(call.c, count);
      }
      if (held->first->of) return Status(StatusCode::kInvalidArgument, "writing a view");
      call.c = const_cast<float*>(held->first->values.data()) + held->second;
      call.c_on_card = false;
      ++results_left;
    }
  }
  return reference_.run(here);
}

Status CardKeepingMatmul::hold_on_card(const float* key, std::size_t count) {
  Kept& kept = tensors_[key];
  kept.count = std::max(kept.count, count);
  kept.values.resize(kept.count);
  return ok_status();
}

Status CardKeepingMatmul::view_on_card(const float* view, const float* key, std::size_t count, uint32_t rows,
                                       uint32_t cols) {
  auto viewed = find(key, count);
  if (!viewed.ok()) return viewed.status();
  tensors_[view] = Kept{count, {}, key, rows, cols};
  ++views;
  return ok_status();
}

Status CardKeepingMatmul::relu_mask_on_card(const float* gradient, const float* output, float* masked,
                                            std::size_t count) {
  auto g = values(gradient, count), y = values(output, count);
  if (!g.ok() || !y.ok()) return Status(StatusCode::kInvalidArgument, "relu mask: not on the card");
  SYSTOLE_RETURN_IF_ERROR(hold_on_card(masked, count));
  std::vector<float>& kept = tensors_[masked].values;
  for (std::size_t i = 0; i < count; ++i) kept[i] = (*y)[i] > 0.0f ? (*g)[i] : 0.0f;
  ++masks;
  return ok_status();
}

Status CardKeepingMatmul::sum(const SumCall& call) {
  if (!call.x_on_card) return MatmulExecutor::sum(call);
  auto x = values(call.x, std::size_t(call.rows) * call.width);
  if (!x.ok()) return Status(StatusCode::kInvalidArgument, "sum: not on the card");
  sum_rows(x->data(), call.rows, call.width, call.tile_rows(k_tile()), call.out);
  ++sums_read;
  return ok_status();
}

}  // namespace systole::testing
