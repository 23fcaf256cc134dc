// SPDX-License-Identifier: Apache-2.0
// What the parts of systole._systole share: the library's Status as a Python
// exception, and each part's binding function.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "systole/status.h"

namespace systole::python {

// Raises the Python exception for a failed status, its message the
// library's: ValueError (bad arguments, unknown names), TimeoutError,
// systole.DeviceError (the kernel reported an error: code and descriptor),
// systole.DataLossError (a corrupt or truncated file), RuntimeError
// otherwise. Does nothing for ok.
void throw_if_error(const Status& status);

// `object` as a NumPy array, or a TypeError naming the argument `name` and
// the type it got.
pybind11::array ndarray_argument(const pybind11::handle& object, const std::string& name);
// The same, of dtype float32: nothing is converted (a float64 array is an
// error, not a silent rounding).
pybind11::array float32_argument(const pybind11::handle& object, const std::string& name);

template <typename T>
T value_or_throw(Result<T>&& result) {
  throw_if_error(result.status());
  return std::move(result).value();
}

void bind_device(pybind11::module_& m);
void bind_training(pybind11::module_& m);

}  // namespace systole::python
