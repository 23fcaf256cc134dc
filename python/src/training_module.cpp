// SPDX-License-Identifier: Apache-2.0
// systole._systole's trainer: a model built from accel_train's config
// schema (a YAML file, or a dict given as a JSON document), trained by the
// library's fit with the library's callbacks and the user's Python ones;
// evaluate, predict and the weights. The data are NumPy arrays or what the
// config names (an IDX directory, TFRecord files through the input
// pipeline). The GIL is released while the library works and taken again
// for each Python hook.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python_module.h"
#include "systole/checkpoint.h"
#include "systole/fit.h"
#include "systole/run/config.h"
#include "systole/run/data.h"
#include "systole/run/device.h"
#include "systole/output_file.h"
#include "systole/run/ranking.h"
#include "systole/run/run.h"
#include "systole/trace.h"
#include "systole/training_checkpoint.h"

namespace systole::python {
namespace {

namespace py = pybind11;

// f() with the GIL released (f must not touch Python objects).
template <typename F>
auto without_gil(F f) {
  py::gil_scoped_release release;
  return f();
}

py::dict logs_dict(const Logs& logs) {
  py::dict d;
  for (const auto& [name, value] : logs) d[py::str(name)] = value;
  return d;
}

// A Python callback (any object with Keras' on_* methods) behind the
// library's Callback interface. A Python exception in a hook ends the call
// that ran it; the caller raises it again once the library has returned.
// After each hook the model's stop_training attribute is read, as Keras'
// callbacks stop fit by setting model.stop_training.
class PythonCallback final : public Callback {
 public:
  PythonCallback(py::object callback, py::object model) : callback_(std::move(callback)), model_(std::move(model)) {}
  ~PythonCallback() override {
    py::gil_scoped_acquire gil;
    error_.reset();
    callback_ = py::object();
    model_ = py::object();
  }

  Status on_train_begin(const Logs& logs) override { return call("on_train_begin", logs); }
  Status on_train_end(const Logs& logs) override { return call("on_train_end", logs); }
  Status on_epoch_begin(uint32_t epoch, const Logs& logs) override { return call("on_epoch_begin", logs, epoch); }
  Status on_epoch_end(uint32_t epoch, const Logs& logs) override { return call("on_epoch_end", logs, epoch); }
  Status on_train_batch_begin(uint64_t batch, const Logs& logs) override {
    return call("on_train_batch_begin", logs, batch);
  }
  Status on_train_batch_end(uint64_t batch, const Logs& logs) override {
    return call("on_train_batch_end", logs, batch);
  }
  Status on_test_begin(const Logs& logs) override { return call("on_test_begin", logs); }
  Status on_test_end(const Logs& logs) override { return call("on_test_end", logs); }
  Status on_predict_begin(const Logs& logs) override { return call("on_predict_begin", logs); }
  Status on_predict_end(const Logs& logs) override { return call("on_predict_end", logs); }
  Status on_predict_batch_begin(uint64_t batch, const Logs& logs) override {
    return call("on_predict_batch_begin", logs, batch);
  }
  Status on_predict_batch_end(uint64_t batch, const Logs& logs) override {
    return call("on_predict_batch_end", logs, batch);
  }

  // Raises the Python exception a hook raised, if one did (with the GIL).
  void raise_pending() {
    if (!error_) return;
    std::shared_ptr<py::error_already_set> error = std::move(error_);
    error->restore();
    throw py::error_already_set();
  }

 private:
  template <typename... Index>
  Status call(const char* hook, const Logs& logs, Index... index) {
    py::gil_scoped_acquire gil;
    if (!py::hasattr(callback_, hook)) return ok_status();
    try {
      callback_.attr(hook)(index..., logs_dict(logs));
      if (py::hasattr(model_, "stop_training") && model_.attr("stop_training").cast<bool>()) {
        model_.attr("stop_training") = false;
        request_stop_training();
      }
    } catch (py::error_already_set& e) {
      const std::string what = e.what();
      error_ = std::make_shared<py::error_already_set>(std::move(e));
      return Status(StatusCode::kAborted, std::string(hook) + ": " + what);
    }
    return ok_status();
  }

  py::object callback_, model_;
  std::shared_ptr<py::error_already_set> error_;
};

// The user's callbacks, appended to `all`; the caller raises what a hook
// raised once the library has returned.
std::vector<std::shared_ptr<PythonCallback>> add_python_callbacks(const py::list& callbacks,
                                                                   const py::object& model, Callbacks& all) {
  std::vector<std::shared_ptr<PythonCallback>> python;
  for (const py::handle& callback : callbacks) {
    python.push_back(std::make_shared<PythonCallback>(py::reinterpret_borrow<py::object>(callback), model));
    all.push_back(python.back());
  }
  return python;
}

// A float32 array of examples: the first dimension counts them.
py::array_t<float> examples_array(const py::handle& object, const char* name) {
  py::array array = float32_argument(object, name);
  if (array.ndim() < 2)
    throw py::value_error(std::string(name) + ": expected an array of examples (N, features...), got " +
                          std::to_string(array.ndim()) + " dimension(s)");
  if (array.shape(0) == 0 || array.shape(0) > py::ssize_t(1) << 30)
    throw py::value_error(std::string(name) + ": " + std::to_string(array.shape(0)) +
                          " examples (expected 1 to 2^30)");
  return py::array_t<float, py::array::c_style>::ensure(array);
}

// One example's shape: an array of examples' dimensions after the first.
std::vector<uint32_t> example_shape(const py::array& x) {
  std::vector<uint32_t> shape;
  for (py::ssize_t d = 1; d < x.ndim(); ++d) shape.push_back(uint32_t(x.shape(d)));
  return shape;
}

// x and y as a Dataset; y holds class indices (any integer or float dtype
// with integral values) or float32 targets, one or label_width per example.
Dataset numpy_dataset(const py::handle& x_object, const py::handle& y_object, uint32_t classes) {
  py::array_t<float> x = examples_array(x_object, "x");
  py::array y_any = ndarray_argument(y_object, "y");
  const char kind = y_any.dtype().kind();
  if (kind != 'i' && kind != 'u' && !y_any.dtype().is(py::dtype::of<float>()))
    throw py::type_error("y: expected integer class indices or float32, got " + std::string(py::str(y_any.dtype())));
  if (y_any.ndim() < 1 || y_any.ndim() > 2 || y_any.shape(0) != x.shape(0))
    throw py::value_error("y: expected (" + std::to_string(x.shape(0)) + ",) or (" + std::to_string(x.shape(0)) +
                          ", width) labels to go with x's " + std::to_string(x.shape(0)) + " examples, got " +
                          std::to_string(y_any.ndim()) + "-D with " + std::to_string(y_any.shape(0)) + " rows");
  // Integers become float32 through float64, and only where exact.
  py::array_t<double, py::array::c_style | py::array::forcecast> y(y_any);
  Dataset data;
  data.examples = uint32_t(x.shape(0));
  data.shape = example_shape(x);
  data.features = uint32_t(x.size() / x.shape(0));
  data.values.assign(x.data(), x.data() + x.size());
  data.label_width = y.ndim() == 2 ? uint32_t(y.shape(1)) : 1;
  data.labels.resize(y.size());
  bool indices = true;
  double largest = 0;
  for (py::ssize_t i = 0; i < y.size(); ++i) {
    const double v = y.data()[i];
    if (!std::isfinite(v)) throw py::value_error("y: label " + std::to_string(i) + " is not finite");
    if (std::fabs(v) > double(1 << 24) && (kind == 'i' || kind == 'u'))
      throw py::value_error("y: label " + std::to_string(i) + " (" + std::to_string(int64_t(v)) +
                            ") is not exact in float32 (at most 2^24)");
    // Class indices, as far as the number of classes can be read from them.
    indices = indices && v >= 0 && v < double(1 << 24) && v == std::floor(v);
    largest = std::max(largest, v);
    data.labels[i] = float(v);
  }
  data.classes = classes ? classes : indices ? uint32_t(largest) + 1 : 0;
  return data;
}

// A config from a YAML file (`text` its path) or a document in memory,
// then `overrides` (a JSON document of the same keys; empty: none) on top;
// not validated yet.
RunConfig read_config(const std::string& text, const std::string& source, bool is_file,
                      const std::string& overrides) {
  RunConfig config;
  throw_if_error(is_file ? load_run_config(text, config) : parse_run_config(text, source, config));
  if (!overrides.empty()) throw_if_error(parse_run_config(overrides, "overrides", config));
  return config;
}

// The config's training data (data.format tfrecord: the input pipelines;
// idx: the training split) as batches of NumPy arrays, one epoch per
// iteration: for x, y in systole.RecordDataset(config). The batches are
// those fit trains on: the same source, for the replicas the config's
// devices select (TFRecord: one pipeline per replica, each reading its
// shard, a batch their batches in replica order).
class PyRecordDataset {
 public:
  explicit PyRecordDataset(const RunConfig& config) : config_(config) {
    throw_if_error(without_gil([&]() -> Status {
      auto loaded = load_run_data(config_);
      if (!loaded.ok()) return loaded.status();
      data_ = std::make_shared<RunData>(std::move(loaded).value());
      auto units = selected_units(config_, nullptr);
      if (!units.ok()) return units.status();
      const uint32_t replicas = uint32_t(units->size());
      auto source = train_source(*data_, config_, 0, replicas, replicas);
      if (!source.ok()) return source.status();
      source_ = std::move(source).value();
      return ok_status();
    }));
  }

  uint64_t batches() const { return source_->batches_per_epoch(); }
  const std::shared_ptr<RunData>& data() const { return data_; }
  const RunConfig& config() const { return config_; }

  // Starts epoch `epoch` (its order a function of the seed and the epoch).
  void start(uint32_t epoch) {
    throw_if_error(without_gil([&] { return source_->start_epoch(epoch); }));
    started_ = true;
  }

  // The epoch's next batch as (x, y); None after its last.
  py::object next() {
    if (!started_) throw py::value_error("RecordDataset: no epoch started");
    Batch batch;
    Result<bool> more = without_gil([&] { return source_->next(batch); });
    if (!value_or_throw(std::move(more))) return py::none();
    std::vector<py::ssize_t> x_shape = {py::ssize_t(batch.size)};
    for (uint32_t d : data_->shape_of.shape) x_shape.push_back(d);
    py::array_t<float> x(x_shape);
    std::copy(batch.values.begin(), batch.values.end(), x.mutable_data());
    std::vector<py::ssize_t> y_shape = {py::ssize_t(batch.size)};
    if (batch.label_width != 1) y_shape.push_back(batch.label_width);
    py::array_t<float> y(y_shape);
    std::copy(batch.labels.begin(), batch.labels.end(), y.mutable_data());
    return py::make_tuple(x, y);
  }

 private:
  RunConfig config_;
  std::shared_ptr<RunData> data_;
  std::unique_ptr<BatchSource> source_;
  bool started_ = false;
};

class PyModel {
 public:
  PyModel(const std::string& text, const std::string& source, bool is_file, const std::string& overrides)
      : config_(read_config(text, source, is_file, overrides)) {
    throw_if_error(validate_run_config(config_));
  }

  py::dict fit(const py::object& self, const py::object& x, const py::object& y, uint32_t epochs,
               uint32_t initial_epoch, uint64_t steps_per_epoch, const py::object& validation, const py::list& callbacks,
               int verbose) {
    std::shared_ptr<const Dataset> train_set;
    std::optional<Dataset> validation_set;
    std::shared_ptr<const RunData> run_data;
    if (py::isinstance<PyRecordDataset>(x)) {
      if (!y.is_none()) throw py::value_error("fit: a RecordDataset brings its labels (y must be None)");
      const PyRecordDataset& records = x.cast<const PyRecordDataset&>();
      if (records.config().global_batch != config_.global_batch)
        throw py::value_error("fit: the RecordDataset's train.global_batch is " +
                              std::to_string(records.config().global_batch) + ", the model's " +
                              std::to_string(config_.global_batch));
      run_data = records.data();
    } else if (x.is_none() != y.is_none()) {
      throw py::value_error("fit: x and y go together");
    } else if (!x.is_none()) {
      train_set = std::make_shared<const Dataset>(numpy_dataset(x, y, config_.classes));
    } else {
      run_data = std::make_shared<const RunData>(value_or_throw(without_gil([&] { return load_run_data(config_); })));
    }
    if (!validation.is_none()) {
      if (run_data && run_data->validation.examples)
        throw py::value_error("validation_data: the config's data bring their own validation set");
      py::tuple pair = validation.cast<py::tuple>();
      if (pair.size() != 2) throw py::value_error("validation_data: expected (x, y)");
      validation_set = numpy_dataset(pair[0], pair[1], train_set ? train_set->classes : config_.classes);
    }
    train_on(train_set, run_data);
    const Dataset* validation_data = validation_set                 ? &*validation_set
                                     : run_data && run_data->validation.examples ? &run_data->validation
                                                                                 : nullptr;

    // The config's options (a resumed run's first fit goes on after the
    // checkpoint's epochs), with fit's arguments where given.
    FitOptions options = run_->fit_options();
    if (epochs) options.epochs = epochs;
    if (initial_epoch) options.initial_epoch = initial_epoch;
    if (steps_per_epoch) options.steps_per_epoch = steps_per_epoch;
    options.validation_data = validation_data;
    Callbacks all = value_or_throw(
        run_->config_callbacks(isatty(STDOUT_FILENO), validation_data != nullptr, options.initial_epoch));
    if (verbose == 0)  // Keras' verbose=0: no progress bar
      all.erase(std::remove_if(all.begin(), all.end(),
                               [](const auto& callback) { return dynamic_cast<ProgressBar*>(callback.get()); }),
                all.end());
    const auto python = add_python_callbacks(callbacks, self, all);

    // Ctrl-C: Python's handler runs at the next batch, and fit stops there.
    options.interrupt = []() -> Result<int> {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() == 0) return 0;
      PyErr_Clear();
      return SIGINT;
    };
    // trace: this fit's spans, written when it ends (also when it fails).
    std::optional<Trace> trace;
    if (!config_.trace_file.empty() && run_->lead()) {
      auto probe = OutputFile::create(config_.trace_file);
      if (!probe.ok()) throw_if_error(Status(probe.status().code(), "trace: " + probe.status().message()));
      Trace::install(&trace.emplace());
    }
    Result<History> history = without_gil([&] { return run_->fit(options, all); });
    if (trace) {
      Trace::install(nullptr);
      if (Status written = trace->write(config_.trace_file); !written.ok() && history.ok())
        history = Status(written.code(), "trace: " + written.message());
    }
    for (auto& callback : python) callback->raise_pending();
    throw_if_error(history.status());
    if (history->interrupted) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
      throw py::error_already_set();
    }
    py::dict result;
    result["epoch"] = history->epochs;
    py::dict values;
    for (const auto& [name, series] : history->history) values[py::str(name)] = series;
    result["history"] = values;
    result["steps"] = history->steps;
    result["examples"] = history->examples;
    result["seconds"] = history->seconds;
    result["stopped_early"] = history->stopped_early;
    return result;
  }

  py::dict evaluate(const py::object& self, const py::object& x, const py::object& y, const py::list& callbacks) {
    if (x.is_none() != y.is_none()) throw py::value_error("evaluate: x and y go together");
    Dataset data;
    if (!x.is_none()) {
      data = numpy_dataset(x, y, run_ ? classes_ : config_.classes);
    } else {
      if (!run_) throw py::value_error("evaluate: the model is not built yet (fit it, or pass x and y)");
      data = value_or_throw(without_gil([&] { return load_test_set(config_, classes_); }));
    }
    build_for(data);
    Callbacks all;
    const auto python = add_python_callbacks(callbacks, self, all);
    Result<Logs> logs = without_gil([&] { return systole::evaluate(run_->trainer(), data, all); });
    for (auto& callback : python) callback->raise_pending();
    py::dict result = logs_dict(value_or_throw(std::move(logs)));
    if (config_.ranking) {  // the ranking report, beside the test logs
      const RankingReport ranked =
          value_or_throw(without_gil([&] { return rank_test_set(run_->trainer(), config_, data); }));
      const std::string k = std::to_string(ranked.k);
      result["auc"] = ranked.model_auc;
      result[py::str("recall@" + k)] = ranked.model_recall;
      result["popularity_auc"] = ranked.popularity_auc;
      result[py::str("popularity_recall@" + k)] = ranked.popularity_recall;
    }
    return result;
  }

  py::array_t<float> predict(const py::object& x_object) {
    py::array_t<float> x = examples_array(x_object, "x");
    if (!run_) throw py::value_error("predict: the model is not built yet (fit or evaluate it first)");
    check_shape(example_shape(x));
    const uint32_t count = uint32_t(x.shape(0));
    Result<std::vector<float>> logits = without_gil([&] { return systole::predict(run_->trainer(), x.data(), count); });
    std::vector<float> values = value_or_throw(std::move(logits));
    std::vector<py::ssize_t> shape = {py::ssize_t(count)};
    for (uint32_t d : run_->trainer().model().logits_shape()) shape.push_back(d);
    py::array_t<float> out(shape);
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
  }

  // The weights by name (torch's state_dict names), as copies.
  py::dict weights() const {
    if (!run_) throw py::value_error("weights: the model is not built yet");
    py::dict d;
    const ParameterStore& store = run_->trainer().parameters();
    for (std::size_t i = 0; i < store.entries().size(); ++i) {
      const auto& entry = store.entries()[i];
      std::vector<py::ssize_t> shape(entry.shape.begin(), entry.shape.end());
      py::array_t<float> array(shape);
      entry.to_torch(store.values(i), array.mutable_data());
      d[py::str(entry.name)] = array;
    }
    return d;
  }

  void save(const std::string& path) const {
    if (!run_) throw py::value_error("save: the model is not built yet");
    throw_if_error(write_safetensors(path, make_model_file(run_->trainer())));
  }
  void load_weights(const std::string& path) {
    if (!run_) throw py::value_error("load_weights: build the model first (fit or evaluate it)");
    throw_if_error(systole::load_weights(path, run_->trainer()));
  }

  bool built() const { return run_ != nullptr; }
  std::string summary() const {
    if (!run_) return "(not built: fit, evaluate or predict builds it for the data's shape)";
    return run_->trainer().model().summary();
  }
  uint32_t replicas() const { return run_ ? run_->trainer().replicas() : 0; }
  const RunConfig& config() const { return config_; }

 private:
  // The run, opened on first use for examples of `examples`' or `data`'s
  // shape, and the batches of this fit (the run's schedule spans the first
  // fit's epochs).
  BatchSource& train_on(const std::shared_ptr<const Dataset>& examples, const std::shared_ptr<const RunData>& data) {
    if (!run_) {
      RunOptions options;
      options.program = "systole.Model";
      options.examples = examples;
      options.data = data;
      open(std::move(options), examples ? examples->shape : data->shape_of.shape);
    } else {
      check_shape(examples ? examples->shape : data->shape_of.shape);
      throw_if_error(without_gil([&] { return run_->use_batches(examples, data); }));
    }
    return *run_->batches();
  }

  // The run, opened on first use for examples of `data`'s shape (no
  // training batches: evaluate, predict).
  void build_for(const Dataset& data) {
    if (run_) return check_shape(data.shape);
    RunOptions options;
    options.program = "systole.Model";
    options.examples = std::make_shared<const Dataset>(data.slice(0, 0));
    options.batches = false;
    open(std::move(options), data.shape);
  }

  // Opens the run for examples of `shape`.
  void open(RunOptions options, const std::vector<uint32_t>& shape) {
    run_ = value_or_throw(without_gil([&] { return TrainingRun::open(config_, std::move(options)); }));
    shape_ = shape;
    classes_ = run_->trainer().model().spec().classes;
  }

  // Examples of `shape` for the model built; a ValueError otherwise.
  void check_shape(const std::vector<uint32_t>& shape) const {
    if (shape != shape_)
      throw py::value_error("x: examples of shape " + shape_text(shape) + ", but the model was built for " +
                            shape_text(shape_));
  }

  RunConfig config_;
  std::unique_ptr<TrainingRun> run_;
  std::vector<uint32_t> shape_;
  uint32_t classes_ = 0;
};

}  // namespace

void bind_training(py::module_& m) {
  m.def(
      "save_safetensors",
      [](const std::string& path, const py::dict& tensors) {
        Checkpoint checkpoint;
        for (const auto& [key, value] : tensors) {
          const std::string name = py::str(key);
          auto array = py::array_t<float, py::array::c_style>::ensure(
              float32_argument(value, "save_safetensors: '" + name + "'"));
          Tensor tensor;
          tensor.name = name;
          for (py::ssize_t d = 0; d < array.ndim(); ++d) tensor.shape.push_back(uint64_t(array.shape(d)));
          tensor.values.assign(array.data(), array.data() + array.size());
          checkpoint.tensors.push_back(std::move(tensor));
        }
        throw_if_error(without_gil([&] { return write_safetensors(path, checkpoint); }));
      },
      py::arg("path"), py::arg("tensors"),
      "Writes float32 arrays by name as a safetensors file, atomically (the format of Systole's checkpoints).");
  m.def(
      "load_safetensors",
      [](const std::string& path) {
        Checkpoint checkpoint = value_or_throw(without_gil([&] { return read_safetensors(path); }));
        py::dict tensors;
        for (const Tensor& tensor : checkpoint.tensors) {
          std::vector<py::ssize_t> shape(tensor.shape.begin(), tensor.shape.end());
          py::array_t<float> array(shape);
          std::copy(tensor.values.begin(), tensor.values.end(), array.mutable_data());
          tensors[py::str(tensor.name)] = array;
        }
        return tensors;
      },
      py::arg("path"), "Reads a safetensors file (checked as the library checks checkpoints) into float32 arrays.");

  py::class_<PyRecordDataset, std::shared_ptr<PyRecordDataset>>(m, "_RecordDataset")
      .def(py::init([](const std::string& text, const std::string& source, bool is_file, const std::string& overrides) {
        RunConfig config = read_config(text, source, is_file, overrides);
        throw_if_error(validate_run_config(config));
        return std::make_shared<PyRecordDataset>(config);
      }))
      .def("start", &PyRecordDataset::start, py::arg("epoch"))
      .def("next", &PyRecordDataset::next)
      .def_property_readonly("batches", &PyRecordDataset::batches);

  py::class_<PyModel, std::shared_ptr<PyModel>>(m, "_Model")
      .def(py::init<const std::string&, const std::string&, bool, const std::string&>())
      .def("fit", &PyModel::fit, py::arg("self_object"), py::arg("x"), py::arg("y"), py::arg("epochs"),
           py::arg("initial_epoch"), py::arg("steps_per_epoch"), py::arg("validation_data"), py::arg("callbacks"),
           py::arg("verbose"))
      .def("evaluate", &PyModel::evaluate, py::arg("self_object"), py::arg("x"), py::arg("y"),
           py::arg("callbacks"))
      .def("predict", &PyModel::predict, py::arg("x"))
      .def("weights", &PyModel::weights)
      .def("save", &PyModel::save, py::arg("path"))
      .def("load_weights", &PyModel::load_weights, py::arg("path"))
      .def_property_readonly("built", &PyModel::built)
      .def_property_readonly("replicas", &PyModel::replicas)
      .def("summary", &PyModel::summary)
      .def("config_yaml", [](const PyModel& model) { return config_yaml(model.config()); });
}

}  // namespace systole::python
