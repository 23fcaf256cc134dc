# SPDX-License-Identifier: Apache-2.0
"""An independent NumPy statement of the array's numerics (hw/spec/NUMERICS.md)
for operands in the normal range: fp32 -> bf16 by round to nearest even,
exact bf16 products, and per output element a column sum of ROWS products
from +0 per K-tile, added to an fp32 accumulator in K order; then bias and
ReLU. Written from the contract, not from the C++ models."""

import numpy as np


def bf16(x):
    """fp32 values rounded to bf16 (returned as fp32), ties to even; zeros
    and subnormals flush to a zero of their sign."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    exponent = (bits >> 23) & 0xFF
    rounded = np.where(exponent == 0, bits & 0x80000000, rounded)
    return rounded.astype(np.uint32).view(np.float32).reshape(np.shape(x))


def gemm(a, b, rows, bias=None, relu=False):
    """C = A B (+ bias) (ReLU) as the array computes it: A is m x k, B k x n
    (fp32; rounded to bf16 here), `rows` the array's row count."""
    a, b = bf16(a), bf16(b)
    m, k = a.shape
    n = b.shape[1]
    acc = np.zeros((m, n), dtype=np.float32)
    for t in range(0, k, rows):
        s = np.zeros((m, n), dtype=np.float32)
        for p in range(t, min(t + rows, k)):
            s = s + np.outer(a[:, p], b[p, :]).astype(np.float32)  # exact: 8-bit significands
        acc = acc + s
    if bias is not None:
        acc = acc + bias.astype(np.float32)
    if relu:
        acc = np.where(acc > 0, acc, np.float32(0)).astype(np.float32)
    return acc


def _add_flushed(s, x):
    """The vector engine's fp32 addition for operands in the normal range
    or zero: IEEE round to nearest even, a sum below 2^-126 flushed to a
    zero of its sign (such sums are exact)."""
    total = (s + x).astype(np.float32)
    tiny = np.abs(total) < np.float32(2.0**-126)
    return np.where(tiny, np.copysign(np.float32(0), total), total).astype(np.float32)


def row_sums(x, tile):
    """A bias's gradient as the runtime sums it: the columns of x's fp32
    rows, from +0 in order within each tile of `tile` rows (the array's
    rows), then the tiles' sums from +0 in order."""
    x = np.asarray(x, dtype=np.float32)
    out = np.zeros(x.shape[1], dtype=np.float32)
    for t in range(0, x.shape[0], tile):
        s = np.zeros(x.shape[1], dtype=np.float32)
        for row in x[t:t + tile]:
            s = _add_flushed(s, row)
        out = _add_flushed(out, s)
    return out
