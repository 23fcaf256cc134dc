# SPDX-License-Identifier: Apache-2.0
"""The array's products as PyTorch autograd functions, and accelerate().

Each product is a call of systole.Device.matmul on float32 host tensors
(shared with NumPy, no copy): operands rounded to bf16, fp32 accumulation
in the array's K order. The forward and backward products of a linear
layer are the C++ runtime's dense layer's, operand for operand:

    forward   y  = x W^T + b       (m = batch, k = inputs, n = units)
    backward  dW = dy^T x          (k = batch)
              db = the sums of dy's columns, in fp32 (systole.sum_rows,
                   in the array's K tiles)
              dx = dy W            (k = units)

so their bits equal the C++ runtime's for the same operands.
"""

import contextlib
import functools
import os
import threading
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

import systole

_device_lock = threading.Lock()
_device = None
_device_options = {"backend": "sw_emu"}


def configure(backend="sw_emu", **options):
    """How this process opens its array (before the first product):
    systole.Device's backend and options, e.g. configure("perf",
    board="u55c", array=(32, 32)). The default is sw_emu, one 128x128 unit,
    with this process's share of the cores."""
    global _device
    with _device_lock:
        if _device is not None:
            raise RuntimeError("configure: this process's array is already open (configure before the first product)")
        _device_options.clear()
        _device_options.update(options, backend=backend)


def array_device():
    """This process's systole.Device, opened on first use."""
    global _device
    with _device_lock:
        if _device is None:
            options = dict(_device_options)
            backend = options.pop("backend")
            if backend == "sw_emu" and "threads" not in options:
                processes = int(os.environ.get("SYSTOLE_LOCAL_PROCESSES", "1"))
                options["threads"] = max(1, (os.cpu_count() or 1) // max(1, processes))
            _device = systole.Device(backend, **options)
        return _device


def opened_device():
    """This process's systole.Device if it is open, else None."""
    with _device_lock:
        return _device


def _array(tensor):
    """A float32 CPU tensor's NumPy view (no copy)."""
    return tensor.detach().numpy()


# What this process sent to the array (torch_xla.debug.metrics reads it):
# products and the time they took, by the operation that asked for them.
products = {}
product_seconds = {}


def _count(kind, seconds):
    products[kind] = products.get(kind, 0) + 1
    product_seconds[kind] = product_seconds.get(kind, 0.0) + seconds


def _product(a, b, bias=None, transpose_a=False, transpose_b=False, kind="matmul"):
    start = time.perf_counter()
    out = array_device().matmul(_array(a), _array(b), None if bias is None else _array(bias),
                                False, transpose_a, transpose_b)
    _count(kind, time.perf_counter() - start)
    return torch.from_numpy(out)


class _Linear(torch.autograd.Function):
    """y = x W^T + b over 2-D x, forward and backward on the array; the
    bias's gradient is an fp32 sum, as the C++ runtime's."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return _product(x, weight, bias, transpose_b=True, kind="linear")

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        dy = dy.contiguous()
        dx = dw = db = None
        if ctx.needs_input_grad[1]:
            dw = _product(dy, x, transpose_a=True, kind="linear_backward")
        if ctx.has_bias and ctx.needs_input_grad[2]:
            db = torch.from_numpy(systole.sum_rows(_array(dy), array_device().info["array"][0]))
        if ctx.needs_input_grad[0]:
            dx = _product(dy, weight, kind="linear_backward")
        return dx, dw, db


class _Matmul(torch.autograd.Function):
    """c = a b over 2-D operands: dA = dC B^T, dB = A^T dC."""

    @staticmethod
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return _product(a, b)

    @staticmethod
    def backward(ctx, dc):
        a, b = ctx.saved_tensors
        dc = dc.contiguous()
        da = _product(dc, b, transpose_b=True, kind="matmul_backward") if ctx.needs_input_grad[0] else None
        db = _product(a, dc, transpose_a=True, kind="matmul_backward") if ctx.needs_input_grad[1] else None
        return da, db


def _on_array(*tensors):
    """Whether the array can take these operands: float32 host tensors with
    no empty dimension (anything else stays with PyTorch)."""
    return all(t is not None and isinstance(t, torch.Tensor) and t.dtype == torch.float32 and t.device.type == "cpu"
               and t.numel() > 0 for t in tensors)


def linear(x, weight, bias=None):
    """F.linear on the array: x [..., in], weight [out, in], bias [out]."""
    if not _on_array(x, weight) or (bias is not None and not _on_array(bias)) or x.dim() < 1 or weight.dim() != 2:
        return F.linear(x, weight, bias)
    rows = x.reshape(-1, x.shape[-1])
    y = _Linear.apply(rows, weight, bias)
    return y.reshape(*x.shape[:-1], weight.shape[0])


def matmul(a, b):
    """torch.matmul on the array for 2-D @ 2-D, N-D @ 2-D and batched 3-D @
    3-D operands of the same batch; other shapes (vectors, broadcast
    batches) stay with PyTorch."""
    if not _on_array(a, b) or a.dim() < 2 or b.dim() < 2:
        return torch.matmul(a, b)
    if b.dim() == 2:
        rows = a.reshape(-1, a.shape[-1])
        return _Matmul.apply(rows, b).reshape(*a.shape[:-1], b.shape[-1])
    if a.dim() == 3 and b.dim() == 3 and a.shape[0] == b.shape[0]:
        return torch.stack([_Matmul.apply(a[i], b[i]) for i in range(a.shape[0])])
    return torch.matmul(a, b)


def _pair(value):
    return tuple(value) if isinstance(value, (tuple, list)) else (value, value)


def conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """F.conv2d lowered as the C++ runtime lowers it: the patches (im2col,
    here F.unfold, K ordered channel, row, column) times the filters as a
    product on the array; the patch gather and its gradient (col2im) stay on
    the host. Grouped and string-padded convolutions stay with PyTorch."""
    if (groups != 1 or isinstance(padding, str) or not _on_array(x, weight) or x.dim() != 4
            or (bias is not None and not _on_array(bias))):
        return F.conv2d(x, weight, bias, stride, padding, dilation, groups)
    n, _, height, width = x.shape
    filters, _, kh, kw = weight.shape
    stride, padding, dilation = _pair(stride), _pair(padding), _pair(dilation)
    out_h = (height + 2 * padding[0] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    out_w = (width + 2 * padding[1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    patches = F.unfold(x, (kh, kw), dilation=dilation, padding=padding, stride=stride)  # [N, C*kh*kw, L]
    rows = patches.transpose(1, 2).reshape(n * out_h * out_w, -1)
    y = _Linear.apply(rows, weight.reshape(filters, -1), bias)  # [N*L, filters]
    return y.reshape(n, out_h * out_w, filters).transpose(1, 2).reshape(n, filters, out_h, out_w)


class _ArrayMode(TorchFunctionMode):
    """While active, the products of every torch call go to the array."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        handler = _HANDLERS.get(func)
        if handler is not None:
            return handler(*args, **kwargs)
        return func(*args, **kwargs)


_HANDLERS = {
    F.linear: linear,
    F.conv2d: conv2d,
    torch.matmul: matmul,
    torch.Tensor.matmul: matmul,
    torch.Tensor.__matmul__: matmul,
    torch.bmm: matmul,
    torch.Tensor.bmm: matmul,
}


_always = threading.local()


def _array_wanted():
    """SYSTOLE_ARRAY=off leaves every product to PyTorch (the same script in
    plain PyTorch, for comparisons); on, the default, sends them to the
    array."""
    value = os.environ.get("SYSTOLE_ARRAY", "on")
    if value not in ("on", "off"):
        raise ValueError(f"SYSTOLE_ARRAY: expected on or off, got {value!r}")
    return value == "on"


def _mode_is_on():
    stack = torch.overrides._get_current_function_mode_stack()
    return any(isinstance(mode, _ArrayMode) for mode in stack)


@contextlib.contextmanager
def array_mode():
    """Within it, this thread's float32 linear layers, convolutions and
    matrix products run on the array."""
    if _mode_is_on() or not _array_wanted():
        yield
        return
    with _ArrayMode():
        yield


def enable_array_mode():
    """From now on, this thread's float32 linear layers, convolutions and
    matrix products run on the array (xla_device() and torch_xla.device()
    call it, for scripts that run outside spawn and launch)."""
    if not _mode_is_on() and _array_wanted():
        mode = _ArrayMode()
        mode.__enter__()
        _always.mode = mode  # held for the thread's life


def _forward_on_array(module, *args, **kwargs):
    with array_mode():
        return type(module).forward(module, *args, **kwargs)


def accelerate(module):
    """Runs `module`'s products on the array from now on (its forward and,
    through autograd, its backward), in place; returns the module. A copy
    of the module (copy.deepcopy, pickling) stays accelerated.

    In a spawn()ed job the master's parameters and buffers are broadcast to
    every replica first (torch_xla's broadcast_master_param), so that the
    replicas start alike even if the script seeds them differently."""
    if getattr(module, "_systole_accelerated", False) or not _array_wanted():
        return module
    from systole.torch.core import xla_model
    xla_model.broadcast_master_state(module)
    # A partial of the module rather than a closure over its bound forward:
    # deepcopy then binds the copy to the copied module.
    module.forward = functools.partial(_forward_on_array, module)
    module._systole_accelerated = True
    return module
