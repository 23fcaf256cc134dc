# SPDX-License-Identifier: Apache-2.0
"""torch_xla.test.test_utils (import ... as test_utils): the progress lines
and TensorBoard summaries torch_xla's training scripts write."""

import time

from systole.torch.core import xla_model as xm
from systole.torch.debug import metrics as met


def now(format="%H:%M:%S"):
    """The time of day, as the scripts print it."""
    return time.strftime(format)


def _device_spec(device):
    return f"{device}/{xm.get_ordinal()}"


def print_training_update(device, step, loss, rate, global_rate, epoch=None, summary_writer=None):
    """One line of training progress (on every replica, flushed)."""
    update = [f"Training Device={_device_spec(device)}", f"Epoch={epoch}" if epoch is not None else None,
              f"Step={step}", f"Loss={loss:.5f}", f"Rate={rate:.2f}", f"GlobalRate={global_rate:.2f}",
              f"Time={now()}"]
    print("|", " ".join(item for item in update if item), flush=True)
    if summary_writer is not None:
        write_to_summary(summary_writer, step, {"loss": loss, "examples/sec": rate})


def print_test_update(device, accuracy, epoch=None, step=None):
    """One line of test progress (on every replica, flushed)."""
    update = [f"Test Device={_device_spec(device)}", f"Step={step}" if step is not None else None,
              f"Epoch={epoch}" if epoch is not None else None, f"Accuracy={accuracy:.2f}", f"Time={now()}"]
    print("|", " ".join(item for item in update if item), flush=True)


def get_summary_writer(logdir):
    """A TensorBoard SummaryWriter for `logdir` (on this replica), or None
    without a logdir."""
    if not logdir:
        return None
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError as error:
        raise ImportError(f"test_utils.get_summary_writer({logdir!r}) needs the tensorboard package, which is not "
                          f"installed ({error}); pass logdir=None to write no summaries") from None
    return SummaryWriter(log_dir=logdir)


def write_to_summary(summary_writer, global_step=None, dict_to_write=None, write_xla_metrics=False):
    """The scalars of `dict_to_write`, and with `write_xla_metrics` the
    array's counters, written to `summary_writer` (nothing without one)."""
    if summary_writer is None:
        return
    for name, value in (dict_to_write or {}).items():
        summary_writer.add_scalar(name, value, global_step)
    if write_xla_metrics:
        for name in met.counter_names():
            summary_writer.add_scalar(name, met.counter_value(name), global_step)


def close_summary_writer(summary_writer):
    """Flushes and closes `summary_writer` (if any)."""
    if summary_writer is not None:
        summary_writer.flush()
        summary_writer.close()
