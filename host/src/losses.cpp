// SPDX-License-Identifier: Apache-2.0
// The built-in losses and metrics, as Keras defines them, and their
// registries. Sums run in double in example order, then position order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>

#include "registry.h"
#include "systole/loss.h"

namespace systole {
namespace {

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

// A label as it would be written: "7", "2.5".
std::string label_text(float label) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", double(label));
  return text;
}

// The positions of a sparse categorical output: `rows` rows of `classes`
// logits each, a class label per row. A [classes] output takes one label
// per example; a [positions, classes] output (a sequence) one per position.
struct Rows {
  uint32_t rows = 1, classes = 0;
};

Result<Rows> categorical_rows(const Shape& output, uint32_t label_width) {
  if (output.size() == 1 && label_width == 1) return Rows{1, output[0]};
  if (output.size() == 2 && label_width == output[0]) return Rows{output[0], output[1]};
  return invalid(
      "a class per example takes an output of [classes] and one label, a class per position an output "
      "of [positions, classes] and a label per position; got an output of " +
      shape_text(output) + " and " + std::to_string(label_width) + " label(s) per example");
}

// A label's class, or an error naming the example and position.
Result<uint32_t> class_of(float label, uint32_t classes, uint32_t example, uint32_t position) {
  if (label >= 0 && label < float(classes) && label == std::floor(label)) return uint32_t(label);
  return invalid("example " + std::to_string(example) +
                 (position ? ", position " + std::to_string(position) : "") + ": label " + label_text(label) +
                 " is not a class in [0, " + std::to_string(classes) + ")");
}

// Calls visit(example, logits of the row, label's class) for every row of
// a sparse categorical output whose label is not `ignore_class`, in
// example then position order.
template <class Visit>
Status for_each_labelled_row(const Activations& output, const float* labels, uint32_t label_width,
                             std::optional<uint32_t> ignore_class, Visit visit) {
  auto shape = categorical_rows(output.shape, label_width);
  if (!shape.ok()) return shape.status();
  for (uint32_t e = 0; e < output.batch; ++e)
    for (uint32_t r = 0; r < shape->rows; ++r) {
      const float label = labels[std::size_t(e) * label_width + r];
      if (ignore_class && label == float(*ignore_class)) continue;
      auto target = class_of(label, shape->classes, e, r);
      if (!target.ok()) return target.status();
      visit(e, output.values.data() + (std::size_t(e) * shape->rows + r) * shape->classes, *target);
    }
  return ok_status();
}

// log(sum(exp(z))) over `classes` logits, the largest subtracted first.
double log_sum_exp(const float* z, uint32_t classes) {
  const float top = *std::max_element(z, z + classes);
  double total = 0;
  for (uint32_t c = 0; c < classes; ++c) total += std::exp(double(z[c]) - top);
  return top + std::log(total);
}

// Keras' SparseCategoricalCrossentropy(from_logits=True): softmax over each
// row's logits with the largest subtracted, -log p(label). With
// `ignore_class` (padding tokens), rows of that label count neither in the
// loss nor the gradient, and an example's loss is the mean over its other
// rows (0 when it has none).
class SparseCategoricalCrossentropy final : public Loss {
 public:
  explicit SparseCategoricalCrossentropy(std::optional<uint32_t> ignore_class)
      : ignore_class_(ignore_class) {}

  Status check(const Shape& output, uint32_t label_width) const override {
    auto rows = categorical_rows(output, label_width);
    if (!rows.ok()) return rows.status();
    if (rows->classes < 2) return invalid("the output has " + std::to_string(rows->classes) + " class(es)");
    return ok_status();
  }

  Result<double> compute(const Activations& output, const float* labels, uint32_t label_width, float divisor,
                         std::vector<float>* gradient) const override {
    auto shape = categorical_rows(output.shape, label_width);
    if (!shape.ok()) return shape.status();
    const uint32_t classes = shape->classes;
    if (gradient) gradient->assign(output.values.size(), 0.0f);
    double sum = 0;
    for (uint32_t e = 0; e < output.batch; ++e) {
      uint32_t counted = 0;
      for (uint32_t r = 0; r < shape->rows; ++r) {
        const float label = labels[std::size_t(e) * label_width + r];
        if (ignore_class_ && label == float(*ignore_class_)) continue;
        ++counted;
      }
      if (counted == 0) continue;
      double example = 0;
      for (uint32_t r = 0; r < shape->rows; ++r) {
        const float label = labels[std::size_t(e) * label_width + r];
        if (ignore_class_ && label == float(*ignore_class_)) continue;
        auto target = class_of(label, classes, e, r);
        if (!target.ok()) return target.status();
        const std::size_t row = std::size_t(e) * shape->rows + r;
        const float* z = output.values.data() + row * classes;
        const double log_sum = log_sum_exp(z, classes);
        example += log_sum - z[*target];
        if (!gradient) continue;
        float* d = gradient->data() + row * classes;
        const double scale = double(divisor) * counted;
        for (uint32_t c = 0; c < classes; ++c) {
          const double p = std::exp(double(z[c]) - log_sum);
          d[c] = float((p - (c == *target ? 1.0 : 0.0)) / scale);
        }
      }
      sum += example / counted;
    }
    return sum;
  }

 private:
  std::optional<uint32_t> ignore_class_;
};

// A loss of each output value against its label (a label per output
// value); an example's loss is the mean over its values.
class ElementwiseLoss : public Loss {
 public:
  Status check(const Shape& output, uint32_t label_width) const override {
    if (shape_elements(output) != label_width)
      return invalid("an output of " + shape_text(output) + " takes " +
                     std::to_string(shape_elements(output)) + " label(s) per example, got " +
                     std::to_string(label_width));
    return ok_status();
  }

  Result<double> compute(const Activations& output, const float* labels, uint32_t label_width, float divisor,
                         std::vector<float>* gradient) const override {
    SYSTOLE_RETURN_IF_ERROR(check(output.shape, label_width));
    if (gradient) gradient->assign(output.values.size(), 0.0f);
    const double scale = double(divisor) * label_width;
    double sum = 0;
    for (uint32_t e = 0; e < output.batch; ++e) {
      double example = 0;
      for (uint32_t i = 0; i < label_width; ++i) {
        const std::size_t at = std::size_t(e) * label_width + i;
        const double z = output.values[at], y = labels[at];
        if (!takes(y))
          return invalid("example " + std::to_string(e) + ": label " + label_text(labels[at]) +
                         " is not in " + label_range());
        example += value(z, y);
        if (gradient) (*gradient)[at] = float(derivative(z, y) / scale);
      }
      sum += example / label_width;
    }
    return sum;
  }

 protected:
  virtual double value(double z, double y) const = 0;
  virtual double derivative(double z, double y) const = 0;  // d value / dz
  virtual bool takes(double y) const { return std::isfinite(y); }
  virtual std::string label_range() const { return "the finite numbers"; }
};

// Keras' BinaryCrossentropy(from_logits=True) against a 0/1 (or
// in-between) label, in the stable form max(z, 0) - z y + log(1 + exp(-|z|)).
class BinaryCrossentropy final : public ElementwiseLoss {
 protected:
  double value(double z, double y) const override {
    return std::max(z, 0.0) - z * y + std::log1p(std::exp(-std::fabs(z)));
  }
  double derivative(double z, double y) const override { return 1.0 / (1.0 + std::exp(-z)) - y; }
  bool takes(double y) const override { return y >= 0 && y <= 1; }
  std::string label_range() const override { return "[0, 1]"; }
};

// Keras' MeanSquaredError: (output - label)^2.
class MeanSquaredError final : public ElementwiseLoss {
 protected:
  double value(double z, double y) const override { return (z - y) * (z - y); }
  double derivative(double z, double y) const override { return 2.0 * (z - y); }
};

// Keras' SparseTopKCategoricalAccuracy (k 1 is "accuracy"): a row counts
// when its label's logit is among the k largest (ties to the lower
// class, as arg-max takes the first); ignore_class rows are not counted.
class TopKAccuracy final : public Metric {
 public:
  TopKAccuracy(std::string name, uint32_t k, std::optional<uint32_t> ignore_class)
      : name_(std::move(name)), k_(k), ignore_class_(ignore_class) {}

  std::string name() const override { return name_; }
  Status check(const Shape& output, uint32_t label_width) const override {
    auto rows = categorical_rows(output, label_width);
    if (!rows.ok()) return rows.status();
    if (k_ > rows->classes)
      return invalid("k " + std::to_string(k_) + " is more than the " + std::to_string(rows->classes) +
                     " classes");
    return ok_status();
  }
  std::size_t sums() const override { return 2; }  // hits, rows counted
  Status update(const Activations& output, const float* labels, uint32_t label_width,
                double* totals) const override {
    const uint32_t classes = output.shape.back();
    return for_each_labelled_row(output, labels, label_width, ignore_class_,
                                 [&](uint32_t, const float* z, uint32_t target) {
                                   uint32_t above = 0;  // classes ranked before the label's
                                   for (uint32_t c = 0; c < classes; ++c)
                                     above += z[c] > z[target] || (z[c] == z[target] && c < target);
                                   totals[0] += above < k_;
                                   totals[1] += 1;
                                 });
  }
  double result(const double* totals) const override { return totals[1] > 0 ? totals[0] / totals[1] : 0.0; }

 private:
  std::string name_;
  uint32_t k_;
  std::optional<uint32_t> ignore_class_;
};

// exp of the mean token cross-entropy (a language model's perplexity),
// over the rows not of ignore_class.
class Perplexity final : public Metric {
 public:
  explicit Perplexity(std::optional<uint32_t> ignore_class) : ignore_class_(ignore_class) {}
  std::string name() const override { return "perplexity"; }
  Status check(const Shape& output, uint32_t label_width) const override {
    return categorical_rows(output, label_width).status();
  }
  std::size_t sums() const override { return 2; }  // cross-entropy, rows counted
  Status update(const Activations& output, const float* labels, uint32_t label_width,
                double* totals) const override {
    const uint32_t classes = output.shape.back();
    return for_each_labelled_row(output, labels, label_width, ignore_class_,
                                 [&](uint32_t, const float* z, uint32_t target) {
                                   totals[0] += log_sum_exp(z, classes) - z[target];
                                   totals[1] += 1;
                                 });
  }
  double result(const double* totals) const override {
    return totals[1] > 0 ? std::exp(totals[0] / totals[1]) : 0.0;
  }

 private:
  std::optional<uint32_t> ignore_class_;
};

// The probability a binary model gives the positive class: sigmoid of a
// single logit, or the softmax of class 1 of two.
Result<double> positive_probability(const float* z, uint32_t width) {
  if (width == 1) return 1.0 / (1.0 + std::exp(-double(z[0])));
  return 1.0 / (1.0 + std::exp(double(z[0]) - double(z[1])));
}

Status binary_check(const Shape& output, uint32_t label_width) {
  if (label_width == 1 && output.size() == 1 && (output[0] == 1 || output[0] == 2)) return ok_status();
  return invalid(
      "a binary metric takes one logit or two classes and one label per example, got an output of " +
      shape_text(output) + " and " + std::to_string(label_width) + " label(s)");
}

// Keras' BinaryAccuracy: the positive probability > 0.5 against a 0/1 label.
class BinaryAccuracy final : public Metric {
 public:
  std::string name() const override { return "binary_accuracy"; }
  Status check(const Shape& output, uint32_t label_width) const override {
    return binary_check(output, label_width);
  }
  std::size_t sums() const override { return 2; }
  Status update(const Activations& output, const float* labels, uint32_t label_width,
                double* totals) const override {
    SYSTOLE_RETURN_IF_ERROR(check(output.shape, label_width));
    const uint32_t width = output.shape[0];
    for (uint32_t e = 0; e < output.batch; ++e) {
      const double p = *positive_probability(output.values.data() + std::size_t(e) * width, width);
      totals[0] += (p > 0.5) == (labels[e] > 0.5f);
      totals[1] += 1;
    }
    return ok_status();
  }
  double result(const double* totals) const override { return totals[1] > 0 ? totals[0] / totals[1] : 0.0; }
};

// Keras' AUC (ROC, num_thresholds 200, interpolation by the trapezoidal
// rule): counts of true and false positives and negatives at thresholds
// spread evenly over [0, 1], which add up over batches and replicas.
class Auc final : public Metric {
 public:
  explicit Auc(uint32_t thresholds) : thresholds_(thresholds) {}
  std::string name() const override { return "auc"; }
  Status check(const Shape& output, uint32_t label_width) const override {
    return binary_check(output, label_width);
  }
  std::size_t sums() const override { return 4 * std::size_t(thresholds_); }  // tp, fp, fn, tn per threshold
  Status update(const Activations& output, const float* labels, uint32_t label_width,
                double* totals) const override {
    SYSTOLE_RETURN_IF_ERROR(check(output.shape, label_width));
    const uint32_t width = output.shape[0];
    for (uint32_t e = 0; e < output.batch; ++e) {
      const double p = *positive_probability(output.values.data() + std::size_t(e) * width, width);
      const bool positive = labels[e] > 0.5f;
      for (uint32_t t = 0; t < thresholds_; ++t) {
        const bool predicted = p > threshold(t);
        totals[4 * t + (positive ? (predicted ? 0 : 2) : (predicted ? 1 : 3))] += 1;
      }
    }
    return ok_status();
  }
  double result(const double* totals) const override {
    double area = 0;
    for (uint32_t t = 0; t + 1 < thresholds_; ++t) {
      const double* a = totals + 4 * t;
      const double* b = totals + 4 * (t + 1);
      auto rate = [](double hit, double miss) { return hit + miss > 0 ? hit / (hit + miss) : 0.0; };
      const double tpr_a = rate(a[0], a[2]), tpr_b = rate(b[0], b[2]);
      const double fpr_a = rate(a[1], a[3]), fpr_b = rate(b[1], b[3]);
      area += (fpr_a - fpr_b) * (tpr_a + tpr_b) / 2;
    }
    return area;
  }

 private:
  // Keras' thresholds: 0 - epsilon, then (i / (n - 1)) inside, 1 + epsilon.
  double threshold(uint32_t t) const {
    if (t == 0) return -1e-7;
    if (t + 1 == thresholds_) return 1.0 + 1e-7;
    return double(t) / double(thresholds_ - 1);
  }
  uint32_t thresholds_;
};

// Keras' MeanSquaredError metric: the mean over examples of each example's
// mean squared difference.
class MeanSquaredErrorMetric final : public Metric {
 public:
  std::string name() const override { return "mean_squared_error"; }
  Status check(const Shape& output, uint32_t label_width) const override {
    return MeanSquaredError().check(output, label_width);
  }
  std::size_t sums() const override { return 2; }
  Status update(const Activations& output, const float* labels, uint32_t label_width,
                double* totals) const override {
    auto sum = MeanSquaredError().compute(output, labels, label_width, 1.0f, nullptr);
    if (!sum.ok()) return sum.status();
    totals[0] += *sum;
    totals[1] += output.batch;
    return ok_status();
  }
  double result(const double* totals) const override { return totals[1] > 0 ? totals[0] / totals[1] : 0.0; }
};

// ignore_class: an optional class index.
Result<std::optional<uint32_t>> ignore_class(LayerArgs& args) {
  if (!args.has("ignore_class")) return std::optional<uint32_t>();
  auto value = args.number("ignore_class", 0, 0, float(1 << 24));
  if (!value.ok()) return value.status();
  if (*value != std::floor(*value)) return invalid("ignore_class: expected a class index");
  return std::optional<uint32_t>(uint32_t(*value));
}

Registry<LossFactory>& losses() {
  static Registry<LossFactory> registry(
      "loss", {
                  {"sparse_categorical_crossentropy",
                   [](LayerArgs& args) -> Result<std::unique_ptr<Loss>> {
                     auto ignore = ignore_class(args);
                     if (!ignore.ok()) return ignore.status();
                     return std::unique_ptr<Loss>(new SparseCategoricalCrossentropy(*ignore));
                   }},
                  {"binary_crossentropy",
                   [](LayerArgs&) -> Result<std::unique_ptr<Loss>> {
                     return std::unique_ptr<Loss>(new BinaryCrossentropy());
                   }},
                  {"mean_squared_error",
                   [](LayerArgs&) -> Result<std::unique_ptr<Loss>> {
                     return std::unique_ptr<Loss>(new MeanSquaredError());
                   }},
              });
  return registry;
}

Registry<MetricFactory>& metrics() {
  static Registry<MetricFactory> registry(
      "metric", {
                    {"accuracy",
                     [](LayerArgs& args) -> Result<std::unique_ptr<Metric>> {
                       auto ignore = ignore_class(args);
                       if (!ignore.ok()) return ignore.status();
                       return std::unique_ptr<Metric>(new TopKAccuracy("accuracy", 1, *ignore));
                     }},
                    {"top_k_accuracy",
                     [](LayerArgs& args) -> Result<std::unique_ptr<Metric>> {
                       auto k = args.positive("k", 5);
                       if (!k.ok()) return k.status();
                       auto ignore = ignore_class(args);
                       if (!ignore.ok()) return ignore.status();
                       return std::unique_ptr<Metric>(
                           new TopKAccuracy("top_" + std::to_string(*k) + "_accuracy", *k, *ignore));
                     }},
                    {"perplexity",
                     [](LayerArgs& args) -> Result<std::unique_ptr<Metric>> {
                       auto ignore = ignore_class(args);
                       if (!ignore.ok()) return ignore.status();
                       return std::unique_ptr<Metric>(new Perplexity(*ignore));
                     }},
                    {"binary_accuracy",
                     [](LayerArgs&) -> Result<std::unique_ptr<Metric>> {
                       return std::unique_ptr<Metric>(new BinaryAccuracy());
                     }},
                    {"auc",
                     [](LayerArgs& args) -> Result<std::unique_ptr<Metric>> {
                       auto thresholds = args.positive("num_thresholds", 200);
                       if (!thresholds.ok()) return thresholds.status();
                       if (*thresholds < 2) return invalid("num_thresholds: must be >= 2");
                       return std::unique_ptr<Metric>(new Auc(*thresholds));
                     }},
                    {"mean_squared_error",
                     [](LayerArgs&) -> Result<std::unique_ptr<Metric>> {
                       return std::unique_ptr<Metric>(new MeanSquaredErrorMetric());
                     }},
                });
  return registry;
}

}  // namespace

Status register_loss(const std::string& type, LossFactory factory) {
  return losses().add(type, std::move(factory));
}
Status register_metric(const std::string& type, MetricFactory factory) {
  return metrics().add(type, std::move(factory));
}
std::vector<std::string> loss_types() { return losses().names(); }
std::vector<std::string> metric_types() { return metrics().names(); }

Result<std::unique_ptr<Loss>> make_loss(const LossConfig& config) {
  return make_from_config<Loss>(losses(), config);
}
Result<std::unique_ptr<Metric>> make_metric(const MetricConfig& config) {
  return make_from_config<Metric>(metrics(), config);
}

}  // namespace systole
