// SPDX-License-Identifier: Apache-2.0
// systole._systole: the C++ library as a Python extension. The systole
// package (python/systole) wraps it; users import systole.
#include <pybind11/pybind11.h>

#include "python_module.h"
#include "systole/version.h"

namespace systole::python {
namespace {

namespace py = pybind11;

// The exception classes, created with the module.
PyObject* device_error = nullptr;
PyObject* data_loss_error = nullptr;

[[noreturn]] void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

}  // namespace

void throw_if_error(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return;
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
      raise(PyExc_ValueError, status.message());
    case StatusCode::kTimeout:
      raise(PyExc_TimeoutError, status.message());
    case StatusCode::kDeviceError:
      raise(device_error, status.message());
    case StatusCode::kDataLoss:
      raise(data_loss_error, status.message());
    default:
      raise(PyExc_RuntimeError, status.message());
  }
}

pybind11::array ndarray_argument(const pybind11::handle& object, const std::string& name) {
  if (!py::isinstance<py::array>(object))
    throw py::type_error(name + ": expected a numpy.ndarray, got " +
                         std::string(py::str(py::type::of(object).attr("__name__"))));
  return py::reinterpret_borrow<py::array>(object);
}

pybind11::array float32_argument(const pybind11::handle& object, const std::string& name) {
  py::array array = ndarray_argument(object, name);
  if (!array.dtype().is(py::dtype::of<float>()))
    throw py::type_error(name + ": expected dtype float32, got " + std::string(py::str(array.dtype())) +
                         " (convert with .astype(numpy.float32))");
  return array;
}

}  // namespace systole::python

PYBIND11_MODULE(_systole, m) {
  namespace py = pybind11;
  using namespace systole::python;
  m.doc() = "The Systole runtime (C++): devices, matrix products and the trainer.";
  m.attr("__version__") = systole::kVersion;
  device_error = PyErr_NewExceptionWithDoc(
      "systole.DeviceError", "The device reported an error (its code and the failing descriptor).",
      PyExc_RuntimeError, nullptr);
  data_loss_error = PyErr_NewExceptionWithDoc("systole.DataLossError", "A file or transfer is truncated or corrupt.",
                                              PyExc_OSError, nullptr);
  m.attr("DeviceError") = py::handle(device_error);
  m.attr("DataLossError") = py::handle(data_loss_error);
  bind_device(m);
  bind_training(m);
}
