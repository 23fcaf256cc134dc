// SPDX-License-Identifier: Apache-2.0
// The SYSTOLE PluggableDevice's kernels (TensorFlow's kernel C API), each
// computing in the numerics contract's floating-point mode on the device
// systole_plugin.cpp opened (card.h): MatMul and Conv2D with its two
// gradients on the units' arrays, reading the tensors in the units'
// memory; Sum over leading axes and BiasAddGrad on the units' vector
// engine; the elementwise ops (Add, Sub, Mul, DivNoNan, Neg), BiasAdd,
// Relu, ReluGrad, the sparse softmax cross-entropy and other sums on the
// host over that memory. A kernel's failure is its op's error, "<op> on
// SYSTOLE: ...".
#include <tensorflow/c/kernels.h>
#include <tensorflow/c/tf_status.h>

#include <xmmintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "card.h"
#include "systole/convolution.h"
#include "systole/device_tensor.h"
#include "systole/matmul.h"

namespace systole_tf {
namespace {

// TensorFlow runs kernels with subnormals flushed to zero (FTZ and DAZ in
// MXCSR); Systole's arithmetic keeps them where the contract does, so each
// kernel computes with them off, and restores TensorFlow's mode.
class ContractFloatingPoint {
 public:
  ContractFloatingPoint() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ & ~(kFlushToZero | kDenormalsAreZero)); }
  ~ContractFloatingPoint() { _mm_setcsr(saved_); }
  ContractFloatingPoint(const ContractFloatingPoint&) = delete;
  ContractFloatingPoint& operator=(const ContractFloatingPoint&) = delete;

 private:
  static constexpr unsigned kFlushToZero = 1u << 15, kDenormalsAreZero = 1u << 6;
  unsigned saved_;
};

// ---- kernels ----

std::vector<int64_t> dims_of(const TF_Tensor* t) {
  std::vector<int64_t> dims(TF_NumDims(t));
  for (std::size_t i = 0; i < dims.size(); ++i) dims[i] = TF_Dim(t, int(i));
  return dims;
}

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string text = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

// An input: its shape, its memory (on the device, or the host's for an
// input TensorFlow keeps there), its type, and a float32 input's values
// read from the device for a kernel that computes on the host.
struct Input {
  std::vector<int64_t> dims;
  const void* data = nullptr;
  std::size_t count = 0;
  TF_DataType type = TF_FLOAT;
  std::vector<float> values;
};

Result<Input> read_input(TF_OpKernelContext* ctx, int index, bool values) {
  TF_Status* status = TF_NewStatus();
  TF_Tensor* tensor = nullptr;
  TF_GetInput(ctx, index, &tensor, status);
  const bool got = TF_GetCode(status) == TF_OK;
  const std::string message = TF_Message(status);
  TF_DeleteStatus(status);
  if (!got) return Status(StatusCode::kInvalidArgument, message);
  // The tensor's memory outlives this reference: the kernel's input holds it.
  Input input{dims_of(tensor),
              TF_TensorData(tensor),
              std::size_t(TF_TensorElementCount(tensor)),
              TF_TensorType(tensor),
              {}};
  TF_DeleteTensor(tensor);
  if (values) {
    input.values.resize(input.count);
    SYSTOLE_RETURN_IF_ERROR(card->copy_out(input.values.data(), input.data, input.count * sizeof(float)));
  }
  return input;
}

// Output `output` of shape `dims` holding `values`, written to the
// device: into one of the inputs `forwardable` where TensorFlow lets it (a
// collective's reduction requires that its Add writes in place), else
// fresh memory.
Status set_output(TF_OpKernelContext* ctx, const std::vector<int64_t>& dims, const std::vector<float>& values,
                  const std::vector<int>& forwardable = {}, int output = 0) {
  TF_Status* status = TF_NewStatus();
  int forwarded = -1;
  TF_Tensor* out = TF_ForwardInputOrAllocateOutput(ctx, forwardable.data(), int(forwardable.size()), output,
                                                   dims.data(), int(dims.size()), &forwarded, status);
  Status result =
      TF_GetCode(status) == TF_OK ? systole::ok_status() : Status(StatusCode::kInternal, TF_Message(status));
  TF_DeleteStatus(status);
  if (result.ok()) result = card->copy_in(TF_TensorData(out), values.data(), values.size() * sizeof(float));
  TF_DeleteTensor(out);
  return result;
}

// An input's values on the host, read from the device.
Status read_values(Input& input) {
  input.values.resize(input.count);
  return card->copy_out(input.values.data(), input.data, input.count * sizeof(float));
}

// Output 0 of `dims`, its values a tensor in the unit's memory (none when
// it is empty).
struct DeviceOutput {
  TF_Tensor* tensor = nullptr;
  systole::DeviceTensor values;
  DeviceOutput() = default;
  DeviceOutput(const DeviceOutput&) = delete;
  DeviceOutput& operator=(const DeviceOutput&) = delete;
  ~DeviceOutput() {
    if (tensor) TF_DeleteTensor(tensor);
  }
};
Status allocate_output(TF_OpKernelContext* ctx, const std::vector<int64_t>& dims, DeviceOutput& out) {
  std::size_t count = 1;
  for (int64_t d : dims) count *= std::size_t(d);
  TF_Status* status = TF_NewStatus();
  out.tensor =
      TF_AllocateOutput(ctx, 0, TF_FLOAT, dims.data(), int(dims.size()), count * sizeof(float), status);
  const bool ok = TF_GetCode(status) == TF_OK;
  const std::string message = TF_Message(status);
  TF_DeleteStatus(status);
  if (!ok) return Status(StatusCode::kInternal, message);
  if (count == 0) return systole::ok_status();
  auto values = card->tensor(TF_TensorData(out.tensor), count);
  if (!values.ok()) return values.status();
  out.values = std::move(values).value();
  return systole::ok_status();
}

void fail(TF_OpKernelContext* ctx, const char* op, const Status& error) {
  TF_Status* status = TF_NewStatus();
  TF_SetStatus(status, error.code() == StatusCode::kInvalidArgument ? TF_INVALID_ARGUMENT : TF_INTERNAL,
               (std::string(op) + " on SYSTOLE: " + error.message()).c_str());
  TF_OpKernelContext_Failure(ctx, status);
  TF_DeleteStatus(status);
}

// A kernel: its body computes from the inputs (their values read from the
// device unless kOnDevice: the body then reads them there), in the
// contract's floating-point mode, and writes its output; an error it
// returns (or a failed read) fails the op, named "<op> on SYSTOLE: ...".
using KernelBody = Status (*)(const void* state, TF_OpKernelContext* ctx, std::vector<Input>& inputs);
template <const char* kOp, int kInputs, KernelBody kBody, bool kOnDevice = false>
void compute(void* state, TF_OpKernelContext* ctx) {
  const ContractFloatingPoint contract;
  std::vector<Input> inputs;
  Status result = systole::ok_status();
  for (int i = 0; i < kInputs && result.ok(); ++i) {
    auto input = read_input(ctx, i, !kOnDevice);
    if (input.ok())
      inputs.push_back(std::move(input).value());
    else
      result = input.status();
  }
  if (result.ok()) result = kBody(state, ctx, inputs);
  if (!result.ok()) fail(ctx, kOp, result);
}

Status invalid(const std::string& message) { return Status(StatusCode::kInvalidArgument, message); }

constexpr char kMatMul[] = "MatMul", kAdd[] = "Add", kRelu[] = "Relu", kReluGrad[] = "ReluGrad",
               kSum[] = "Sum", kConv2D[] = "Conv2D", kConv2DBackpropInput[] = "Conv2DBackpropInput",
               kConv2DBackpropFilter[] = "Conv2DBackpropFilter", kBiasAdd[] = "BiasAdd",
               kBiasAddGrad[] = "BiasAddGrad", kSub[] = "Sub", kMul[] = "Mul", kDivNoNan[] = "DivNoNan",
               kNeg[] = "Neg", kSparseSoftmaxCrossEntropy[] = "SparseSoftmaxCrossEntropyWithLogits";

struct MatMulAttrs {
  bool transpose_a = false, transpose_b = false;
};

// A bool attribute's value, or `fallback` where the op has none.
bool bool_attr(TF_OpKernelConstruction* ctx, const char* name, bool fallback) {
  TF_Status* status = TF_NewStatus();
  TF_Bool value = fallback;
  TF_OpKernelConstruction_GetAttrBool(ctx, name, &value, status);
  const bool got = TF_GetCode(status) == TF_OK;
  TF_DeleteStatus(status);
  return got ? bool(value) : fallback;
}

void* matmul_create(TF_OpKernelConstruction* ctx) {
  return new MatMulAttrs{bool_attr(ctx, "transpose_a", false), bool_attr(ctx, "transpose_b", false)};
}
void matmul_delete(void* kernel) { delete static_cast<MatMulAttrs*>(kernel); }

Status matmul(const void* state, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  const auto* attrs = static_cast<const MatMulAttrs*>(state);
  const std::vector<int64_t>&ad = inputs[0].dims, &bd = inputs[1].dims;
  if (ad.size() != 2 || bd.size() != 2)
    return invalid("operands must be matrices, got " + shape_text(ad) + " and " + shape_text(bd));
  const int64_t m = ad[attrs->transpose_a ? 1 : 0], k = ad[attrs->transpose_a ? 0 : 1];
  const int64_t kb = bd[attrs->transpose_b ? 1 : 0], n = bd[attrs->transpose_b ? 0 : 1];
  if (k != kb)
    return invalid("op(a) is " + std::to_string(m) + "x" + std::to_string(k) + " and op(b) is " +
                   std::to_string(kb) + "x" + std::to_string(n));
  if (m > UINT32_MAX || n > UINT32_MAX || k > UINT32_MAX)
    return invalid("a dimension is larger than 2^32 - 1");
  // The operands and the result in the unit's memory, where the product
  // reads and writes them.
  DeviceOutput out;
  SYSTOLE_RETURN_IF_ERROR(allocate_output(ctx, {m, n}, out));
  if (m == 0 || n == 0) return systole::ok_status();
  systole::MatmulCall call;
  call.m = uint32_t(m);
  call.n = uint32_t(n);
  call.k = uint32_t(k);
  call.a_transposed = attrs->transpose_a;
  call.b_transposed = attrs->transpose_b;
  call.c = out.values;
  if (k > 0) {
    auto a = card->tensor(inputs[0].data, inputs[0].count);
    if (!a.ok()) return a.status();
    auto b = card->tensor(inputs[1].data, inputs[1].count);
    if (!b.ok()) return b.status();
    call.a = *a;
    call.b = *b;
  }
  return card->matmul(uint32_t(TF_GetDeviceId(ctx)), call);
}

// ---- convolutions: Conv2D and its two gradients ----
//
// NHWC images, HWIO filters ([kh, kw, channels, filters], which flattens
// to the patch matrix's [patch, filters]: a patch row is (ky, kx, channel),
// as Systole's layers have it), dilations 1, SAME or VALID padding. The
// patches are made on the host from the input's values and go to the
// array in bf16 (OperandRows); the products run on the unit's array with
// the filter and the output gradient read in the unit's memory. The input
// gradient is col2im of dy W^T on the host (the sums of Systole's col2im).

struct ConvAttrs {
  uint32_t stride_height = 1, stride_width = 1;
  bool same = false;
};

// A string attribute's value.
std::string string_attr(TF_OpKernelConstruction* ctx, const char* name, TF_Status* status) {
  int32_t list_size = 0, total_size = 0;
  TF_OpKernelConstruction_GetAttrSize(ctx, name, &list_size, &total_size, status);
  if (TF_GetCode(status) != TF_OK || total_size <= 0) return "";
  std::string value(std::size_t(total_size), '\0');
  TF_OpKernelConstruction_GetAttrString(ctx, name, value.data(), value.size(), status);
  return TF_GetCode(status) == TF_OK ? value : "";
}

std::string list_text(const int32_t (&values)[4]) {
  return "[" + std::to_string(values[0]) + ", " + std::to_string(values[1]) + ", " +
         std::to_string(values[2]) + ", " + std::to_string(values[3]) + "]";
}

void* conv_create(TF_OpKernelConstruction* ctx) {
  auto* attrs = new ConvAttrs;
  TF_Status* status = TF_NewStatus();
  int32_t strides[4] = {1, 1, 1, 1}, dilations[4] = {1, 1, 1, 1};
  TF_OpKernelConstruction_GetAttrInt32List(ctx, "strides", strides, 4, status);
  TF_SetStatus(status, TF_OK, "");
  TF_OpKernelConstruction_GetAttrInt32List(ctx, "dilations", dilations, 4, status);
  TF_SetStatus(status, TF_OK, "");
  const std::string padding = string_attr(ctx, "padding", status);
  TF_SetStatus(status, TF_OK, "");
  const std::string format = string_attr(ctx, "data_format", status);
  std::string error;
  if (!format.empty() && format != "NHWC")
    error = "data_format '" + format + "': only NHWC runs on SYSTOLE";
  else if (padding != "SAME" && padding != "VALID")
    error = "padding '" + padding + "': only SAME and VALID run on SYSTOLE";
  else if (strides[0] != 1 || strides[3] != 1 || strides[1] < 1 || strides[2] < 1)
    error = "strides " + list_text(strides) + ": expected [1, height, width, 1] with positive strides";
  else if (dilations[0] != 1 || dilations[1] != 1 || dilations[2] != 1 || dilations[3] != 1)
    error = "dilations " + list_text(dilations) + ": only 1 runs on SYSTOLE";
  attrs->stride_height = uint32_t(std::max(strides[1], 1));
  attrs->stride_width = uint32_t(std::max(strides[2], 1));
  attrs->same = padding == "SAME";
  if (!error.empty()) {
    TF_SetStatus(status, TF_INVALID_ARGUMENT, ("convolution on SYSTOLE: " + error).c_str());
    TF_OpKernelConstruction_Failure(ctx, status);
  }
  TF_DeleteStatus(status);
  return attrs;
}
void conv_delete(void* kernel) { delete static_cast<ConvAttrs*>(kernel); }

// The convolution of input [n, h, w, c] with filter [kh, kw, c, f].
Result<systole::ConvShape> conv_shape(const ConvAttrs& attrs, const std::vector<int64_t>& input,
                                      const std::vector<int64_t>& filter) {
  if (input.size() != 4 || filter.size() != 4)
    return invalid("expected an NHWC input and an HWIO filter, got " + shape_text(input) + " and " +
                   shape_text(filter));
  if (input[3] != filter[2])
    return invalid("the input has " + std::to_string(input[3]) + " channels and the filter " +
                   std::to_string(filter[2]) + " (input " + shape_text(input) + ", filter " +
                   shape_text(filter) + ")");
  for (int64_t d : {input[1], input[2], input[3], filter[0], filter[1], filter[3]})
    if (d < 1 || d > 65535)
      return invalid("a dimension of " + shape_text(input) + " or " + shape_text(filter) +
                     " is empty or larger than 65535");
  if (input[0] < 0 || input[0] > UINT32_MAX) return invalid("a batch of " + std::to_string(input[0]));
  systole::ConvShape s;
  s.height = uint32_t(input[1]);
  s.width = uint32_t(input[2]);
  s.channels = uint32_t(input[3]);
  s.kernel_height = uint32_t(filter[0]);
  s.kernel_width = uint32_t(filter[1]);
  s.filters = uint32_t(filter[3]);
  s.stride_height = attrs.stride_height;
  s.stride_width = attrs.stride_width;
  // TensorFlow's padding: SAME gives ceil(in / stride) outputs, the
  // padding's smaller half before; VALID none.
  auto out = [&](uint32_t in, uint32_t kernel, uint32_t stride, uint32_t& before) -> uint32_t {
    if (attrs.same) {
      const int64_t o = (int64_t(in) + stride - 1) / stride;
      before = uint32_t(std::max<int64_t>((o - 1) * stride + kernel - in, 0) / 2);
      return uint32_t(o);
    }
    before = 0;
    return in < kernel ? 0 : (in - kernel) / stride + 1;
  };
  s.out_height = out(s.height, s.kernel_height, s.stride_height, s.top);
  s.out_width = out(s.width, s.kernel_width, s.stride_width, s.left);
  return s;
}

// The patch rows of `examples` images (their values on the host).
class Patches final : public systole::OperandRows {
 public:
  Patches(const systole::ConvShape& shape, const float* x, uint32_t examples)
      : shape_(shape), x_(x), examples_(examples) {}
  void fp32(float* out) const override {
    const uint32_t c = shape_.channels;
    shape_.walk_patches(0, examples_, [&](std::size_t row, int64_t source) {
      if (source < 0)
        std::fill_n(out + row, c, 0.0f);
      else
        std::copy_n(x_ + source, c, out + row);
    });
  }
  void bf16(uint16_t* out) const override {
    const uint32_t c = shape_.channels;
    shape_.walk_patches(0, examples_, [&](std::size_t row, int64_t source) {
      if (source < 0)
        std::fill_n(out + row, c, uint16_t(0));
      else
        systole::round_to_bf16(x_ + source, c, out + row);
    });
  }

 private:
  const systole::ConvShape& shape_;
  const float* x_;
  uint32_t examples_;
};

// The four int32 sizes of a host-memory shape input.
Result<std::vector<int64_t>> sizes_input(const Input& input, const char* name) {
  if (input.dims != std::vector<int64_t>{4})
    return invalid(std::string(name) + ": expected 4 sizes, got a tensor of shape " + shape_text(input.dims));
  const auto* sizes = static_cast<const int32_t*>(input.data);
  return std::vector<int64_t>(sizes, sizes + 4);
}

// dy's shape against the output's.
Status check_output_gradient(const Input& dy, int64_t examples, const systole::ConvShape& s) {
  const std::vector<int64_t> want{examples, s.out_height, s.out_width, s.filters};
  if (dy.dims != want)
    return invalid("the output gradient is " + shape_text(dy.dims) + " for an output of " + shape_text(want));
  return systole::ok_status();
}

Status conv2d(const void* state, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  Input &x = inputs[0], &w = inputs[1];
  auto shape = conv_shape(*static_cast<const ConvAttrs*>(state), x.dims, w.dims);
  if (!shape.ok()) return shape.status();
  const systole::ConvShape& s = *shape;
  DeviceOutput out;
  SYSTOLE_RETURN_IF_ERROR(allocate_output(ctx, {x.dims[0], s.out_height, s.out_width, s.filters}, out));
  const std::size_t rows = std::size_t(x.dims[0]) * s.positions();
  if (rows == 0) return systole::ok_status();
  if (rows > UINT32_MAX) return invalid("more patch rows than 2^32 - 1");
  SYSTOLE_RETURN_IF_ERROR(read_values(x));
  auto filter = card->tensor(w.data, w.count);
  if (!filter.ok()) return filter.status();
  const Patches patches(s, x.values.data(), uint32_t(x.dims[0]));
  systole::MatmulCall call;  // y [rows x filters] = patches [rows x patch] W [patch x filters]
  call.m = uint32_t(rows);
  call.k = s.patch();
  call.n = s.filters;
  call.a_rows = &patches;
  call.b = *filter;
  call.c = out.values;
  return card->matmul(uint32_t(TF_GetDeviceId(ctx)), call);
}

Status conv2d_backprop_input(const void* state, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  auto sizes = sizes_input(inputs[0], "input_sizes");
  if (!sizes.ok()) return sizes.status();
  Input &w = inputs[1], &dy = inputs[2];
  auto shape = conv_shape(*static_cast<const ConvAttrs*>(state), *sizes, w.dims);
  if (!shape.ok()) return shape.status();
  const systole::ConvShape& s = *shape;
  SYSTOLE_RETURN_IF_ERROR(check_output_gradient(dy, (*sizes)[0], s));
  const uint32_t examples = uint32_t((*sizes)[0]);
  const std::size_t rows = std::size_t(examples) * s.positions();
  if (rows > UINT32_MAX) return invalid("more patch rows than 2^32 - 1");
  std::vector<float> dcol(rows * s.patch()), dx(std::size_t(examples) * s.input_values());
  if (rows > 0) {
    auto filter = card->tensor(w.data, w.count);
    if (!filter.ok()) return filter.status();
    auto gradient = card->tensor(dy.data, dy.count);
    if (!gradient.ok()) return gradient.status();
    systole::MatmulCall call;  // dcol [rows x patch] = dy [rows x filters] W^T
    call.m = uint32_t(rows);
    call.k = s.filters;
    call.n = s.patch();
    call.a = *gradient;
    call.b = *filter;
    call.b_transposed = true;
    call.c = dcol.data();
    SYSTOLE_RETURN_IF_ERROR(card->matmul(uint32_t(TF_GetDeviceId(ctx)), call));
  }
  systole::col2im(s, examples, dcol.data(), dx.data());
  return set_output(ctx, *sizes, dx);
}

Status conv2d_backprop_filter(const void* state, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  auto sizes = sizes_input(inputs[1], "filter_sizes");
  if (!sizes.ok()) return sizes.status();
  Input &x = inputs[0], &dy = inputs[2];
  auto shape = conv_shape(*static_cast<const ConvAttrs*>(state), x.dims, *sizes);
  if (!shape.ok()) return shape.status();
  const systole::ConvShape& s = *shape;
  SYSTOLE_RETURN_IF_ERROR(check_output_gradient(dy, x.dims[0], s));
  const std::size_t rows = std::size_t(x.dims[0]) * s.positions();
  if (rows > UINT32_MAX) return invalid("more patch rows than 2^32 - 1");
  std::vector<float> dw_t(std::size_t(s.filters) * s.patch(), 0.0f), dw(dw_t.size());
  if (rows > 0) {
    SYSTOLE_RETURN_IF_ERROR(read_values(x));
    auto gradient = card->tensor(dy.data, dy.count);
    if (!gradient.ok()) return gradient.status();
    const Patches patches(s, x.values.data(), uint32_t(x.dims[0]));
    systole::MatmulCall call;  // dW^T [filters x patch] = dy^T [filters x rows] patches [rows x patch]
    call.m = s.filters;
    call.k = uint32_t(rows);
    call.n = s.patch();
    call.a = *gradient;
    call.a_transposed = true;
    call.b_rows = &patches;
    call.c = dw_t.data();
    SYSTOLE_RETURN_IF_ERROR(card->matmul(uint32_t(TF_GetDeviceId(ctx)), call));
  }
  for (uint32_t f = 0; f < s.filters; ++f)  // to HWIO: [patch x filters]
    for (uint32_t p = 0; p < s.patch(); ++p)
      dw[std::size_t(p) * s.filters + f] = dw_t[std::size_t(f) * s.patch() + p];
  return set_output(ctx, *sizes, dw);
}

// Sum over `reduction_indices` (host memory: int32 or int64, negative from
// the end), keep_dims or not. Over leading axes (a bias's gradient, the
// batch's rows) the unit's vector engine sums in the array's K order (the
// products' tiles: SumCall), in the unit's memory; over any other axes the
// host adds each output's values in fp32, in their row-major order.
struct SumAttrs {
  bool keep_dims = false;
};

void* sum_create(TF_OpKernelConstruction* ctx) { return new SumAttrs{bool_attr(ctx, "keep_dims", false)}; }
void sum_delete(void* kernel) { delete static_cast<SumAttrs*>(kernel); }

// The axes input's values (host memory, int32 or int64), each in [0, rank).
Result<std::vector<bool>> reduced_axes(const Input& axes, std::size_t rank) {
  std::vector<bool> reduced(rank, false);
  for (std::size_t i = 0; i < axes.count; ++i) {
    const int64_t axis = axes.type == TF_INT64 ? static_cast<const int64_t*>(axes.data)[i]
                                               : static_cast<const int32_t*>(axes.data)[i];
    const int64_t at = axis < 0 ? axis + int64_t(rank) : axis;
    if (at < 0 || at >= int64_t(rank))
      return invalid("reduction axis " + std::to_string(axis) + " is out of range for a tensor of rank " +
                     std::to_string(rank));
    reduced[std::size_t(at)] = true;
  }
  return reduced;
}

// z = x op y elementwise, broadcasting as NumPy and TensorFlow's BCast do
// (shapes aligned on the right, each dimension equal or 1): Add and AddV2,
// Sub, Mul, DivNoNan (x / y, +0 where y is 0, as TensorFlow's).
// Each result is one IEEE operation in fp32, the bits of NumPy's.
float plus(float x, float y) { return x + y; }
float minus(float x, float y) { return x - y; }
float times(float x, float y) { return x * y; }
float divide_no_nan(float x, float y) { return y == 0.0f ? 0.0f : x / y; }

template <float (*kOp)(float, float)>
Status elementwise(const void*, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  const std::vector<int64_t>&xd = inputs[0].dims, &yd = inputs[1].dims;
  const std::vector<float>&x = inputs[0].values, &y = inputs[1].values;
  const std::size_t rank = std::max(xd.size(), yd.size());
  std::vector<int64_t> zd(rank), xs(rank, 0), ys(rank, 0);  // strides, 0 where broadcast
  int64_t xstride = 1, ystride = 1;
  for (std::size_t i = rank; i-- > 0;) {
    const std::size_t from_end = rank - 1 - i;
    const int64_t a = from_end < xd.size() ? xd[xd.size() - 1 - from_end] : 1;
    const int64_t b = from_end < yd.size() ? yd[yd.size() - 1 - from_end] : 1;
    if (a != b && a != 1 && b != 1)
      return invalid("shapes " + shape_text(xd) + " and " + shape_text(yd) + " do not broadcast");
    zd[i] = a == 1 ? b : a;
    xs[i] = a == 1 ? 0 : xstride;
    ys[i] = b == 1 ? 0 : ystride;
    xstride *= a;
    ystride *= b;
  }
  int64_t count = 1;
  for (int64_t d : zd) count *= d;
  std::vector<float> z(std::size_t(std::max<int64_t>(count, 0)));
  std::vector<int64_t> at(rank, 0);
  int64_t xi = 0, yi = 0;
  for (std::size_t n = 0; n < z.size(); ++n) {
    z[n] = kOp(x[std::size_t(xi)], y[std::size_t(yi)]);
    for (std::size_t i = rank; i-- > 0;) {  // the next index, odometer style
      xi += xs[i];
      yi += ys[i];
      if (++at[i] < zd[i]) break;
      xi -= xs[i] * zd[i];
      yi -= ys[i] * zd[i];
      at[i] = 0;
    }
  }
  return set_output(ctx, zd, z, {0, 1});
}

// Output 0 = x summed over the axes `reduced` marks (keep_dims: they stay,
// of size 1).
Status reduce_sum(TF_OpKernelContext* ctx, Input& x, const std::vector<bool>& reduced, bool keep_dims) {
  std::vector<int64_t> out_dims;
  std::size_t out_count = 1, reduced_count = 1;
  for (std::size_t d = 0; d < x.dims.size(); ++d) {
    if (reduced[d])
      reduced_count *= std::size_t(x.dims[d]);
    else
      out_count *= std::size_t(x.dims[d]);
    if (!reduced[d] || keep_dims) out_dims.push_back(reduced[d] ? 1 : x.dims[d]);
  }
  // Leading axes only: rows of the output's width, summed on the card.
  std::size_t leading = 0;
  while (leading < reduced.size() && reduced[leading]) ++leading;
  const bool rows_only = std::find(reduced.begin() + long(leading), reduced.end(), true) == reduced.end();
  // Within the engine's sum: rows of at most kMaxVectorElements values, in
  // at most kMaxVectorRows tiles of the array's rows.
  const std::size_t tile = card->info().shape.rows;
  if (rows_only && out_count > 0 && reduced_count > 0 && out_count <= systole::spec::kMaxVectorElements &&
      reduced_count <= UINT32_MAX && (reduced_count + tile - 1) / tile <= systole::spec::kMaxVectorRows) {
    DeviceOutput out;
    SYSTOLE_RETURN_IF_ERROR(allocate_output(ctx, out_dims, out));
    auto in = card->tensor(x.data, x.count);
    if (!in.ok()) return in.status();
    systole::SumCall call;
    call.x = *in;
    call.rows = uint32_t(reduced_count);
    call.width = uint32_t(out_count);
    call.out = out.values;
    return card->sum(uint32_t(TF_GetDeviceId(ctx)), call);
  }
  SYSTOLE_RETURN_IF_ERROR(read_values(x));
  // Output i, reduced index j: x's row-major index from both (odometer).
  std::vector<float> z(out_count, 0.0f);
  std::vector<int64_t> at(x.dims.size(), 0);
  for (std::size_t n = 0; n < x.count; ++n) {
    std::size_t o = 0;
    for (std::size_t d = 0; d < x.dims.size(); ++d)
      if (!reduced[d]) o = o * std::size_t(x.dims[d]) + std::size_t(at[d]);
    z[o] += x.values[n];
    for (std::size_t d = x.dims.size(); d-- > 0;) {
      if (++at[d] < x.dims[d]) break;
      at[d] = 0;
    }
  }
  return set_output(ctx, out_dims, z);
}

Status sum(const void* state, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  auto axes = reduced_axes(inputs[1], inputs[0].dims.size());
  if (!axes.ok()) return axes.status();
  return reduce_sum(ctx, inputs[0], *axes, static_cast<const SumAttrs*>(state)->keep_dims);
}

// BiasAdd and BiasAddGrad with the channels last (data_format NHWC, the
// default; NCHW is refused when the op is built, by name).
void* bias_create(TF_OpKernelConstruction* ctx) {
  TF_Status* status = TF_NewStatus();
  const std::string format = string_attr(ctx, "data_format", status);
  if (!format.empty() && format != "NHWC") {
    TF_SetStatus(
        status, TF_INVALID_ARGUMENT,
        ("bias on SYSTOLE: data_format '" + format + "': only NHWC (channels last) runs on SYSTOLE").c_str());
    TF_OpKernelConstruction_Failure(ctx, status);
  }
  TF_DeleteStatus(status);
  return nullptr;
}

// value + bias over the last axis: Add's fp32 additions.
Status bias_add(const void* state, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  const std::vector<int64_t>&value = inputs[0].dims, &bias = inputs[1].dims;
  if (value.empty() || bias.size() != 1 || bias[0] != value.back())
    return invalid("a bias of shape " + shape_text(bias) + " for a value of shape " + shape_text(value) +
                   " (expected one per channel, the last axis)");
  return elementwise<plus>(state, ctx, inputs);
}

// A bias's gradient: the output gradient summed over every axis but the
// last, on the unit's vector engine in the array's K order (as Sum).
Status bias_add_grad(const void*, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  Input& dy = inputs[0];
  if (dy.dims.empty()) return invalid("the output gradient is a scalar; expected channels in its last axis");
  std::vector<bool> reduced(dy.dims.size(), true);
  reduced.back() = false;
  return reduce_sum(ctx, dy, reduced, false);
}

// ---- elementwise kernels, on the host over the units' memory ----

// Neg: -x, the sign flipped (NaN's too).
Status neg(const void*, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  for (float& v : inputs[0].values) v = -v;
  return set_output(ctx, inputs[0].dims, inputs[0].values, {0});
}

// SparseSoftmaxCrossEntropyWithLogits, row by row of the logits z
// [batch, classes] with TensorFlow's formula, in fp32: s = z - max(z),
// loss = log(sum exp(s)) - s[label], backprop = exp(s) / sum - [j ==
// label], the sum in class order. The labels (int32 or int64) stay in
// host memory; one outside [0, classes) is an error naming its row, as on
// TensorFlow's CPU.
Status sparse_softmax_cross_entropy(const void*, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  Input &logits = inputs[0], &labels = inputs[1];
  if (logits.dims.size() != 2)
    return invalid("logits must be [batch, classes], got " + shape_text(logits.dims));
  if (labels.dims.size() != 1 || labels.dims[0] != logits.dims[0])
    return invalid("labels " + shape_text(labels.dims) + " for logits " + shape_text(logits.dims));
  if (labels.type != TF_INT32 && labels.type != TF_INT64)
    return invalid("labels must be int32 or int64, got type " + std::to_string(int(labels.type)));
  const int64_t batch = logits.dims[0], classes = logits.dims[1];
  if (batch > 0 && classes == 0) return invalid("logits " + shape_text(logits.dims) + " have no classes");
  SYSTOLE_RETURN_IF_ERROR(read_values(logits));
  std::vector<float> loss(static_cast<std::size_t>(batch)),
      backprop(static_cast<std::size_t>(batch * classes));
  for (int64_t r = 0; r < batch; ++r) {
    const int64_t label = labels.type == TF_INT32 ? int64_t(static_cast<const int32_t*>(labels.data)[r])
                                                  : static_cast<const int64_t*>(labels.data)[r];
    if (label < 0 || label >= classes)
      return invalid("labels[" + std::to_string(r) + "] is " + std::to_string(label) +
                     ", outside the valid range of [0, " + std::to_string(classes) + ")");
    const float* z = logits.values.data() + r * classes;
    float* g = backprop.data() + r * classes;
    const float top = *std::max_element(z, z + classes);
    float sum = 0.0f;
    for (int64_t j = 0; j < classes; ++j) sum += g[j] = std::exp(z[j] - top);
    for (int64_t j = 0; j < classes; ++j) g[j] = g[j] / sum - (j == label ? 1.0f : 0.0f);
    loss[std::size_t(r)] = std::log(sum) - (z[label] - top);
  }
  SYSTOLE_RETURN_IF_ERROR(set_output(ctx, {batch}, loss, {}, 0));
  return set_output(ctx, {batch, classes}, backprop, {}, 1);
}

// Relu: max(x, 0) as x > 0 ? x : +0; ReluGrad: dy where x > 0, else +0 (the
// bits of the host's layers and the vector engine's kReluGrad).
Status relu(const void*, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  for (float& v : inputs[0].values) v = v > 0 ? v : 0.0f;
  return set_output(ctx, inputs[0].dims, inputs[0].values, {0});
}
Status relu_grad(const void*, TF_OpKernelContext* ctx, std::vector<Input>& inputs) {
  Input &dy = inputs[0], &x = inputs[1];
  if (dy.dims != x.dims)
    return invalid("gradients " + shape_text(dy.dims) + " and features " + shape_text(x.dims));
  for (std::size_t i = 0; i < dy.values.size(); ++i) dy.values[i] = x.values[i] > 0 ? dy.values[i] : 0.0f;
  return set_output(ctx, dy.dims, dy.values, {0});
}

void* no_state(TF_OpKernelConstruction*) { return nullptr; }
void no_delete(void*) {}

// `host_input`: an input TensorFlow keeps in host memory (an axis list).
void register_kernel(const char* op, const char* type_attr, void* (*create)(TF_OpKernelConstruction*),
                     void (*compute)(void*, TF_OpKernelContext*), void (*destroy)(void*),
                     const char* host_input = nullptr) {
  TF_Status* status = TF_NewStatus();
  TF_KernelBuilder* builder = TF_NewKernelBuilder(op, kDeviceType, create, compute, destroy);
  TF_KernelBuilder_TypeConstraint(builder, type_attr, TF_FLOAT, status);
  if (host_input) TF_KernelBuilder_HostMemory(builder, host_input);
  if (TF_GetCode(status) == TF_OK)
    TF_RegisterKernelBuilder((std::string(op) + "OnSystole").c_str(), builder, status);
  if (TF_GetCode(status) != TF_OK)
    std::fprintf(stderr, "Systole: registering %s failed: %s\n", op, TF_Message(status));
  TF_DeleteStatus(status);
}

}  // namespace
}  // namespace systole_tf

using namespace systole_tf;

extern "C" {

void TF_InitKernel() {
  if (!card) return;  // SE_InitPlugin failed: no devices to run on
  register_kernel("MatMul", "T", matmul_create, compute<kMatMul, 2, matmul, true>, matmul_delete);
  register_kernel("AddV2", "T", no_state, compute<kAdd, 2, elementwise<plus>>, no_delete);
  register_kernel("Add", "T", no_state, compute<kAdd, 2, elementwise<plus>>, no_delete);
  register_kernel("Sub", "T", no_state, compute<kSub, 2, elementwise<minus>>, no_delete);
  register_kernel("Mul", "T", no_state, compute<kMul, 2, elementwise<times>>, no_delete);
  register_kernel("DivNoNan", "T", no_state, compute<kDivNoNan, 2, elementwise<divide_no_nan>>, no_delete);
  register_kernel("Neg", "T", no_state, compute<kNeg, 1, neg>, no_delete);
  register_kernel("SparseSoftmaxCrossEntropyWithLogits", "T", no_state,
                  compute<kSparseSoftmaxCrossEntropy, 2, sparse_softmax_cross_entropy, true>, no_delete,
                  "labels");
  register_kernel("Relu", "T", no_state, compute<kRelu, 1, relu>, no_delete);
  register_kernel("ReluGrad", "T", no_state, compute<kReluGrad, 2, relu_grad>, no_delete);
  register_kernel("Sum", "T", sum_create, compute<kSum, 2, sum, true>, sum_delete, "reduction_indices");
  register_kernel("BiasAdd", "T", bias_create, compute<kBiasAdd, 2, bias_add>, no_delete);
  register_kernel("BiasAddGrad", "T", bias_create, compute<kBiasAddGrad, 1, bias_add_grad, true>, no_delete);
  register_kernel("Conv2D", "T", conv_create, compute<kConv2D, 2, conv2d, true>, conv_delete);
  register_kernel("Conv2DBackpropInput", "T", conv_create,
                  compute<kConv2DBackpropInput, 3, conv2d_backprop_input, true>, conv_delete, "input_sizes");
  register_kernel("Conv2DBackpropFilter", "T", conv_create,
                  compute<kConv2DBackpropFilter, 3, conv2d_backprop_filter, true>, conv_delete,
                  "filter_sizes");
}

}  // extern "C"
