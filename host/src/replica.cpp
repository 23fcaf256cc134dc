// A replica's forward and backward pass as command lists on its unit.
//
// Forward: one list. Each hidden layer computes relu(A W + b) with bf16
// output straight into the next layer's input buffer, the last layer fp32
// logits. (A layer whose K exceeds the device's max_k cannot convert to bf16
// on the device; it then outputs fp32 and the host applies ReLU and the
// conversion — same bits, one more launch.)
// Backward, per layer from the top: dW = A^T dZ, db = 1^T dZ, dA = dZ W^T in
// one list; the host masks dA with the ReLU (A > 0) into the next dZ.
// Cross-example sums (dW, db) thus run on the array in its K order.
#include "systole/replica.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "systole/gemm_plan.h"
#include "systole/numerics.h"

namespace systole {
namespace {

constexpr auto kLaunchTimeout = std::chrono::minutes(10);

}  // namespace

Result<std::unique_ptr<Replica>> Replica::create(Device device, uint32_t unit,
                                                 const MlpShape& shape, uint32_t max_batch) {
  if (unit >= device.info().compute_units)
    return Status(StatusCode::kInvalidArgument,
                  "compute unit " + std::to_string(unit) + " does not exist (device has " +
                      std::to_string(device.info().compute_units) + ")");
  if (max_batch == 0) return Status(StatusCode::kInvalidArgument, "batch size must be >= 1");
  std::unique_ptr<Replica> r(new Replica());
  r->device_ = device;
  r->unit_ = unit;
  r->shape_ = shape;
  r->widths_ = shape.widths();
  r->max_batch_ = max_batch;
  const uint32_t layers = shape.layers();

  auto take = [&](std::vector<Matrix>& into, uint32_t rows, uint32_t cols, uint32_t bytes) {
    auto matrix = r->allocate(rows, cols, bytes);
    if (!matrix.ok()) return matrix.status();
    into.push_back(std::move(matrix).value());
    return ok_status();
  };
  for (uint32_t l = 0; l < layers; ++l) {
    const uint32_t in = r->widths_[l], out = r->widths_[l + 1];
    SYSTOLE_RETURN_IF_ERROR(take(r->weights_, in, out, 2));
    SYSTOLE_RETURN_IF_ERROR(take(r->weights_t_, out, in, 2));
    SYSTOLE_RETURN_IF_ERROR(take(r->biases_, 1, out, 4));
    SYSTOLE_RETURN_IF_ERROR(take(r->activations_, max_batch, in, 2));
    SYSTOLE_RETURN_IF_ERROR(take(r->pre_activations_, max_batch, out, 4));
    SYSTOLE_RETURN_IF_ERROR(take(r->activations_t_, in, max_batch, 2));
    SYSTOLE_RETURN_IF_ERROR(take(r->deltas_, max_batch, out, 2));
    SYSTOLE_RETURN_IF_ERROR(take(r->weight_grads_, in, out, 4));
    SYSTOLE_RETURN_IF_ERROR(take(r->bias_grads_, 1, out, 4));
    SYSTOLE_RETURN_IF_ERROR(take(r->input_grads_, max_batch, in, 4));
  }
  auto logits = r->allocate(max_batch, shape.outputs, 4);
  auto ones = r->allocate(1, max_batch, 2);
  if (!logits.ok()) return logits.status();
  if (!ones.ok()) return ones.status();
  r->logits_ = std::move(logits).value();
  r->ones_ = std::move(ones).value();
  const std::vector<uint16_t> one(max_batch, numerics::f32_to_bf16(1.0f));
  SYSTOLE_RETURN_IF_ERROR(r->upload(r->ones_, one.data(), 1));
  // Room for every descriptor of the largest list (forward of all layers,
  // or one layer's backward), tiled at the device's limits.
  const DeviceInfo& info = device.info();
  uint64_t most = 0;
  for (uint32_t l = 0; l < layers; ++l) {
    const uint64_t in = r->widths_[l], out = r->widths_[l + 1];
    auto blocks = [](uint64_t n, uint64_t limit) { return (n + limit - 1) / limit; };
    const uint64_t forward = blocks(max_batch, info.max_m) * blocks(out, info.max_n) * blocks(in, info.max_k);
    const uint64_t backward = blocks(in, info.max_m) * blocks(out, info.max_n) * blocks(max_batch, info.max_k) +
                              blocks(out, info.max_n) * blocks(max_batch, info.max_k) +
                              blocks(max_batch, info.max_m) * blocks(in, info.max_n) * blocks(out, info.max_k);
    most = std::max(most, std::max(forward * layers, backward));
  }
  if (most > info.max_descriptors)
    return Status(StatusCode::kInvalidArgument, "model too large for one command list");
  auto commands = device.allocate(spec::command_list_bytes(most), (unit * 4 + 3) % info.hbm_banks);
  if (!commands.ok()) return commands.status();
  r->commands_ = std::move(commands).value();
  r->host_activations_.resize(layers);
  return r;
}

Result<Replica::Matrix> Replica::allocate(uint32_t rows, uint32_t cols, uint32_t element_bytes) {
  // Spread a replica's buffers over four banks of its own (pseudo-channels).
  static constexpr uint32_t kBanksPerReplica = 4;
  const uint32_t banks = device_.info().hbm_banks;
  const uint32_t bank = (unit_ * kBanksPerReplica + allocations_++ % kBanksPerReplica) % banks;
  auto buffer = device_.allocate(uint64_t(rows) * cols * element_bytes, bank);
  if (!buffer.ok()) return buffer.status();
  Matrix m;
  m.buffer = std::move(buffer).value();
  m.rows = rows;
  m.cols = cols;
  m.element_bytes = element_bytes;
  return m;
}

Status Replica::upload(Matrix& matrix, const void* data, uint32_t rows) {
  const std::size_t bytes = std::size_t(rows) * matrix.cols * matrix.element_bytes;
  SYSTOLE_RETURN_IF_ERROR(matrix.buffer.write(data, bytes));
  return matrix.buffer.sync(Buffer::SyncDirection::kToDevice, bytes, 0);
}

Status Replica::download(Matrix& matrix, void* data, uint32_t rows) {
  const std::size_t bytes = std::size_t(rows) * matrix.cols * matrix.element_bytes;
  SYSTOLE_RETURN_IF_ERROR(matrix.buffer.sync(Buffer::SyncDirection::kFromDevice, bytes, 0));
  return matrix.buffer.read(data, bytes);
}

Status Replica::add(const GemmProblem& problem) {
  auto descriptors = plan_gemm(device_.info(), problem);
  if (!descriptors.ok()) return descriptors.status();
  pending_.insert(pending_.end(), descriptors->begin(), descriptors->end());
  return ok_status();
}

Status Replica::launch() {
  if (pending_.empty()) return ok_status();
  const auto lists = encode_command_lists(pending_, device_.info().max_descriptors);
  pending_.clear();
  for (const std::vector<uint8_t>& list : lists) {
    SYSTOLE_RETURN_IF_ERROR(commands_.write(list.data(), list.size()));
    SYSTOLE_RETURN_IF_ERROR(commands_.sync(Buffer::SyncDirection::kToDevice, list.size(), 0));
    auto run = device_.start(unit_, commands_);
    if (!run.ok()) return run.status();
    SYSTOLE_RETURN_IF_ERROR(run->wait(kLaunchTimeout));
  }
  return ok_status();
}

Status Replica::load_parameters(const std::vector<float>& flat) {
  std::size_t at = 0;
  for (uint32_t l = 0; l < shape_.layers(); ++l) {
    const uint32_t in = widths_[l], out = widths_[l + 1];
    std::vector<uint16_t> w(std::size_t(in) * out), wt(w.size());
    for (uint32_t i = 0; i < in; ++i)
      for (uint32_t o = 0; o < out; ++o) {
        const uint16_t bits = numerics::f32_to_bf16(flat[at + std::size_t(i) * out + o]);
        w[std::size_t(i) * out + o] = bits;
        wt[std::size_t(o) * in + i] = bits;
      }
    at += w.size();
    SYSTOLE_RETURN_IF_ERROR(upload(weights_[l], w.data(), in));
    SYSTOLE_RETURN_IF_ERROR(upload(weights_t_[l], wt.data(), out));
    SYSTOLE_RETURN_IF_ERROR(upload(biases_[l], flat.data() + at, 1));
    at += out;
  }
  return ok_status();
}

Status Replica::forward(const float* images, uint32_t count, bool keep_activations) {
  if (count == 0 || count > max_batch_)
    return Status(StatusCode::kInvalidArgument,
                  "batch of " + std::to_string(count) + " examples; this replica holds 1.." +
                      std::to_string(max_batch_));
  const uint32_t layers = shape_.layers();
  std::vector<uint16_t>& input = host_activations_[0];
  input.resize(std::size_t(count) * widths_[0]);
  for (std::size_t i = 0; i < input.size(); ++i) input[i] = numerics::f32_to_bf16(images[i]);
  SYSTOLE_RETURN_IF_ERROR(upload(activations_[0], input.data(), count));

  for (uint32_t l = 0; l < layers; ++l) {
    const bool top = l + 1 == layers;
    const bool fuse = !top && widths_[l] <= device_.info().max_k;
    GemmProblem p;
    p.m = count;
    p.k = widths_[l];
    p.n = widths_[l + 1];
    p.a = activations_[l].at();
    p.b = weights_[l].at();
    p.bias = true;
    p.bias_address = biases_[l].buffer.address();
    p.relu = !top;
    p.output_bf16 = fuse;
    p.c = top ? logits_.at() : fuse ? activations_[l + 1].at() : pre_activations_[l].at();
    SYSTOLE_RETURN_IF_ERROR(add(p));
    if (!top && !fuse) {
      // ReLU was applied in fp32 on the device; convert to bf16 here.
      SYSTOLE_RETURN_IF_ERROR(launch());
      std::vector<float> pre(std::size_t(count) * widths_[l + 1]);
      SYSTOLE_RETURN_IF_ERROR(download(pre_activations_[l], pre.data(), count));
      std::vector<uint16_t> next(pre.size());
      for (std::size_t i = 0; i < pre.size(); ++i) next[i] = numerics::f32_to_bf16(pre[i]);
      SYSTOLE_RETURN_IF_ERROR(upload(activations_[l + 1], next.data(), count));
    }
  }
  SYSTOLE_RETURN_IF_ERROR(launch());
  host_logits_.resize(std::size_t(count) * shape_.outputs);
  SYSTOLE_RETURN_IF_ERROR(download(logits_, host_logits_.data(), count));
  if (keep_activations)
    for (uint32_t l = 1; l < layers; ++l) {
      host_activations_[l].resize(std::size_t(count) * widths_[l]);
      SYSTOLE_RETURN_IF_ERROR(download(activations_[l], host_activations_[l].data(), count));
    }
  return ok_status();
}

void Replica::score(const uint8_t* labels, uint32_t count, float loss_divisor, bool gradients,
                    StepResult& result) {
  const uint32_t classes = shape_.outputs;
  if (gradients) host_delta_top_.assign(std::size_t(count) * classes, 0.0f);
  for (uint32_t i = 0; i < count; ++i) {
    const float* z = host_logits_.data() + std::size_t(i) * classes;
    const uint32_t best = uint32_t(std::max_element(z, z + classes) - z);
    const float top = z[best];
    double total = 0;
    for (uint32_t c = 0; c < classes; ++c) total += std::exp(double(z[c]) - top);
    const double log_sum = top + std::log(total);
    result.loss_sum += log_sum - z[labels[i]];
    result.correct += best == labels[i];
    if (gradients) {
      float* d = host_delta_top_.data() + std::size_t(i) * classes;
      for (uint32_t c = 0; c < classes; ++c) {
        const double probability = std::exp(double(z[c]) - log_sum);
        d[c] = float((probability - (c == labels[i] ? 1.0 : 0.0)) / loss_divisor);
      }
    }
  }
  result.examples += count;
}

Status Replica::train_step(const float* images, const uint8_t* labels, uint32_t count,
                           float loss_divisor, std::vector<float>& gradients, StepResult& result) {
  SYSTOLE_RETURN_IF_ERROR(forward(images, count, true));
  score(labels, count, loss_divisor, true, result);

  const uint32_t layers = shape_.layers();
  std::vector<std::size_t> offsets(layers);  // where each layer's weights start
  std::size_t total = 0;
  for (uint32_t l = 0; l < layers; ++l) {
    offsets[l] = total;
    total += std::size_t(widths_[l]) * widths_[l + 1] + widths_[l + 1];
  }
  gradients.resize(total);

  std::vector<float> delta = host_delta_top_;  // fp32 dL/dZ of layer l
  for (uint32_t l = layers; l-- > 0;) {
    const uint32_t in = widths_[l], out = widths_[l + 1];
    std::vector<uint16_t> delta_bf16(delta.size());
    for (std::size_t i = 0; i < delta.size(); ++i) delta_bf16[i] = numerics::f32_to_bf16(delta[i]);
    SYSTOLE_RETURN_IF_ERROR(upload(deltas_[l], delta_bf16.data(), count));
    // A^T, with the batch as its (contiguous) K.
    const std::vector<uint16_t>& a = host_activations_[l];
    std::vector<uint16_t> a_t(std::size_t(in) * count);
    for (uint32_t i = 0; i < count; ++i)
      for (uint32_t f = 0; f < in; ++f) a_t[std::size_t(f) * count + i] = a[std::size_t(i) * in + f];
    SYSTOLE_RETURN_IF_ERROR(activations_t_[l].buffer.write(a_t.data(), a_t.size() * 2));
    SYSTOLE_RETURN_IF_ERROR(
        activations_t_[l].buffer.sync(Buffer::SyncDirection::kToDevice, a_t.size() * 2, 0));

    GemmProblem dw;
    dw.m = in;
    dw.k = count;
    dw.n = out;
    dw.a = {activations_t_[l].buffer.address(), count};
    dw.b = deltas_[l].at();
    dw.c = weight_grads_[l].at();
    SYSTOLE_RETURN_IF_ERROR(add(dw));
    GemmProblem db = dw;
    db.m = 1;
    db.a = {ones_.buffer.address(), count};
    db.c = bias_grads_[l].at();
    SYSTOLE_RETURN_IF_ERROR(add(db));
    if (l > 0) {
      GemmProblem da;
      da.m = count;
      da.k = out;
      da.n = in;
      da.a = deltas_[l].at();
      da.b = weights_t_[l].at();
      da.c = input_grads_[l].at();
      SYSTOLE_RETURN_IF_ERROR(add(da));
    }
    SYSTOLE_RETURN_IF_ERROR(launch());
    SYSTOLE_RETURN_IF_ERROR(download(weight_grads_[l], gradients.data() + offsets[l], in));
    SYSTOLE_RETURN_IF_ERROR(
        download(bias_grads_[l], gradients.data() + offsets[l] + std::size_t(in) * out, 1));
    if (l > 0) {
      delta.resize(std::size_t(count) * in);
      SYSTOLE_RETURN_IF_ERROR(download(input_grads_[l], delta.data(), count));
      for (std::size_t i = 0; i < delta.size(); ++i)  // ReLU': 1 where A > 0
        if (!(numerics::bf16_to_f32(a[i]) > 0.0f)) delta[i] = 0.0f;
    }
  }
  return ok_status();
}

Status Replica::evaluate(const float* images, const uint8_t* labels, uint32_t count,
                         StepResult& result) {
  SYSTOLE_RETURN_IF_ERROR(forward(images, count, false));
  score(labels, count, 1.0f, false, result);
  return ok_status();
}

uint32_t Replica::launches_per_step() const {
  uint32_t unfused = 0;
  for (uint32_t l = 0; l + 1 < shape_.layers(); ++l) unfused += widths_[l] > device_.info().max_k;
  return 1 + unfused + shape_.layers();
}

}  // namespace systole
