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
