// SPDX-License-Identifier: Apache-2.0
// Keras' MultiHeadAttention, as self-attention over a [positions, width]
// input. Every product runs on the array: the query, key and value
// projections as one product with the three weights stacked (they are
// declared one after another, so the store holds them as one matrix), the
// heads' Q K^T and P V as one command list of a product per example and
// head, and the output projection. The softmax runs on the host in fp32
// with each row's largest subtracted; a causal mask leaves out the later
// positions (exactly 0 where Keras adds -1e9), and the input's padding
// mask (Activations::mask, from an embedding with mask_zero) the padded
// keys, as PyTorch's key_padding_mask: every query, padded or not, attends
// to the tokens only (a row with no key left is all 0); dropout (inverted) applies
// to the attention probabilities with a mask from (seed, step, replica,
// layer).
//
// The reference module's names: <prefix>.query/.key/.value/.output, each a
// torch.nn.Linear ("weight" [out, in], "bias" [out]).
#include <cmath>

#include "layer_kit.h"

namespace systole {
namespace {

struct AttentionOptions {
  uint32_t heads = 1;
  uint32_t key_dim = 0;    // 0: width / heads
  uint32_t value_dim = 0;  // 0: key_dim
  float dropout = 0;
  bool use_bias = true;
  bool causal = false;
};

class MultiHeadAttention final : public Layer {
 public:
  explicit MultiHeadAttention(const AttentionOptions& options) : options_(options) {}

  Result<Shape> build(const Shapes& inputs, const LayerSite& site, ParameterStore& store) override {
    const Shape& input = inputs[0];
    if (input.size() != 2)
      return invalid("multi_head_attention takes [positions, width] inputs, got " + shape_text(input));
    positions_ = input[0];
    width_ = input[1];
    heads_ = options_.heads;
    key_dim_ = options_.key_dim;
    if (key_dim_ == 0) {
      if (width_ % heads_ != 0)
        return invalid("num_heads: the width " + std::to_string(width_) + " does not divide by " +
                       std::to_string(heads_) + " heads (give key_dim to choose the heads' width)");
      key_dim_ = width_ / heads_;
    }
    value_dim_ = options_.value_dim ? options_.value_dim : key_dim_;
    layer_ = site.index;
    const std::string prefix = site.module();
    const uint64_t keys = uint64_t(heads_) * key_dim_, values = uint64_t(heads_) * value_dim_;
    // The three projections' weights one after another: one stacked matrix.
    query_ = store.declare(prefix + ".query.weight", {keys, width_}, Region::kTrainable);
    store.declare(prefix + ".key.weight", {keys, width_}, Region::kTrainable);
    store.declare(prefix + ".value.weight", {values, width_}, Region::kTrainable);
    if (options_.use_bias) {
      query_bias_ = store.declare(prefix + ".query.bias", {keys}, Region::kTrainable);
      store.declare(prefix + ".key.bias", {keys}, Region::kTrainable);
      store.declare(prefix + ".value.bias", {values}, Region::kTrainable);
    }
    output_ = store.declare(prefix + ".output.weight", {width_, values}, Region::kTrainable);
    if (options_.use_bias)
      output_bias_ = store.declare(prefix + ".output.bias", {width_}, Region::kTrainable);
    return input;
  }

  // Glorot uniform per projection, as for a dense layer of its shape.
  void initialize(ParameterStore& store, std::mt19937_64& rng) const override {
    const uint32_t keys = heads_ * key_dim_, values = heads_ * value_dim_;
    float* w = store.values(query_);
    uint64_t at = 0;
    for (uint32_t rows : {keys, keys, values}) {
      glorot_uniform(rng, width_, rows, uint64_t(rows) * width_,
                     [&](std::size_t i, float v) { w[at + (i % rows) * width_ + i / rows] = v; });
      at += uint64_t(rows) * width_;
    }
    float* out = store.values(output_);
    glorot_uniform(rng, values, width_, uint64_t(values) * width_,
                   [&](std::size_t i, float v) { out[(i % width_) * values + i / width_] = v; });
  }

  Status forward(LayerContext& context, ParameterStore& store, const Inputs& inputs,
                 Activations& output) override {
    const Activations& x = inputs[0];
    batch_ = x.batch;
    const uint32_t rows = batch_ * positions_, stacked = stacked_width();
    // Q | K | V = x [Wq; Wk; Wv]^T + [bq; bk; bv].
    qkv_.resize(std::size_t(rows) * stacked);
    MatmulCall projection;
    projection.m = rows;
    projection.k = width_;
    projection.n = stacked;
    projection.a = x.values.data();
    projection.b = store.operand(query_, std::size_t(stacked) * width_);
    projection.b_transposed = true;
    if (options_.use_bias) {
      projection.bias = store.operand(query_bias_, stacked);
    }
    projection.c = qkv_.data();
    SYSTOLE_RETURN_IF_ERROR(context.matmul->run(projection));
    // Per head, contiguous: Q scaled by 1 / sqrt(key_dim) (Keras scales the
    // query before the product), K and V.
    const float scale = 1.0f / std::sqrt(float(key_dim_));
    split_heads(qkv_.data(), stacked, 0, key_dim_, scale, q_);
    split_heads(qkv_.data(), stacked, heads_ * key_dim_, key_dim_, 1.0f, k_);
    split_heads(qkv_.data(), stacked, 2 * heads_ * key_dim_, value_dim_, 1.0f, v_);
    // Scores S = Q K^T, a product per example and head in one command list.
    const std::size_t square = std::size_t(positions_) * positions_;
    scores_.resize(std::size_t(batch_) * heads_ * square);
    std::vector<MatmulCall> calls;
    for (uint32_t g = 0; g < batch_ * heads_; ++g) {
      MatmulCall s;
      s.m = positions_;
      s.k = key_dim_;
      s.n = positions_;
      s.a = q_.data() + std::size_t(g) * positions_ * key_dim_;
      s.b = k_.data() + std::size_t(g) * positions_ * key_dim_;
      s.b_transposed = true;
      s.c = scores_.data() + g * square;
      calls.push_back(s);
    }
    SYSTOLE_RETURN_IF_ERROR(context.matmul->run(calls));
    softmax_rows(x.mask);
    draw_dropout(context);
    // O = P V per example and head, then the heads side by side.
    const std::vector<float>& weights = dropped_.empty() ? probabilities_ : dropped_;
    heads_out_.resize(std::size_t(batch_) * heads_ * positions_ * value_dim_);
    calls.clear();
    for (uint32_t g = 0; g < batch_ * heads_; ++g) {
      MatmulCall o;
      o.m = positions_;
      o.k = positions_;
      o.n = value_dim_;
      o.a = weights.data() + g * square;
      o.b = v_.data() + std::size_t(g) * positions_ * value_dim_;
      o.c = heads_out_.data() + std::size_t(g) * positions_ * value_dim_;
      calls.push_back(o);
    }
    SYSTOLE_RETURN_IF_ERROR(context.matmul->run(calls));
    const uint32_t values = heads_ * value_dim_;
    merged_.resize(std::size_t(rows) * values);
    merge_heads(heads_out_.data(), value_dim_, merged_.data());
    // y = O Wo^T + bo.
    output.batch = batch_;
    output.shape = {positions_, width_};
    output.values.resize(std::size_t(rows) * width_);
    MatmulCall out;
    out.m = rows;
    out.k = values;
    out.n = width_;
    out.a = merged_.data();
    out.b = store.operand(output_);
    out.b_transposed = true;
    if (options_.use_bias) {
      out.bias = store.operand(output_bias_);
    }
    out.c = output.values.data();
    return context.matmul->run(out);
  }

  Status backward(LayerContext& context, ParameterStore& store, const Inputs& inputs, const Activations&,
                  const Activations& output_gradient, const InputGradients& input_gradients) override {
    const Activations& x = inputs[0];
    const uint32_t rows = batch_ * positions_, values = heads_ * value_dim_, stacked = stacked_width();
    const float* dy = output_gradient.values.data();
    // The output projection: dWo = dy^T O, dbo = the sums of dy's rows, dO = dy Wo.
    d_merged_.assign(std::size_t(rows) * values, 0.0f);
    std::vector<MatmulCall> calls;
    MatmulCall dwo;
    dwo.m = width_;
    dwo.k = rows;
    dwo.n = values;
    dwo.a = dy;
    dwo.a_transposed = true;
    dwo.b = merged_.data();
    dwo.c = store.gradient_destination(output_);
    calls.push_back(dwo);
    if (options_.use_bias)
      SYSTOLE_RETURN_IF_ERROR(context.matmul->sum(bias_sums(dy, width_, store.gradient(output_bias_))));
    MatmulCall dout;
    dout.m = rows;
    dout.k = width_;
    dout.n = values;
    dout.a = dy;
    dout.b = store.operand(output_);
    dout.c = d_merged_.data();
    calls.push_back(dout);
    SYSTOLE_RETURN_IF_ERROR(context.matmul->run(calls));
    // Per head: dP' = dO V^T and dV = P'^T dO.
    d_heads_out_.resize(heads_out_.size());
    split_heads(d_merged_.data(), values, 0, value_dim_, 1.0f, d_heads_out_);
    const std::size_t square = std::size_t(positions_) * positions_;
    d_probabilities_.assign(scores_.size(), 0.0f);
    d_v_.assign(v_.size(), 0.0f);
    const std::vector<float>& weights = dropped_.empty() ? probabilities_ : dropped_;
    calls.clear();
    for (uint32_t g = 0; g < batch_ * heads_; ++g) {
      const std::size_t head_values = std::size_t(g) * positions_ * value_dim_;
      MatmulCall dp;
      dp.m = positions_;
      dp.k = value_dim_;
      dp.n = positions_;
      dp.a = d_heads_out_.data() + head_values;
      dp.b = v_.data() + head_values;
      dp.b_transposed = true;
      dp.c = d_probabilities_.data() + g * square;
      calls.push_back(dp);
      MatmulCall dv;
      dv.m = positions_;
      dv.k = positions_;
      dv.n = value_dim_;
      dv.a = weights.data() + g * square;
      dv.a_transposed = true;
      dv.b = d_heads_out_.data() + head_values;
      dv.c = d_v_.data() + head_values;
      calls.push_back(dv);
    }
    SYSTOLE_RETURN_IF_ERROR(context.matmul->run(calls));
    // Through dropout and the softmax: dS = P (dP - sum(dP P)) per row.
    if (!dropout_mask_.empty())
      for (std::size_t i = 0; i < d_probabilities_.size(); ++i) d_probabilities_[i] *= dropout_mask_[i];
    d_scores_.assign(scores_.size(), 0.0f);
    for (std::size_t row = 0; row < scores_.size() / positions_; ++row) {
      const float* p = probabilities_.data() + row * positions_;
      const float* dp = d_probabilities_.data() + row * positions_;
      double dot = 0;
      for (uint32_t j = 0; j < positions_; ++j) dot += double(dp[j]) * p[j];
      for (uint32_t j = 0; j < positions_; ++j) d_scores_[row * positions_ + j] = float(p[j] * (dp[j] - dot));
    }
    // dQs = dS K (for the scaled query) and dK = dS^T Qs.
    d_q_.assign(q_.size(), 0.0f);
    d_k_.assign(k_.size(), 0.0f);
    calls.clear();
    for (uint32_t g = 0; g < batch_ * heads_; ++g) {
      const std::size_t head_keys = std::size_t(g) * positions_ * key_dim_;
      MatmulCall dq;
      dq.m = positions_;
      dq.k = positions_;
      dq.n = key_dim_;
      dq.a = d_scores_.data() + g * square;
      dq.b = k_.data() + head_keys;
      dq.c = d_q_.data() + head_keys;
      calls.push_back(dq);
      MatmulCall dk;
      dk.m = positions_;
      dk.k = positions_;
      dk.n = key_dim_;
      dk.a = d_scores_.data() + g * square;
      dk.a_transposed = true;
      dk.b = q_.data() + head_keys;
      dk.c = d_k_.data() + head_keys;
      calls.push_back(dk);
    }
    SYSTOLE_RETURN_IF_ERROR(context.matmul->run(calls));
    // Back to [rows, Q | K | V] (the query's gradient through its scale).
    d_qkv_.assign(qkv_.size(), 0.0f);
    const float scale = 1.0f / std::sqrt(float(key_dim_));
    merge_heads(d_q_.data(), key_dim_, d_qkv_.data(), stacked, 0, scale);
    merge_heads(d_k_.data(), key_dim_, d_qkv_.data(), stacked, heads_ * key_dim_, 1.0f);
    merge_heads(d_v_.data(), value_dim_, d_qkv_.data(), stacked, 2 * heads_ * key_dim_, 1.0f);
    // The stacked projection: dW = dQKV^T x, db = the sums of dQKV's rows, dx = dQKV W.
    calls.clear();
    MatmulCall dw;
    dw.m = stacked;
    dw.k = rows;
    dw.n = width_;
    dw.a = d_qkv_.data();
    dw.a_transposed = true;
    dw.b = x.values.data();
    dw.c = store.gradient_destination(query_, std::size_t(stacked) * width_);
    calls.push_back(dw);
    if (options_.use_bias)
      SYSTOLE_RETURN_IF_ERROR(
          context.matmul->sum(bias_sums(d_qkv_.data(), stacked, store.gradient(query_bias_))));
    if (Activations* dx = input_gradients[0]) {
      zeros_like(x, *dx);
      MatmulCall d_input;
      d_input.m = rows;
      d_input.k = stacked;
      d_input.n = width_;
      d_input.a = d_qkv_.data();
      d_input.b = store.operand(query_, std::size_t(stacked) * width_);
      d_input.c = dx->values.data();
      calls.push_back(d_input);
    }
    return context.matmul->run(calls);
  }

  std::string torch_code() const override {
    const std::string d = std::to_string(width_), keys = std::to_string(heads_ * key_dim_),
                      values = std::to_string(heads_ * value_dim_),
                      bias = options_.use_bias ? "" : ", bias=False";
    return "MultiHeadAttention(heads=" + std::to_string(heads_) + ", query=Linear(" + d + ", " + keys + bias +
           "), key=Linear(" + d + ", " + keys + bias + "), value=Linear(" + d + ", " + values + bias +
           "), output=Linear(" + values + ", " + d + bias + ")" + (options_.causal ? ", causal" : "") + ")";
  }

 private:
  uint32_t stacked_width() const { return 2 * heads_ * key_dim_ + heads_ * value_dim_; }

  // The columns [first + h * dim, first + (h + 1) * dim) of each row of
  // `rows` (row length `stride`), times `scale`, as per-(example, head)
  // blocks of [positions, dim].
  void split_heads(const float* rows, uint32_t stride, uint32_t first, uint32_t dim, float scale,
                   std::vector<float>& heads) const {
    heads.resize(std::size_t(batch_) * heads_ * positions_ * dim);
    for (uint32_t b = 0; b < batch_; ++b)
      for (uint32_t h = 0; h < heads_; ++h)
        for (uint32_t p = 0; p < positions_; ++p) {
          const float* from = rows + (std::size_t(b) * positions_ + p) * stride + first + h * dim;
          float* to = heads.data() + ((std::size_t(b) * heads_ + h) * positions_ + p) * dim;
          for (uint32_t i = 0; i < dim; ++i) to[i] = from[i] * scale;
        }
  }

  // The reverse: per-head blocks into columns of rows of length `stride`.
  void merge_heads(const float* heads, uint32_t dim, float* rows, uint32_t stride = 0, uint32_t first = 0,
                   float scale = 1.0f) const {
    if (stride == 0) stride = heads_ * dim;
    for (uint32_t b = 0; b < batch_; ++b)
      for (uint32_t h = 0; h < heads_; ++h)
        for (uint32_t p = 0; p < positions_; ++p) {
          const float* from = heads + ((std::size_t(b) * heads_ + h) * positions_ + p) * dim;
          float* to = rows + (std::size_t(b) * positions_ + p) * stride + first + h * dim;
          for (uint32_t i = 0; i < dim; ++i) to[i] = from[i] * scale;
        }
  }

  // Softmax of each score row over the keys it may see, its largest
  // subtracted: with the causal mask row i sees positions 0..i, with a
  // padding mask only the tokens; the rest are exactly 0.
  void softmax_rows(const std::vector<uint8_t>& padding) {
    probabilities_.assign(scores_.size(), 0.0f);
    for (std::size_t row = 0; row < scores_.size() / positions_; ++row) {
      const uint32_t seen = options_.causal ? uint32_t(row % positions_) + 1 : positions_;
      const uint8_t* keys =
          padding.empty() ? nullptr : padding.data() + (row / positions_ / heads_) * std::size_t(positions_);
      const float* s = scores_.data() + row * positions_;
      float* p = probabilities_.data() + row * positions_;
      bool any = false;
      float top = 0;
      for (uint32_t j = 0; j < seen; ++j)
        if (!keys || keys[j]) {
          top = any ? std::max(top, s[j]) : s[j];
          any = true;
        }
      if (!any) continue;  // no key to attend to
      double total = 0;
      for (uint32_t j = 0; j < seen; ++j)
        if (!keys || keys[j]) total += std::exp(double(s[j]) - top);
      for (uint32_t j = 0; j < seen; ++j)
        if (!keys || keys[j]) p[j] = float(std::exp(double(s[j]) - top) / total);
    }
  }

  void draw_dropout(const LayerContext& context) {
    dropout_mask_.clear();
    dropped_.clear();
    if (!context.training || options_.dropout == 0.0f) return;
    std::seed_seq sequence{uint32_t(context.seed), uint32_t(context.seed >> 32),
                           uint32_t(context.step), uint32_t(context.step >> 32),
                           context.replica,        layer_};
    std::mt19937_64 rng(sequence);
    std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
    const float keep = 1.0f / (1.0f - options_.dropout);
    dropout_mask_.resize(probabilities_.size());
    dropped_.resize(probabilities_.size());
    for (std::size_t i = 0; i < dropped_.size(); ++i) {
      dropout_mask_[i] = uniform(rng) >= options_.dropout ? keep : 0.0f;
      dropped_[i] = probabilities_[i] * dropout_mask_[i];
    }
  }

  // A bias's gradient: the fp32 sums of x's columns (x: a row per
  // example and position, `columns` values each).
  SumCall bias_sums(const float* x, uint32_t columns, float* into) const {
    SumCall sums;
    sums.x = x;
    sums.rows = batch_ * positions_;
    sums.width = columns;
    sums.out = into;
    return sums;
  }

  AttentionOptions options_;
  uint32_t positions_ = 0, width_ = 0, heads_ = 1, key_dim_ = 0, value_dim_ = 0, layer_ = 0, batch_ = 0;
  std::size_t query_ = 0, query_bias_ = 0, output_ = 0, output_bias_ = 0;
  // The last forward pass: Q | K | V, per-head Q (scaled), K, V, scores,
  // probabilities (and with dropout, its mask and the dropped ones), the
  // heads' outputs and the merged ones.
  std::vector<float> qkv_, q_, k_, v_, scores_, probabilities_, dropout_mask_, dropped_, heads_out_, merged_;
  std::vector<float> d_merged_, d_heads_out_, d_probabilities_, d_scores_, d_q_, d_k_, d_v_, d_qkv_;
};

}  // namespace

Result<std::unique_ptr<Layer>> make_multi_head_attention(LayerArgs& args) {
  AttentionOptions options;
  if (!args.has("num_heads")) return invalid("num_heads: required");
  auto heads = args.positive("num_heads", 1);
  if (!heads.ok()) return heads.status();
  options.heads = *heads;
  if (args.has("key_dim")) {
    auto key_dim = args.positive("key_dim", 1);
    if (!key_dim.ok()) return key_dim.status();
    options.key_dim = *key_dim;
  }
  if (args.has("value_dim")) {
    auto value_dim = args.positive("value_dim", 1);
    if (!value_dim.ok()) return value_dim.status();
    options.value_dim = *value_dim;
  }
  auto dropout = args.number("dropout", 0.0f, 0.0f, 1.0f);
  if (!dropout.ok()) return dropout.status();
  options.dropout = *dropout;
  auto use_bias = args.boolean("use_bias", true);
  if (!use_bias.ok()) return use_bias.status();
  options.use_bias = *use_bias;
  auto causal = args.boolean("causal", false);
  if (!causal.ok()) return causal.status();
  options.causal = *causal;
  return std::unique_ptr<Layer>(new MultiHeadAttention(options));
}

}  // namespace systole
