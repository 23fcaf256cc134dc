// SPDX-License-Identifier: Apache-2.0
// Losses and metrics, as Keras has them: classes found by name in open
// registries, configured like layers (a type and fields).
//
// Labels are fp32, `label_width` values per example: a class index (exact
// up to 2^24) for the sparse losses, one per position for a sequence of
// tokens, or the targets of a regression. A loss turns a batch of model
// outputs and labels into the sum of the examples' losses and its
// gradient; a metric into sums that add up over batches and replicas (so
// the job's value does not depend on how the data was split) and a value
// from those sums.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "systole/layer.h"
#include "systole/status.h"

namespace systole {

class Loss {
 public:
  virtual ~Loss() = default;
  // Whether the loss applies to outputs of `output` shape with
  // `label_width` labels per example; the error says why not.
  virtual Status check(const Shape& output, uint32_t label_width) const = 0;
  // The sum over the batch's examples of each example's loss; with
  // `gradient`, also d(sum / divisor)/d(output), as many values as the
  // output. A label the loss cannot take is an error naming the example.
  virtual Result<double> compute(const Activations& output, const float* labels, uint32_t label_width,
                                 float divisor, std::vector<float>* gradient) const = 0;
};

class Metric {
 public:
  virtual ~Metric() = default;
  // The key of its value in the logs ("accuracy", "val_accuracy").
  virtual std::string name() const = 0;
  virtual Status check(const Shape& output, uint32_t label_width) const = 0;
  // How many sums it keeps.
  virtual std::size_t sums() const = 0;
  // Adds a batch to `totals` (sums() values).
  virtual Status update(const Activations& output, const float* labels, uint32_t label_width,
                        double* totals) const = 0;
  // Its value from totals summed over batches and replicas.
  virtual double result(const double* totals) const = 0;
};

// A loss or metric as a config names it: its type and fields, read with
// LayerArgs' checks ("sparse_categorical_crossentropy";
// {type: top_k_accuracy, k: 3}).
using LossConfig = LayerConfig;
using MetricConfig = LayerConfig;

using LossFactory = std::function<Result<std::unique_ptr<Loss>>(LayerArgs& args)>;
using MetricFactory = std::function<Result<std::unique_ptr<Metric>>(LayerArgs& args)>;

// Adds a loss or metric a config can name; the built-in ones are there from
// the start, a name is taken once.
Status register_loss(const std::string& type, LossFactory factory);
Status register_metric(const std::string& type, MetricFactory factory);
std::vector<std::string> loss_types();
std::vector<std::string> metric_types();

// The loss or metric a config names, its fields checked; errors name the
// field ("loss.ignore_class: ...").
Result<std::unique_ptr<Loss>> make_loss(const LossConfig& config);
Result<std::unique_ptr<Metric>> make_metric(const MetricConfig& config);

}  // namespace systole
