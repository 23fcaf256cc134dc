// SPDX-License-Identifier: Apache-2.0
// Conv2D, lowered to products on the array with im2col/col2im: for a chunk
// of examples, the patches become the rows of a matrix `col` (one row per
// output position, columns in (ky, kx, channel) order), and
//   forward      y    = col  W^T (+ b) (ReLU)       [positions x filters]
//   weights      dW   = dy^T col                    [filters x patch]
//   bias         db   = 1^T dy
//   input        dcol = dy W, scattered back by col2im
// run on the array; the host only gathers and scatters. `col` is never
// stored on the host: the executor asks for it (PatchRows) and the device
// path gathers it in bf16 from the input rounded once, straight into
// device memory (the same bits as rounding col, as f32_to_bf16 is per
// value), and may keep it there from the forward product to the weight
// gradient's, so that it is gathered and crosses the host link once a
// step. The store keeps the weight, torch.nn.Conv2d's [filters,
// channels, kh, kw], as [filters][kh][kw][channels]: W itself, which the
// products read and dW writes in place (with placement: device, on the
// card). Chunks bound the memory `col` takes while it is made and each
// launch's share of it (kept from forward to backward, a batch's `col`
// takes 2 bytes a value on the device where the bank has room, else it is
// made again); their boundaries fall on the executor's K block, so dW
// chained over chunks has the bits of one product. Without a fused ReLU
// the output may stay on the card (a Flatten and a Dense layer read it
// there); its gradient is then read there too, a chunk at a time.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "layer_kit.h"

namespace systole {
namespace {

// Elements of `col` a chunk aims at (16 MiB of fp32).
constexpr uint64_t kChunkElements = uint64_t(1) << 22;

class Conv2D;

// The rows of `col` for examples [first, first + count), made when the
// executor asks: in fp32 from the input, in bf16 from its rounded copy.
class PatchRows final : public OperandRows {
 public:
  PatchRows(const Conv2D& layer, const float* x, const uint16_t* x_bf16, uint32_t first, uint32_t count)
      : layer_(layer), x_(x), x_bf16_(x_bf16), first_(first), count_(count) {}
  void fp32(float* out) const override;
  void bf16(uint16_t* out) const override;

 private:
  const Conv2D& layer_;
  const float* x_;
  const uint16_t* x_bf16_;
  uint32_t first_, count_;
};

class Conv2D final : public Layer {
 public:
  Conv2D(uint32_t filters, std::pair<uint32_t, uint32_t> kernel, std::pair<uint32_t, uint32_t> strides,
         bool same, bool relu, bool use_bias)
      : filters_(filters),
        kh_(kernel.first),
        kw_(kernel.second),
        sh_(strides.first),
        sw_(strides.second),
        same_(same),
        relu_(relu),
        use_bias_(use_bias) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    const Shape& input = inputs[0];
    if (input.size() != 3)
      return Status(StatusCode::kInvalidArgument,
                    "conv2d expects height x width x channels, got " + shape_text(input));
    h_ = input[0];
    w_ = input[1];
    c_ = input[2];
    if (same_) {
      oh_ = (h_ + sh_ - 1) / sh_;
      ow_ = (w_ + sw_ - 1) / sw_;
      const uint32_t pad_h = std::max<int64_t>(int64_t(oh_ - 1) * sh_ + kh_ - h_, 0);
      const uint32_t pad_w = std::max<int64_t>(int64_t(ow_ - 1) * sw_ + kw_ - w_, 0);
      top_ = pad_h / 2;
      left_ = pad_w / 2;
      bottom_ = pad_h - top_;
      right_ = pad_w - left_;
    } else {
      if (kh_ > h_ || kw_ > w_)
        return Status(StatusCode::kInvalidArgument, "kernel_size: " + std::to_string(kh_) + "x" +
                                                        std::to_string(kw_) + " is larger than the input " +
                                                        shape_text(input) + " with padding valid");
      oh_ = (h_ - kh_) / sh_ + 1;
      ow_ = (w_ - kw_) / sw_ + 1;
    }
    patch_ = kh_ * kw_ * c_;
    // torch's padding='same' takes stride 1 and even padding only;
    // otherwise a ZeroPad2d module goes first.
    pad_module_ = same_ && (sh_ != 1 || sw_ != 1 || top_ != bottom_ || left_ != right_);
    const std::string prefix = site.module(pad_module_ ? 1 : 0);
    weight_ = store.declare(prefix + ".weight", {filters_, c_, kh_, kw_}, Region::kTrainable,
                            /*integer=*/false, /*axes=*/{0, 2, 3, 1});
    if (use_bias_) bias_ = store.declare(prefix + ".bias", {filters_}, Region::kTrainable);
    return Shape{oh_, ow_, filters_};
  }

  void initialize(ParameterStore& store, std::mt19937_64& rng) const override {
    // Keras draws the kernel as [kh][kw][channels][filters].
    glorot_uniform(rng, uint64_t(patch_), uint64_t(kh_) * kw_ * filters_, uint64_t(patch_) * filters_,
                   [&](std::size_t i, float value) {
                     const std::size_t f = i % filters_, c = i / filters_ % c_;
                     const std::size_t kx = i / filters_ / c_ % kw_, ky = i / filters_ / c_ / kw_;
                     store.values(weight_)[f * patch_ + (ky * kw_ + kx) * c_ + c] = value;
                   });
  }

  Status forward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                 Activations& output) override {
    const Activations& input = inputs[0];
    const uint32_t batch = input.batch;
    output.batch = batch;
    output.shape = {oh_, ow_, filters_};
    output.values.resize(std::size_t(batch) * oh_ * ow_ * filters_);
    round_input(input);
    if (output.on_card)
      SYSTOLE_RETURN_IF_ERROR(context.matmul->hold_on_card(output.values.data(), output.values.size()));
    const uint32_t chunk = chunk_examples(batch, context.matmul->k_block());
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t count = std::min(chunk, batch - first);
      const PatchRows col(*this, input.values.data(), input_bf16_.data(), first, count);
      MatmulCall call;
      call.m = count * oh_ * ow_;
      call.k = patch_;
      call.n = filters_;
      call.a_rows = &col;
      call.rows_key = patches_key(input, first);
      call.b = store.values(weight_);
      call.b_transposed = true;
      call.bias = use_bias_ ? store.values(bias_) : nullptr;
      call.relu = relu_;
      call.c = output.values.data() + std::size_t(first) * oh_ * ow_ * filters_;
      call.c_on_card = output.on_card;
      SYSTOLE_RETURN_IF_ERROR(context.matmul->run(call));
    }
    return ok_status();
  }

  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                  const Activations& output, const Activations& output_gradient,
                  const InputGradients& input_gradients) override {
    const Activations& input = inputs[0];
    Activations* input_gradient = input_gradients[0];
    const uint32_t batch = input.batch;
    const float* delta = output_gradient.values.data();
    const bool delta_on_card = output_gradient.on_card;
    if (relu_ && delta_on_card)
      return Status(StatusCode::kInvalidArgument, "conv2d: the gradient of a fused ReLU is on the card");
    if (relu_) {
      relu_mask(output_gradient.values, output.values, masked_);
      delta = masked_.data();
    }
    round_input(input);
    if (input_gradient) zeros_like(input, *input_gradient);
    const uint32_t chunk = chunk_examples(batch, context.matmul->k_block());
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t count = std::min(chunk, batch - first);
      const uint32_t positions = count * oh_ * ow_;
      const float* dy = delta + std::size_t(first) * oh_ * ow_ * filters_;
      const PatchRows col(*this, input.values.data(), input_bf16_.data(), first, count);
      std::vector<MatmulCall> calls;
      MatmulCall dw;
      dw.m = filters_;
      dw.k = positions;
      dw.n = patch_;
      dw.a = dy;
      dw.a_transposed = true;
      dw.a_on_card = delta_on_card;
      dw.b_rows = &col;
      dw.rows_key = patches_key(input, first);
      dw.rows_kept = true;  // the forward's, if the executor kept them
      dw.accumulate = first > 0;
      dw.c = store.gradient(weight_);
      calls.push_back(dw);
      if (use_bias_) {
        ones_.assign(positions, 1.0f);
        MatmulCall db;
        db.m = 1;
        db.k = positions;
        db.n = filters_;
        db.a = ones_.data();
        db.b = dy;
        db.b_on_card = delta_on_card;
        db.accumulate = first > 0;
        db.c = store.gradient(bias_);
        calls.push_back(db);
      }
      if (input_gradient) {
        dcol_.resize(std::size_t(positions) * patch_);
        MatmulCall dx;
        dx.m = positions;
        dx.k = filters_;
        dx.n = patch_;
        dx.a = dy;
        dx.a_on_card = delta_on_card;
        dx.b = store.values(weight_);
        dx.c = dcol_.data();
        calls.push_back(dx);
      }
      SYSTOLE_RETURN_IF_ERROR(context.matmul->run(calls));
      if (input_gradient) col2im(first, count, input_gradient->values.data());
    }
    return ok_status();
  }

  // The ReLU's mask would need the output and its gradient in one layout
  // on the card, and a Flatten's gradient arrives in another.
  bool output_on_card() const override { return !relu_; }

  uint32_t torch_modules() const override { return 1 + (pad_module_ ? 1 : 0) + (relu_ ? 1 : 0); }
  std::string torch_code() const override {
    std::string code;
    if (pad_module_)
      code = "torch.nn.ZeroPad2d((" + std::to_string(left_) + ", " + std::to_string(right_) + ", " +
             std::to_string(top_) + ", " + std::to_string(bottom_) + ")), ";
    code += "torch.nn.Conv2d(" + std::to_string(c_) + ", " + std::to_string(filters_) + ", " +
            pair_text(kh_, kw_);
    if (sh_ != 1 || sw_ != 1) code += ", stride=" + pair_text(sh_, sw_);
    if (same_ && !pad_module_) code += ", padding='same'";
    if (!use_bias_) code += ", bias=False";
    return code + ")" + (relu_ ? ", torch.nn.ReLU()" : "");
  }

 private:
  static std::string pair_text(uint32_t a, uint32_t b) {
    return a == b ? std::to_string(a) : "(" + std::to_string(a) + ", " + std::to_string(b) + ")";
  }

  // Examples per chunk: all of them when `col` fits kChunkElements, else a
  // multiple of the examples that make whole K blocks of positions.
  uint32_t chunk_examples(uint32_t batch, uint32_t k_block) const {
    const uint64_t per_example = uint64_t(oh_) * ow_ * patch_;
    const uint64_t fit = std::max<uint64_t>(1, kChunkElements / per_example);
    if (fit >= batch) return batch;
    const uint64_t positions = uint64_t(oh_) * ow_;
    const uint64_t unit = k_block ? k_block / std::gcd(positions, uint64_t(k_block)) : 1;
    return uint32_t(std::min<uint64_t>(batch, std::max(unit, fit / unit * unit)));
  }

  // Calls visit(row, source) for each of the `channels`-long pieces of the
  // rows of `col` for examples [first, first + count), in order: row is its
  // offset in `col`, source the offset of the input pixel it copies, or -1
  // in the padding.
  template <class Visit>
  void walk_patches(uint32_t first, uint32_t count, Visit visit) const {
    std::size_t row = 0;
    for (uint32_t n = first; n < first + count; ++n)
      for (uint32_t oy = 0; oy < oh_; ++oy)
        for (uint32_t ox = 0; ox < ow_; ++ox)
          for (uint32_t ky = 0; ky < kh_; ++ky)
            for (uint32_t kx = 0; kx < kw_; ++kx, row += c_) {
              const int64_t y = int64_t(oy) * sh_ + ky - top_, x = int64_t(ox) * sw_ + kx - left_;
              const bool inside = y >= 0 && x >= 0 && y < h_ && x < w_;
              visit(row, inside ? ((int64_t(n) * h_ + y) * w_ + x) * c_ : int64_t(-1));
            }
  }

  friend class PatchRows;

  // The key under which an executor may keep the patches of the chunk at
  // `first` between the forward product (A) and the weight gradient (B).
  RowsKey patches_key(const Activations& input, uint32_t first) const {
    return RowsKey{this, input.values.data(), first};
  }

  // The rows of col for examples [first, first + count) from x (fp32, or
  // bf16: a zero is +0 in both).
  template <class T>
  void im2col(const T* x, uint32_t first, uint32_t count, T* col) const {
    walk_patches(first, count, [&](std::size_t row, int64_t source) {
      if (source >= 0)
        std::memcpy(col + row, x + source, c_ * sizeof(T));
      else
        std::fill_n(col + row, c_, T(0));
    });
  }

  // input_bf16_: the input rounded to bf16, which col's bf16 rows gather.
  void round_input(const Activations& input) {
    input_bf16_.resize(input.values.size());
    round_to_bf16(input.values.data(), input.values.size(), input_bf16_.data());
  }

  // dx += the rows of dcol_, each piece added back to the pixel it came
  // from, in a fixed order.
  void col2im(uint32_t first, uint32_t count, float* dx) const {
    walk_patches(first, count, [&](std::size_t row, int64_t source) {
      if (source < 0) return;
      for (uint32_t c = 0; c < c_; ++c) dx[source + c] += dcol_[row + c];
    });
  }

  uint32_t filters_, kh_, kw_, sh_, sw_;
  bool same_, relu_, use_bias_;
  uint32_t h_ = 0, w_ = 0, c_ = 0, oh_ = 0, ow_ = 0, patch_ = 0;
  uint32_t top_ = 0, left_ = 0, bottom_ = 0, right_ = 0;
  bool pad_module_ = false;
  std::size_t weight_ = 0, bias_ = 0;
  std::vector<float> dcol_, ones_, masked_;
  std::vector<uint16_t> input_bf16_;
};

void PatchRows::fp32(float* out) const { layer_.im2col(x_, first_, count_, out); }
void PatchRows::bf16(uint16_t* out) const { layer_.im2col(x_bf16_, first_, count_, out); }

}  // namespace

Result<std::unique_ptr<Layer>> make_conv2d(LayerArgs& args) {
  if (!args.has("filters")) return Status(StatusCode::kInvalidArgument, "filters: required");
  if (!args.has("kernel_size")) return Status(StatusCode::kInvalidArgument, "kernel_size: required");
  auto filters = args.positive("filters", 1);
  if (!filters.ok()) return filters.status();
  auto kernel = args.pair("kernel_size", {1, 1});
  if (!kernel.ok()) return kernel.status();
  auto strides = args.pair("strides", {1, 1});
  if (!strides.ok()) return strides.status();
  auto padding = args.choice("padding", {"valid", "same"}, "valid");
  if (!padding.ok()) return padding.status();
  auto relu = fused_relu(args);
  if (!relu.ok()) return relu.status();
  auto use_bias = args.boolean("use_bias", true);
  if (!use_bias.ok()) return use_bias.status();
  return std::unique_ptr<Layer>(
      new Conv2D(*filters, *kernel, *strides, *padding == "same", *relu, *use_bias));
}

}  // namespace systole
