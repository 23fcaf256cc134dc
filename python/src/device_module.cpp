// SPDX-License-Identifier: Apache-2.0
// systole._systole's devices: Device (any backend, opened with its options),
// DeviceTensor (a matrix in a compute unit's memory, named by a handle) and
// matrix products on NumPy arrays and device tensors. An array operand is
// read where NumPy keeps it (row-major, or column-major as `a.T` gives, or
// a slice with a wider row stride) and converted to bf16 in one pass on its
// way to the device; the result is written straight into the returned
// array, or left in a device tensor. A device tensor's values reach the
// host only through numpy(), which syncs. The GIL is released while the
// device works.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "python_module.h"
#include "systole/device_tensor.h"
#include "systole/driver.h"
#include "systole/matmul.h"

namespace systole::python {
namespace {

namespace py = pybind11;

// "(3, 4, 5)", as NumPy prints a shape.
std::string shape_text(const py::array& array) {
  std::string text = "(";
  for (py::ssize_t d = 0; d < array.ndim(); ++d)
    text += (d ? ", " : "") + std::to_string(array.shape(d));
  return text + (array.ndim() == 1 ? ",)" : ")");
}

// A float32 NumPy array of the given rank; TypeError or ValueError naming
// the argument otherwise.
py::array float32_array(const py::handle& object, const char* name, py::ssize_t rank) {
  py::array array = float32_argument(object, name);
  if (array.ndim() != rank)
    throw py::value_error(std::string(name) + ": expected a " + std::to_string(rank) + "-D array, got shape " +
                          shape_text(array));
  for (py::ssize_t d = 0; d < rank; ++d)
    if (array.shape(d) == 0 || array.shape(d) > py::ssize_t(UINT32_MAX))
      throw py::value_error(std::string(name) + ": shape " + shape_text(array) +
                            " has an empty or too large dimension");
  return array;
}

// The array in C order (itself when it is already).
py::array contiguous(const py::array& array) {
  return py::array(py::module_::import("numpy").attr("ascontiguousarray")(array));
}

// A 2-D operand as the device reads it: its data, whether it is stored
// transposed (column-major), and its row stride in elements. Layouts the
// device cannot read in place (a step along rows, negative strides) are
// made contiguous first; `keep` holds that copy.
struct Operand {
  const float* data = nullptr;
  uint32_t rows = 0, cols = 0;  // as the user sees the array
  bool column_major = false;
  uint32_t stride = 0;
  py::array keep;
};

Operand operand(const py::handle& object, const char* name) {
  Operand op;
  op.keep = float32_array(object, name, 2);
  op.rows = uint32_t(op.keep.shape(0));
  op.cols = uint32_t(op.keep.shape(1));
  constexpr py::ssize_t kItem = sizeof(float);
  // A dimension of length 1 may have any stride: give it the packed one.
  py::ssize_t row = op.rows == 1 ? op.cols * kItem : op.keep.strides(0);
  py::ssize_t col = op.cols == 1 ? kItem : op.keep.strides(1);
  if (col == kItem && row > 0 && row % kItem == 0 && row / kItem >= op.cols && row / kItem <= UINT32_MAX) {
    op.stride = uint32_t(row / kItem);
  } else if (row == kItem && col > 0 && col % kItem == 0 && col / kItem >= op.rows &&
             col / kItem <= UINT32_MAX) {
    op.column_major = true;
    op.stride = uint32_t(col / kItem);
  } else {
    op.keep = contiguous(op.keep);
    op.stride = op.cols;
  }
  op.data = static_cast<const float*>(op.keep.data());
  return op;
}

class PyDevice;

// A row-major float32 matrix in one compute unit's memory. It keeps its
// device open.
struct PyDeviceTensor {
  std::shared_ptr<PyDevice> device;
  uint32_t unit = 0;
  uint32_t rows = 0, cols = 0;
  DeviceTensor tensor;

  py::tuple shape() const { return py::make_tuple(rows, cols); }
  py::array_t<float> numpy() const {
    py::array_t<float> out({py::ssize_t(rows), py::ssize_t(cols)});
    Status status;
    {
      py::gil_scoped_release release;
      status = tensor.read(out.mutable_data());
    }
    throw_if_error(status);
    return out;
  }
  void write(const py::handle& values) {
    py::array array = float32_argument(values, "values");
    if (array.ndim() != 2 || uint32_t(array.shape(0)) != rows || uint32_t(array.shape(1)) != cols)
      throw py::value_error("values: expected shape (" + std::to_string(rows) + ", " + std::to_string(cols) +
                            ") as the device tensor's, got " + shape_text(array));
    array = contiguous(array);
    Status status;
    {
      py::gil_scoped_release release;
      status = tensor.write(static_cast<const float*>(array.data()));
    }
    throw_if_error(status);
  }
  std::string repr() const {
    return "systole.DeviceTensor(shape=(" + std::to_string(rows) + ", " + std::to_string(cols) +
           "), unit=" + std::to_string(unit) + ")";
  }
};

// A matmul argument given as a device tensor: null when it is not one; an
// error names the argument when it lives on another unit.
const PyDeviceTensor* device_tensor(const py::handle& object, const char* name, uint32_t unit) {
  if (!py::isinstance<PyDeviceTensor>(object)) return nullptr;
  const auto* tensor = &object.cast<const PyDeviceTensor&>();
  if (tensor->unit != unit)
    throw py::value_error(std::string(name) + ": a device tensor of unit " + std::to_string(tensor->unit) +
                          ", for a product on unit " + std::to_string(unit));
  return tensor;
}

class PyDevice : public std::enable_shared_from_this<PyDevice> {
 public:
  PyDevice(const std::string& backend, uint32_t index, const py::object& array, uint32_t units,
           const std::string& engine, uint32_t threads, const std::string& xclbin, const std::string& board,
           double clock_mhz, uint32_t pcie_gen, uint32_t pcie_lanes, const std::string& port, uint32_t baud,
           double launch_timeout) {
    DeviceOptions options;
    const spec::ArrayShape shape = array_shape(array);
    options.array_rows = shape.rows;
    options.array_cols = shape.cols;
    if (units == 0) throw py::value_error("units: expected at least 1, got 0");
    options.compute_units = units;
    if (engine != "fast" && engine != "hls")
      throw py::value_error("engine: expected 'fast' or 'hls', got '" + engine + "'");
    options.engine = engine == "hls" ? EmuEngine::kHls : EmuEngine::kFast;
    options.threads_per_unit = threads;
    options.xclbin = xclbin;
    options.perf.board = board;
    options.perf.clock_mhz = clock_mhz;
    options.perf.pcie_gen = pcie_gen;
    options.perf.pcie_lanes = pcie_lanes;
    options.uart.port = port;
    options.uart.baud = baud;
    if (!(launch_timeout > 0) || launch_timeout > 1e6)
      throw py::value_error("launch_timeout: expected seconds in (0, 1e6], got " + py::repr(py::float_(launch_timeout)).cast<std::string>());
    timeout_ = std::chrono::milliseconds(int64_t(launch_timeout * 1000));
    Result<Device> device = [&] {
      py::gil_scoped_release release;
      return Device::open(backend, index, options);
    }();
    device_ = value_or_throw(std::move(device));
    for (uint32_t u = 0; u < device_.info().compute_units; ++u) units_.push_back(std::make_unique<Unit>());
  }

  const Device& device() const { return device_; }

  py::dict info() const {
    const DeviceInfo& info = device_.info();
    py::dict d;
    d["backend"] = info.backend;
    d["index"] = info.index;
    d["name"] = info.name;
    d["version"] = info.version;
    d["array"] = py::make_tuple(info.shape.rows, info.shape.cols);
    d["max_m"] = info.max_m;
    d["max_n"] = info.max_n;
    d["max_k"] = info.max_k;
    d["max_descriptors"] = info.max_descriptors;
    d["vector_engine"] = info.has_vector_engine();
    d["compute_units"] = info.compute_units;
    d["hbm_banks"] = info.hbm_banks;
    d["bank_bytes"] = info.bank_bytes;
    return d;
  }

  // A device tensor of `shape` on `unit`, filled with `values` where given.
  PyDeviceTensor tensor(const py::object& values, const py::object& shape, uint32_t unit) {
    uint32_t rows = 0, cols = 0;
    if (!values.is_none()) {
      const py::array array = float32_array(values, "values", 2);
      rows = uint32_t(array.shape(0));
      cols = uint32_t(array.shape(1));
    } else {
      std::vector<int64_t> dims;
      try {
        dims = shape.cast<std::vector<int64_t>>();
      } catch (const py::cast_error&) {
      }
      if (dims.size() != 2 || dims[0] < 1 || dims[1] < 1 || dims[0] > UINT32_MAX || dims[1] > UINT32_MAX)
        throw py::value_error("shape: expected (rows, cols) of positive sizes, got " +
                              py::repr(shape).cast<std::string>());
      rows = uint32_t(dims[0]);
      cols = uint32_t(dims[1]);
    }
    Unit& u = unit_state(unit);
    PyDeviceTensor made{shared_from_this(), unit, rows, cols, DeviceTensor()};
    Status status;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(u.mutex);
      status = executor(u, unit);
      Result<DeviceTensor> allocated = status.ok() ? u.matmul->allocate(std::size_t(rows) * cols)
                                                   : Result<DeviceTensor>(status);
      status = allocated.status();
      if (status.ok()) made.tensor = std::move(allocated).value();
    }
    throw_if_error(status);
    if (!values.is_none()) made.write(values);
    return made;
  }

  py::object matmul(const py::handle& a_object, const py::handle& b_object, const py::object& bias_object, bool relu,
                    bool transpose_a, bool transpose_b, const py::object& out_object, uint32_t unit) {
    const PyDeviceTensor* a_tensor = device_tensor(a_object, "a", unit);
    const PyDeviceTensor* b_tensor = device_tensor(b_object, "b", unit);
    const PyDeviceTensor* bias_tensor = device_tensor(bias_object, "bias", unit);
    const PyDeviceTensor* out = out_object.is_none() ? nullptr : device_tensor(out_object, "out", unit);
    if (!out_object.is_none() && !out)
      throw py::type_error("out: expected a systole.DeviceTensor, got " +
                           py::str(py::type::of(out_object)).cast<std::string>());
    // A device tensor reads as the row-major array it holds.
    auto operand_of = [](const py::handle& object, const PyDeviceTensor* tensor, const char* name) {
      if (!tensor) return operand(object, name);
      Operand op;
      op.rows = tensor->rows;
      op.cols = tensor->cols;
      op.stride = tensor->cols;
      return op;
    };
    Operand a = operand_of(a_object, a_tensor, "a"), b = operand_of(b_object, b_tensor, "b");
    MatmulCall call;
    // op(A) is m x k, op(B) k x n, as the user's flags say; the stored
    // layout may flip the flag the device sees.
    call.m = transpose_a ? a.cols : a.rows;
    call.k = transpose_a ? a.rows : a.cols;
    const uint32_t b_rows = transpose_b ? b.cols : b.rows;
    call.n = transpose_b ? b.rows : b.cols;
    if (b_rows != call.k)
      throw py::value_error("matmul: op(a) is " + std::to_string(call.m) + "x" + std::to_string(call.k) +
                            " and op(b) is " + std::to_string(b_rows) + "x" + std::to_string(call.n) +
                            ": the inner dimensions differ");
    // A column-major array is its transpose stored row-major.
    call.a = a.data;
    call.a_transposed = transpose_a != a.column_major;
    call.lda = a.stride;
    call.b = b.data;
    call.b_transposed = transpose_b != b.column_major;
    call.ldb = b.stride;
    if (a_tensor) call.a.card = a_tensor->tensor;
    if (b_tensor) call.b.card = b_tensor->tensor;
    py::array bias;
    if (bias_tensor) {
      if (bias_tensor->rows * bias_tensor->cols != call.n || (bias_tensor->rows != 1 && bias_tensor->cols != 1))
        throw py::value_error("bias: expected " + std::to_string(call.n) +
                              " values (the columns of the product), got a device tensor of shape (" +
                              std::to_string(bias_tensor->rows) + ", " + std::to_string(bias_tensor->cols) + ")");
      call.bias.card = bias_tensor->tensor;
    } else if (!bias_object.is_none()) {
      bias = float32_array(bias_object, "bias", 1);
      if (uint32_t(bias.shape(0)) != call.n)
        throw py::value_error("bias: expected " + std::to_string(call.n) + " values (the columns of the product), got shape " +
                              shape_text(bias));
      bias = contiguous(bias);
      call.bias = static_cast<const float*>(bias.data());
    }
    call.relu = relu;
    py::array_t<float> c;
    if (out) {
      if (out->rows != call.m || out->cols != call.n)
        throw py::value_error("out: expected shape (" + std::to_string(call.m) + ", " + std::to_string(call.n) +
                              ") for the product, got a device tensor of shape (" + std::to_string(out->rows) +
                              ", " + std::to_string(out->cols) + ")");
      call.c.card = out->tensor;
    } else {
      c = py::array_t<float>({py::ssize_t(call.m), py::ssize_t(call.n)});
      call.c = c.mutable_data();
    }
    Unit& u = unit_state(unit);
    Status status;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(u.mutex);
      status = executor(u, unit);
      if (status.ok()) status = u.matmul->run(call);
    }
    throw_if_error(status);
    if (out) return out_object;
    return std::move(c);
  }

  py::dict counters(uint32_t unit) {
    Unit& u = unit_state(unit);
    std::lock_guard<std::mutex> lock(u.mutex);
    const spec::PerfCounters c = u.matmul ? u.matmul->counters() : spec::PerfCounters{};
    py::dict d;
    d["launches"] = u.matmul ? u.matmul->launches() : 0;
    d["descriptors"] = c.descriptors_done;
    d["busy_cycles"] = c.busy_cycles;
    d["stall_cycles"] = c.stall_cycles;
    d["macs"] = c.macs;
    d["dma_read_bytes"] = c.dma_read_bytes;
    d["dma_write_bytes"] = c.dma_write_bytes;
    return d;
  }

  py::dict projection() const {
    const std::optional<CardModel> model = device_.card_model();
    if (!model)
      throw_if_error(Status(StatusCode::kUnavailable,
                            device_.info().backend + " runs the work: it projects no board's timing (the perf "
                                                     "backend models a board)"));
    const Projection p = model->projection();
    py::dict d;
    d["board"] = p.board;
    d["clock_hz"] = p.clock_hz;
    d["seconds"] = p.seconds;
    d["launch_seconds"] = p.launch_seconds;
    d["link_seconds"] = p.link_seconds;
    d["launches"] = p.launches;
    d["busy_cycles"] = p.busy_cycles;
    d["array_cycles"] = p.array_cycles;
    d["macs"] = p.macs;
    d["hbm_wait_cycles"] = p.hbm_wait_cycles;
    d["utilization"] = p.utilization();
    d["bound"] = p.bound();
    return d;
  }

  std::string repr() const { return "systole.Device('" + device_.info().name + "')"; }

 private:
  // One compute unit's products, created on first use; calls on a unit
  // take turns.
  struct Unit {
    std::mutex mutex;
    std::unique_ptr<DeviceMatmul> matmul;
  };

  // (rows, cols) or "RxC", read by the driver's parser (its digits and
  // range); an error quotes what the user gave.
  static spec::ArrayShape array_shape(const py::object& array) {
    std::string text;
    if (py::isinstance<py::str>(array)) {
      text = array.cast<std::string>();
    } else if (py::isinstance<py::tuple>(array) || py::isinstance<py::list>(array)) {
      py::sequence s = array;
      if (py::len(s) == 2 && py::isinstance<py::int_>(s[0]) && py::isinstance<py::int_>(s[1]))
        text = std::string(py::str(s[0])) + "x" + std::string(py::str(s[1]));
    }
    Result<spec::ArrayShape> shape = parse_array_shape(text);
    if (shape.ok()) return *shape;
    if (py::isinstance<py::str>(array)) throw py::value_error("array: " + shape.status().message());
    throw py::value_error("array: expected (rows, cols) or 'RxC' with sizes 1..65536, got " +
                          py::repr(array).cast<std::string>());
  }

  Unit& unit_state(uint32_t unit) {
    if (unit >= units_.size())
      throw py::value_error("unit: " + std::to_string(unit) + " is out of range (the device has " +
                            std::to_string(units_.size()) + " compute units)");
    return *units_[unit];
  }

  Status executor(Unit& u, uint32_t unit) {
    if (u.matmul) return ok_status();
    auto matmul = DeviceMatmul::create(device_, unit, timeout_);
    if (!matmul.ok()) return matmul.status();
    u.matmul = std::move(matmul).value();
    return ok_status();
  }

  Device device_;
  std::chrono::milliseconds timeout_{0};
  std::vector<std::unique_ptr<Unit>> units_;
};

}  // namespace

void bind_device(py::module_& m) {
  py::class_<PyDeviceTensor>(m, "DeviceTensor", R"(A float32 matrix in a compute unit's memory (Device.tensor).

Its values stay on the device: Device.matmul reads it as an operand or bias
and writes it as `out`; numpy() reads it back (a sync), write() replaces it.)")
      .def_property_readonly("shape", &PyDeviceTensor::shape)
      .def_readonly("unit", &PyDeviceTensor::unit)
      .def("numpy", &PyDeviceTensor::numpy, "The values, read back from the device.")
      .def("write", &PyDeviceTensor::write, py::arg("values"),
           "Replaces the values with `values` (a float32 array of the same shape).")
      .def("__repr__", &PyDeviceTensor::repr);

  py::class_<PyDevice, std::shared_ptr<PyDevice>>(m, "Device", R"(A Systole device: one backend, opened with its options.

Device(backend="sw_emu", index=0, *, array=(128, 128), units=1, engine="fast",
       threads=0, xclbin="", board="u55c", clock_mhz=0, pcie_gen=0, pcie_lanes=0,
       port="", baud=115200, launch_timeout=600.0)

array and units apply to the emulators and the card model (perf); a board
reports its own. board, clock_mhz, pcie_* choose what perf models; xclbin is
xrt's bitstream; port and baud are uart's serial link.)")
      .def(py::init<const std::string&, uint32_t, const py::object&, uint32_t, const std::string&, uint32_t,
                    const std::string&, const std::string&, double, uint32_t, uint32_t, const std::string&,
                    uint32_t, double>(),
           py::arg("backend") = "sw_emu", py::arg("index") = 0, py::kw_only(),
           py::arg("array") = py::make_tuple(spec::kDefaultShape.rows, spec::kDefaultShape.cols),
           py::arg("units") = 1, py::arg("engine") = "fast", py::arg("threads") = 0, py::arg("xclbin") = "",
           py::arg("board") = "u55c", py::arg("clock_mhz") = 0.0, py::arg("pcie_gen") = 0,
           py::arg("pcie_lanes") = 0, py::arg("port") = "", py::arg("baud") = 115200,
           py::arg("launch_timeout") = 600.0)
      .def_property_readonly("info", &PyDevice::info, "What the device reports about itself, as a dict.")
      .def("matmul", &PyDevice::matmul, py::arg("a"), py::arg("b"), py::arg("bias") = py::none(),
           py::arg("relu") = false, py::arg("transpose_a") = false, py::arg("transpose_b") = false,
           py::kw_only(), py::arg("out") = py::none(), py::arg("unit") = 0,
           R"(op(a) @ op(b) (+ bias) (ReLU) on compute unit `unit`, as float32.

Operands are float32 NumPy arrays (any row or column stride) or the unit's
DeviceTensors; they are rounded to bf16 and multiplied with fp32 accumulation
in the array's order, the same bits as accel_gemm and the C++ runtime. A
device tensor is rounded on the device (its bf16 copy is made once until it
is written). The result is a new NumPy array, or is left in `out` (a
DeviceTensor of the product's shape), which is returned.)")
      .def("tensor", &PyDevice::tensor, py::arg("values") = py::none(), py::kw_only(),
           py::arg("shape") = py::none(), py::arg("unit") = 0,
           R"(A DeviceTensor in compute unit `unit`'s memory: a copy of `values` (a 2-D
float32 array), or of `shape` (rows, cols) with undefined values. It needs the
unit's vector engine.)")
      .def("counters", &PyDevice::counters, py::kw_only(), py::arg("unit") = 0,
           "The kernel's performance counters summed over this unit's launches from Python.")
      .def("projection", &PyDevice::projection,
           "perf only: the projected time of the work so far on the modelled board.")
      .def("__repr__", &PyDevice::repr);

  m.def(
      "sum_rows",
      [](const py::handle& x_object, uint32_t tile) {
        py::array x = float32_array(x_object, "x", 2);
        x = contiguous(x);
        const uint32_t rows = uint32_t(x.shape(0)), width = uint32_t(x.shape(1));
        py::array_t<float> out(py::ssize_t{width});
        const float* values = static_cast<const float*>(x.data());
        float* sums = out.mutable_data();
        {
          py::gil_scoped_release release;
          sum_rows(values, rows, width, tile, sums);
        }
        return out;
      },
      py::arg("x"), py::arg("tile") = 0,
      R"(The sums of x's columns in fp32, as the C++ runtime sums a bias's gradient
(x: float32 rows): from +0 in row order within each tile of `tile` rows (the
array's K tile, its row count; 0: one tile), then the tiles' sums from +0 in
order. No operand is rounded to bf16.)");

  m.def(
      "backends",
      [] {
        py::list list;
        for (const BackendCapabilities& b : Device::backends()) {
          py::dict d;
          d["name"] = b.name;
          d["units_on_demand"] = b.units_on_demand;
          d["uses_host_cores"] = b.uses_host_cores;
          d["models_board"] = b.models_board;
          d["hardware"] = b.hardware;
          list.append(d);
        }
        return list;
      },
      "The backends compiled into this build, with what each can do.");
}

}  // namespace systole::python
