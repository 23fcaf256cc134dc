# SPDX-License-Identifier: Apache-2.0
"""torch_xla's API on systole.torch: a torch_xla training script in both of
the shapes torch_xla's MNIST test has had (xla_mnist_job.py) against plain
PyTorch on the same data; the collectives' bits; a collective that a
replica cannot reach; xm.save by the master alone; and the smaller names
(metrics, step closures, RateTracker, utils, the names that mean nothing
here)."""

import os
import re
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np
import torch
import torch.nn as nn

import systole.torch as torch_xla
import systole.torch.core.xla_model as xm
import systole.torch.debug.metrics as met
import systole.torch.distributed.xla_multiprocessing as xmp
import systole.torch.utils.utils as xu
import xla_mnist_job
from systole.torch import _job, runtime as xr

SEED = int(os.environ.get("SYSTOLE_TEST_SEED", "20261203"))
print(f"seed {SEED} (SYSTOLE_TEST_SEED)")
HERE = os.path.dirname(os.path.abspath(__file__))


def run_script(*args, env=None):
    result = subprocess.run([sys.executable, os.path.join(HERE, "xla_mnist_job.py"), *args], capture_output=True,
                            text=True, timeout=600, env={**os.environ, **(env or {})})
    if result.returncode != 0:
        raise AssertionError(f"xla_mnist_job.py {' '.join(args)} exited {result.returncode}:\n{result.stderr[-3000:]}")
    accuracy = float(re.search(r"Max Accuracy: ([0-9.]+)%", result.stdout).group(1))
    return accuracy, result


def plain_pytorch_accuracy(replicas, epochs=2):
    """xla_mnist_job's training in plain PyTorch (fp32, no array): one model
    per replica, each on its shard; their gradients averaged in replica
    order; the test accuracy averaged over the replicas' shards."""
    models = []
    for _ in range(replicas):
        torch.manual_seed(1)
        models.append(xla_mnist_job.MNIST())
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.01 * replicas, momentum=0.5) for m in models]
    shards = [xla_mnist_job.loaders(replicas, r, fake=False) for r in range(replicas)]
    loss_fn = nn.NLLLoss()
    best = 0.0
    for _ in range(epochs):
        for m in models:
            m.train()
        for batches in zip(*[iter(train) for train, _ in shards]):
            grads = []
            for m, opt, (x, y) in zip(models, optimizers, batches):
                opt.zero_grad()
                loss_fn(m(x), y).backward()
                grads.append([p.grad.clone() for p in m.parameters()])
            mean = []
            for i in range(len(grads[0])):
                total = grads[0][i].clone()
                for g in grads[1:]:
                    total += g[i]
                mean.append(total * (1.0 / replicas))
            for m, opt in zip(models, optimizers):
                for p, g in zip(m.parameters(), mean):
                    p.grad.copy_(g)
                opt.step()
        accuracies = []
        with torch.no_grad():
            for m, (_, test) in zip(models, shards):
                m.eval()
                correct = total = 0
                for x, y in test:
                    correct += (m(x).argmax(1) == y).sum().item()
                    total += len(y)
                accuracies.append(100.0 * correct / total)
        best = max(best, float(np.mean(accuracies)))
    return best


class TorchXlaScriptTest(unittest.TestCase):

    def test_both_shapes_of_the_mnist_script_reach_plain_pytorchs_accuracy(self):
        with tempfile.TemporaryDirectory() as tmp:
            results = {}
            for form in ("2023", "current"):
                out = os.path.join(tmp, f"{form}.pt")
                accuracy, result = run_script("--form", form, "--out", out)
                self.assertIn("the file is written, but torch_xla would wait here", result.stderr)
                self.assertIn("Counter: ArrayMacs", result.stdout)
                results[form] = (accuracy, torch.load(out))
        plain = plain_pytorch_accuracy(2)
        print(f"max accuracy: 2023 {results['2023'][0]:.2f} %, current {results['current'][0]:.2f} %, "
              f"plain PyTorch {plain:.2f} %")
        for form, (accuracy, _) in results.items():
            self.assertLess(abs(accuracy - plain), 1.0, form)
        old, new = results["2023"][1], results["current"][1]
        self.assertEqual(list(old), list(new))
        for name in old:  # the two shapes name the same operations: the same bits
            self.assertTrue(torch.equal(old[name], new[name]), name)

    def test_ddp_through_the_xla_backend_and_fake_data(self):
        with tempfile.TemporaryDirectory() as tmp:
            accuracy, _ = run_script("--form", "2023", "--ddp", "--out", os.path.join(tmp, "m.pt"))
            self.assertGreater(accuracy, 55.0)
            accuracy, _ = run_script("--form", "current", "--fake_data", "--num_epochs", "1", "--out",
                                     os.path.join(tmp, "f.pt"))
            self.assertEqual(accuracy, 100.0)  # constant images of one label

    def test_xla_device_puts_a_scripts_products_on_the_array(self):
        code = ("import torch, systole.torch.core.xla_model as xm, systole.torch.debug.metrics as met\n"
                "torch.nn.Linear(3, 2)(torch.ones(4, 3)); before = met.counter_value('ArrayProducts')\n"
                "model = torch.nn.Linear(3, 2).to(xm.xla_device()); model(torch.ones(4, 3)).sum().backward()\n"
                "print(before, met.counter_value('ArrayProducts'), met.counter_value('ArrayLaunches') > 0)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        self.assertEqual(out.split(), ["0", "2", "True"])  # forward, and dW (x needs no gradient)


def _sum_job(index, tensors, path):
    mine = tensors[index].clone()
    total = xm.all_reduce(xm.REDUCE_SUM, mine, scale=0.5)
    listed = [tensors[index][:5].clone(), tensors[index][5:].clone()]
    xm.all_reduce(xm.REDUCE_MAX, listed)
    gathered = xm.all_gather(tensors[index][:3].reshape(1, 3), dim=0)
    payloads = xm.rendezvous("payloads", f"replica {index}".encode())
    mean = xm.mesh_reduce("mean", float(index), np.mean)
    empty = xm.all_reduce(xm.REDUCE_SUM, torch.ones(0))
    keys = []  # the job's store after 40 and after 80 more collectives
    for round in range(80):
        xm.all_reduce(xm.REDUCE_SUM, torch.ones(3))
        xm.rendezvous(f"round {round}")
        if round in (39, 79):
            keys.append(_job.current().store.num_keys())
    if xm.is_master_ordinal():
        torch.save({"sum": total, "max": torch.cat(listed), "gathered": gathered, "payloads": payloads,
                    "mean": mean, "empty": tuple(empty.shape), "keys": keys,
                    "world": (xr.world_size(), xr.global_ordinal(), xm.xrt_world_size())}, path)
    xm.rendezvous("saved")


def _returns_early(index):
    if index == 1:
        return
    xm.all_reduce(xm.REDUCE_SUM, torch.ones(7))


def _stays_away(index):
    if index == 1:
        time.sleep(4)
        return
    xm.mesh_reduce("accuracy", 1.0, np.mean)


def _different_collectives(index):
    xm.rendezvous("epoch end" if index == 0 else "checkpoint")


def _different_sizes(index):
    xm.all_reduce(xm.REDUCE_SUM, torch.ones(5 + index))


def _shared_memory_of(index, path):
    xm.all_reduce(xm.REDUCE_SUM, torch.ones(3))
    if index == 0:
        with open(path, "w") as file:
            file.write(_job.current()._shared)


class CollectiveTest(unittest.TestCase):

    def test_collectives_add_in_replica_order(self):
        generator = torch.Generator().manual_seed(SEED)
        # Terms of every magnitude, so that the order of the additions shows in the bits.
        tensors = [torch.randn(37, generator=generator) * 10.0**torch.randint(-6, 7, (37,), generator=generator)
                   for _ in range(3)]
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.pt")
            xmp.spawn(_sum_job, args=(tensors, path), nprocs=3)
            got = torch.load(path)
        expected = ((tensors[0] + tensors[1]) + tensors[2]) * 0.5
        self.assertTrue(np.array_equal(got["sum"].numpy().view(np.uint32), expected.numpy().view(np.uint32)))
        self.assertTrue(torch.equal(got["max"], torch.maximum(torch.maximum(tensors[0], tensors[1]), tensors[2])))
        self.assertTrue(torch.equal(got["gathered"], torch.stack([t[:3] for t in tensors])))
        self.assertEqual(got["payloads"], [b"replica 0", b"replica 1", b"replica 2"])
        self.assertEqual(got["mean"], 1.0)
        self.assertEqual(got["empty"], (0,))
        self.assertEqual(got["keys"][1], got["keys"][0])  # a replica's keys of collective s are those of s + 2
        self.assertEqual(got["world"], (3, 0, 3))

    def _fails_with(self, fn, pattern, timeout="30"):
        os.environ["SYSTOLE_COLLECTIVE_TIMEOUT"] = timeout
        try:
            start = time.monotonic()
            with self.assertRaises(Exception) as caught:
                xmp.spawn(fn, nprocs=2)
            self.assertRegex(str(caught.exception), pattern)
            return time.monotonic() - start
        finally:
            del os.environ["SYSTOLE_COLLECTIVE_TIMEOUT"]

    def test_a_collective_a_replica_cannot_reach_names_it(self):
        self._fails_with(_returns_early, r"xm.all_reduce \(collective #1\) on replica 0 of 2 could not complete: "
                         r"replica 1 returned from its function")
        seconds = self._fails_with(_stays_away, r"mesh_reduce 'accuracy' \(collective #1\) on replica 0 of 2 could "
                                   r"not complete after 1 s: replica 1 is still running", timeout="1")
        self.assertLess(seconds, 30)
        self._fails_with(_different_collectives, r"replica \d is at \"rendezvous '(epoch end|checkpoint)'\" where "
                         r"replica \d is at \"rendezvous '(epoch end|checkpoint)'\"")
        self._fails_with(_different_sizes, r"replica \d is at 'xm.all_reduce' with torch.float32 x [56] where replica "
                         r"\d is at 'xm.all_reduce' with torch.float32 x [56]")

    def test_shared_memory_is_gone_after_the_job(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "shared")
            xmp.spawn(_shared_memory_of, args=(path,), nprocs=2)
            with open(path) as file:
                shared = file.read()
        self.assertTrue(os.path.basename(shared).startswith("systole-job-"), shared)
        self.assertFalse(os.path.exists(shared), shared)

    def test_bad_arguments_are_named(self):
        for error, pattern, call in [
                (ValueError, "reduce_type must be one of", lambda: xm.all_reduce("average", torch.ones(2))),
                (TypeError, "payload must be bytes", lambda: xm.rendezvous("x", "text")),
                (NotImplementedError, "every replica takes part", lambda: xm.rendezvous("x", b"", [0])),
                (ValueError, "groups must list every replica", lambda: xm.all_reduce("sum", torch.ones(2),
                                                                                      groups=[[0, 1]]))]:
            with self.subTest(pattern):
                with self.assertRaisesRegex(error, pattern):
                    call()
        os.environ["SYSTOLE_NUM_DEVICES"] = "zero"
        try:
            with self.assertRaisesRegex(ValueError, "SYSTOLE_NUM_DEVICES: expected a count >= 1, got 'zero'"):
                torch_xla.launch(print)
        finally:
            del os.environ["SYSTOLE_NUM_DEVICES"]


class NamesTest(unittest.TestCase):

    def test_outside_a_job(self):
        self.assertEqual((xr.world_size(), xr.global_ordinal(), xr.local_ordinal()), (1, 0, 0))
        self.assertEqual((xr.device_type(), xr.using_pjrt(), xr.is_spmd()), ("SYSTOLE", True, False))
        self.assertEqual(xm.get_ordinal(defval=-1), -1)
        self.assertEqual(xm.xrt_world_size(defval=4), 4)
        t = torch.arange(6.0)
        self.assertTrue(torch.equal(xm.all_reduce(xm.REDUCE_SUM, t, scale=2.0), t * 2))
        self.assertTrue(torch.equal(xm.all_gather(t), t))
        self.assertEqual(xm.mesh_reduce("m", 3, sum), 3)
        self.assertEqual(xm.rendezvous("r", b"p"), [b"p"])

    def test_step_closures_run_at_the_end_of_the_step_in_order(self):
        ran = []
        xm.add_step_closure(ran.append, args=(1,))
        xm.add_step_closure(ran.append, args=(2,), run_async=True)
        self.assertEqual(ran, [])
        torch_xla.sync()
        self.assertEqual(ran, [1, 2])
        with torch_xla.step():
            xm.add_step_closure(ran.append, args=(3,))
        self.assertEqual(ran, [1, 2, 3])

    def test_rate_tracker_sample_generator_and_getenv_as(self):
        tracker = xm.RateTracker()
        tracker.add(100)
        time.sleep(0.05)
        self.assertGreater(tracker.rate(), 0)
        self.assertGreater(tracker.global_rate(), 0)
        batch = (torch.zeros(2, 3), torch.zeros(2))
        generated = list(xu.SampleGenerator(batch, sample_count=3))
        self.assertEqual(len(generated), 3)
        self.assertIs(generated[0], batch)
        os.environ["SYSTOLE_TEST_FLAG"] = "yes"
        try:
            self.assertIs(xu.getenv_as("SYSTOLE_TEST_FLAG", bool), True)
            with self.assertRaisesRegex(ValueError, "SYSTOLE_TEST_FLAG='yes' is not a int"):
                xu.getenv_as("SYSTOLE_TEST_FLAG", int)
        finally:
            del os.environ["SYSTOLE_TEST_FLAG"]
        self.assertEqual(xu.getenv_as("SYSTOLE_TEST_UNSET", int, 7), 7)

    def test_metrics_count_what_the_array_did(self):
        met.clear_all()
        self.assertEqual(met.counter_value("ArrayProducts"), 0)
        torch_xla.linear(torch.ones(5, 3), torch.ones(4, 3))
        self.assertEqual(met.counter_value("ArrayProducts"), 1)
        self.assertEqual(met.counter_value("ArrayMacs"), 5 * 4 * 3)
        self.assertEqual(met.metric_names(), ["ArrayProductTime/linear"])
        self.assertEqual(met.metric_data("ArrayProductTime/linear")[0], 1)
        self.assertIn("Counter: ArrayLaunches\n  Value: 1", met.metrics_report())
        self.assertEqual(met.short_metrics_report(counter_names=["ArrayMacs"]), "Counter: ArrayMacs\n  Value: 60\n")
        self.assertIsNone(met.counter_value("NoSuchCounter"))

    def test_names_that_mean_nothing_here_say_so(self):
        for module, name in [(xm, "all_to_all"), (xm, "mark_sharding"), (torch_xla, "compile"), (xr, "use_spmd")]:
            with self.subTest(name):
                with self.assertRaisesRegex(NotImplementedError, f"{name} is not supported by systole.torch: "):
                    getattr(module, name)
        with self.assertRaisesRegex(AttributeError, "has no attribute 'optimiser_step'"):
            xm.optimiser_step  # noqa: B018
        with self.assertRaisesRegex(ImportError, "spmd is not supported by systole.torch"):
            import systole.torch.distributed.spmd  # noqa: F401


if __name__ == "__main__":
    unittest.main()
