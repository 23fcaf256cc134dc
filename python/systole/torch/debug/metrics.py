# SPDX-License-Identifier: Apache-2.0
"""torch_xla.debug.metrics (import ... as met): what this process's replica
sent to the array, from the device's own counters.

Counters (counter_names(), counter_value(name)):
  ArrayLaunches        kernel launches
  ArrayDescriptors     descriptors the kernel completed
  ArrayMacs            multiply-accumulates
  ArrayBusyCycles      cycles the array computed; ArrayStallCycles waited
  ArrayDmaReadBytes    bytes the kernel's DMA read; ArrayDmaWriteBytes wrote
  ArrayProducts        products asked for by PyTorch operations
Metrics (metric_names(), metric_data(name)): ArrayProductTime, the seconds
each kind of product took (linear, linear_backward, matmul,
matmul_backward), host time included, in torch_xla's (samples, total,
[(time, value), ...]) form with the totals only.
"""

from systole.torch import array_ops

_DEVICE_COUNTERS = {
    "ArrayLaunches": "launches",
    "ArrayDescriptors": "descriptors",
    "ArrayMacs": "macs",
    "ArrayBusyCycles": "busy_cycles",
    "ArrayStallCycles": "stall_cycles",
    "ArrayDmaReadBytes": "dma_read_bytes",
    "ArrayDmaWriteBytes": "dma_write_bytes",
}
_baseline = {}


def _device_counters():
    device = array_ops.opened_device()
    totals = dict.fromkeys(_DEVICE_COUNTERS.values(), 0)
    if device is not None:
        for unit in range(device.info["compute_units"]):
            for key, value in device.counters(unit=unit).items():
                if key in totals:
                    totals[key] += value
    return totals


def _counters():
    device = _device_counters()
    values = {name: device[key] for name, key in _DEVICE_COUNTERS.items()}
    values["ArrayProducts"] = sum(array_ops.products.values())
    return {name: value - _baseline.get(name, 0) for name, value in values.items()}


def counter_names():
    """The counters' names."""
    return list(_counters())


def counter_value(name):
    """A counter's value since the last clear (None for an unknown name, as
    torch_xla gives)."""
    return _counters().get(name)


def metric_names():
    """The metrics' names: ArrayProductTime/<kind> for each kind of product
    sent so far."""
    return [f"ArrayProductTime/{kind}" for kind in sorted(array_ops.products)]


def metric_data(name):
    """(samples, total seconds, []) for a metric, None for an unknown one."""
    kind = name.partition("/")[2]
    if not name.startswith("ArrayProductTime/") or kind not in array_ops.products:
        return None
    return array_ops.products[kind], array_ops.product_seconds[kind], []


def metrics_report():
    """Every metric and counter as text, in torch_xla's layout."""
    lines = []
    for name in metric_names():
        samples, total, _ = metric_data(name)
        lines += [f"Metric: {name}", f"  TotalSamples: {samples}", f"  Accumulator: {total:.6f}s",
                  f"  Mean: {total / samples * 1e6:.3f}us"]
    for name, value in _counters().items():
        lines += [f"Counter: {name}", f"  Value: {value}"]
    return "\n".join(lines) + "\n"


def short_metrics_report(counter_names=None, metric_names=None):
    """The report of the named counters and metrics only (all by default)."""
    wanted = set(counter_names or []) | set(metric_names or [])
    if not wanted:
        return metrics_report()
    blocks = metrics_report().split("\n")
    out, keep = [], False
    for line in blocks:
        if line.startswith(("Metric: ", "Counter: ")):
            keep = line.split(": ", 1)[1] in wanted
        if keep and line:
            out.append(line)
    return "\n".join(out) + "\n"


def executed_fallback_ops():
    """Operations torch_xla ran on the CPU for want of a device kernel: on
    the array only products run, everything else runs on the host by
    design, so none is a fallback."""
    return []


def clear_counters():
    """Counts from zero again."""
    _baseline.update({name: value + _baseline.get(name, 0) for name, value in _counters().items()})


def clear_metrics():
    """Forgets the metrics' samples."""
    array_ops.products.clear()
    array_ops.product_seconds.clear()
    _baseline.pop("ArrayProducts", None)


def clear_all():
    """clear_counters and clear_metrics."""
    clear_metrics()
    clear_counters()
