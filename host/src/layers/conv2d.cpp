// SPDX-License-Identifier: Apache-2.0
// Conv2D, lowered to products on the array with im2col/col2im: for a chunk
// of examples, the patches become the rows of a matrix `col` (one row per
// output position, columns in (ky, kx, channel) order), and
//   forward      y    = col  W^T (+ b) (ReLU)       [positions x filters]
//   weights      dW   = dy^T col                    [filters x patch]
//   input        dcol = dy W, summed back into dx by col2im
// run on the array, and the bias's db = the fp32 sums of dy's columns
// (MatmulExecutor::sum); the host only gathers and sums. (With placement:
// device and strides 1 the card sums dx itself: see
// MatmulExecutor::conv_input_gradient_on_card.) `col` is never
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
#include "systole/convolution.h"

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
      : same_(same), relu_(relu), use_bias_(use_bias) {
    shape_.filters = filters;
    shape_.kernel_height = kernel.first;
    shape_.kernel_width = kernel.second;
    shape_.stride_height = strides.first;
    shape_.stride_width = strides.second;
  }

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    ConvShape& s = shape_;
    const Shape& input = inputs[0];
    if (input.size() != 3)
      return Status(StatusCode::kInvalidArgument,
                    "conv2d expects height x width x channels, got " + shape_text(input));
    s.height = input[0];
    s.width = input[1];
    s.channels = input[2];
    if (same_) {
      s.out_height = (s.height + s.stride_height - 1) / s.stride_height;
      s.out_width = (s.width + s.stride_width - 1) / s.stride_width;
      const uint32_t pad_h =
          std::max<int64_t>(int64_t(s.out_height - 1) * s.stride_height + s.kernel_height - s.height, 0);
      const uint32_t pad_w =
          std::max<int64_t>(int64_t(s.out_width - 1) * s.stride_width + s.kernel_width - s.width, 0);
      s.top = pad_h / 2;
      s.left = pad_w / 2;
      bottom_ = pad_h - s.top;
      right_ = pad_w - s.left;
    } else {
      if (s.kernel_height > s.height || s.kernel_width > s.width)
        return Status(StatusCode::kInvalidArgument, "kernel_size: " + std::to_string(s.kernel_height) + "x" +
                                                        std::to_string(s.kernel_width) +
                                                        " is larger than the input " + shape_text(input) +
                                                        " with padding valid");
      s.out_height = (s.height - s.kernel_height) / s.stride_height + 1;
      s.out_width = (s.width - s.kernel_width) / s.stride_width + 1;
    }
    // torch's padding='same' takes stride 1 and even padding only;
    // otherwise a ZeroPad2d module goes first.
    pad_module_ =
        same_ && (s.stride_height != 1 || s.stride_width != 1 || s.top != bottom_ || s.left != right_);
    const std::string prefix = site.module(pad_module_ ? 1 : 0);
    weight_ = store.declare(prefix + ".weight", {s.filters, s.channels, s.kernel_height, s.kernel_width},
                            Region::kTrainable,
                            /*integer=*/false, /*axes=*/{0, 2, 3, 1});
    if (use_bias_) bias_ = store.declare(prefix + ".bias", {s.filters}, Region::kTrainable);
    return Shape{s.out_height, s.out_width, s.filters};
  }

  void initialize(ParameterStore& store, std::mt19937_64& rng) const override {
    const ConvShape& s = shape_;
    // Keras draws the kernel as [kh][kw][channels][filters].
    glorot_uniform(rng, uint64_t(s.patch()), uint64_t(s.kernel_height) * s.kernel_width * s.filters,
                   uint64_t(s.patch()) * s.filters, [&](std::size_t i, float value) {
                     const std::size_t f = i % s.filters, c = i / s.filters % s.channels;
                     const std::size_t kx = i / s.filters / s.channels % s.kernel_width,
                                       ky = i / s.filters / s.channels / s.kernel_width;
                     store.values(weight_)[f * s.patch() + (ky * s.kernel_width + kx) * s.channels + c] =
                         value;
                   });
  }

  Status forward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                 Activations& output) override {
    const Activations& input = inputs[0];
    const uint32_t batch = input.batch;
    output.batch = batch;
    output.shape = {shape_.out_height, shape_.out_width, shape_.filters};
    round_input(input);
    SYSTOLE_RETURN_IF_ERROR(place_values(context, output));
    const uint32_t chunk = chunk_examples(batch, context.matmul->k_block());
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t count = std::min(chunk, batch - first);
      const PatchRows col(*this, input.values.data(), input_bf16_.data(), first, count);
      MatmulCall call;
      call.m = count * shape_.positions();
      call.k = shape_.patch();
      call.n = shape_.filters;
      call.a_rows = &col;
      call.rows_key = patches_key(input, first);
      call.b = store.operand(weight_);
      call.b_transposed = true;
      if (use_bias_) call.bias = store.operand(bias_);
      call.relu = relu_;
      const std::size_t at = std::size_t(first) * shape_.positions() * shape_.filters;
      auto c = output.destination().part(at, std::size_t(call.m) * call.n);
      if (!c.ok()) return c.status();
      call.c = std::move(c).value();
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
    Operand delta = output_gradient.operand();
    if (relu_) {
      // The output is on the host (output_on_card), and so its gradient.
      masked_.resize(output_gradient.elements());
      SYSTOLE_RETURN_IF_ERROR(
          context.matmul->relu_mask(delta, output.operand(), masked_.data(), masked_.size()));
      delta = masked_.data();
    }
    if (use_bias_) {
      SumCall db;  // db = the sum of delta over the batch's pixels, in fp32
      db.x = delta;
      db.rows = batch * shape_.positions();
      db.width = shape_.filters;
      db.out = store.gradient_destination(bias_);
      SYSTOLE_RETURN_IF_ERROR(context.matmul->sum(db));
    }
    round_input(input);
    if (input_gradient) SYSTOLE_RETURN_IF_ERROR(gradient_like(context, input, *input_gradient));
    const uint32_t chunk = chunk_examples(batch, context.matmul->k_block());
    for (uint32_t first = 0; first < batch; first += chunk) {
      const uint32_t count = std::min(chunk, batch - first);
      const uint32_t positions = count * shape_.positions();
      const std::size_t at = std::size_t(first) * shape_.positions() * shape_.filters;
      auto part = delta.part(at, std::size_t(positions) * shape_.filters);
      if (!part.ok()) return part.status();
      const Operand dy = std::move(part).value();
      const PatchRows col(*this, input.values.data(), input_bf16_.data(), first, count);
      std::vector<MatmulCall> calls;
      MatmulCall dw;
      dw.m = shape_.filters;
      dw.k = positions;
      dw.n = shape_.patch();
      dw.a = dy;
      dw.a_transposed = true;
      dw.b_rows = &col;
      dw.rows_key = patches_key(input, first);
      dw.rows_kept = true;  // the forward's, if the executor kept them
      dw.accumulate = first > 0;
      dw.c = store.gradient_destination(weight_);
      calls.push_back(dw);
      // With the model on the card, a convolution of strides 1 sums its
      // input gradient there, so that only dx crosses the host link, not
      // dcol (kernel_height * kernel_width times as large). The same bits.
      const bool card_col2im = input_gradient && context.matmul->keeps_activations() &&
                               context.matmul->supports(MatmulExecutor::Feature::kConvInputGradient) &&
                               shape_.stride_height == 1 && shape_.stride_width == 1;
      // dcol = dy W into the host's dcol_ (taken only where it is used).
      auto dcol = [&] {
        dcol_.resize(std::size_t(positions) * shape_.patch());
        MatmulCall call;
        call.m = positions;
        call.k = shape_.filters;
        call.n = shape_.patch();
        call.a = dy;
        call.b = store.operand(weight_);
        call.c = dcol_.data();
        return call;
      };
      if (input_gradient && !card_col2im) calls.push_back(dcol());
      SYSTOLE_RETURN_IF_ERROR(context.matmul->run(calls));
      if (!input_gradient) continue;
      float* dx = input_gradient->values.data() + std::size_t(first) * shape_.input_values();
      if (card_col2im) {
        const Status on_card =
            context.matmul->conv_input_gradient_on_card(shape_, count, dy, store.operand(weight_), dx);
        // Without room on the card for it, dcol comes down as elsewhere.
        if (on_card.code() != StatusCode::kUnavailable) {
          SYSTOLE_RETURN_IF_ERROR(on_card);
          continue;
        }
        SYSTOLE_RETURN_IF_ERROR(context.matmul->run(dcol()));
      }
      col2im(shape_, count, dcol_.data(), dx);
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
      code = "torch.nn.ZeroPad2d((" + std::to_string(shape_.left) + ", " + std::to_string(right_) + ", " +
             std::to_string(shape_.top) + ", " + std::to_string(bottom_) + ")), ";
    code += "torch.nn.Conv2d(" + std::to_string(shape_.channels) + ", " + std::to_string(shape_.filters) +
            ", " + pair_text(shape_.kernel_height, shape_.kernel_width);
    if (shape_.stride_height != 1 || shape_.stride_width != 1)
      code += ", stride=" + pair_text(shape_.stride_height, shape_.stride_width);
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
    const uint64_t per_example = uint64_t(shape_.positions()) * shape_.patch();
    const uint64_t fit = std::max<uint64_t>(1, kChunkElements / per_example);
    if (fit >= batch) return batch;
    const uint64_t positions = uint64_t(shape_.positions());
    const uint64_t unit = k_block ? k_block / std::gcd(positions, uint64_t(k_block)) : 1;
    return uint32_t(std::min<uint64_t>(batch, std::max(unit, fit / unit * unit)));
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
    shape_.walk_patches(first, count, [&](std::size_t row, int64_t source) {
      if (source >= 0)
        std::memcpy(col + row, x + source, shape_.channels * sizeof(T));
      else
        std::fill_n(col + row, shape_.channels, T(0));
    });
  }

  // input_bf16_: the input rounded to bf16, which col's bf16 rows gather.
  void round_input(const Activations& input) {
    input_bf16_.resize(input.values.size());
    round_to_bf16(input.values.data(), input.values.size(), input_bf16_.data());
  }

  bool same_, relu_, use_bias_;
  ConvShape shape_;
  uint32_t bottom_ = 0, right_ = 0;
  bool pad_module_ = false;
  std::size_t weight_ = 0, bias_ = 0;
  std::vector<float> dcol_, masked_;
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
