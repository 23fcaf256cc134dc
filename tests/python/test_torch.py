# SPDX-License-Identifier: Apache-2.0
"""systole.torch: the autograd functions' bits (against the contract's
oracle and the C++ runtime), their gradients against finite differences,
the error bound against PyTorch's fp32, accelerate() on a model, and a
spawned job of SYSTOLE_TEST_REPLICAS replicas (2) against one process
averaging in replica order."""

import os
import tempfile
import unittest

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import oracle
import spawn_job
import xla_mnist_job
import systole
import systole.torch as st
import systole.torch.core.xla_model as xm
import systole.torch.distributed.parallel_loader as pl
import systole.torch.distributed.xla_multiprocessing as xmp

SEED = int(os.environ.get("SYSTOLE_TEST_SEED", "20261126"))
print(f"seed {SEED} (SYSTOLE_TEST_SEED)")
ROWS = spawn_job.ROWS  # a 16x16 array, so that short K spans several tiles
st.configure("sw_emu", array=(ROWS, ROWS), threads=1)


def bits(t):
    return t.detach().numpy().view(np.uint32)


def same_bits(t, expected):
    return tuple(t.shape) == tuple(expected.shape) and np.array_equal(bits(t), np.asarray(expected).view(np.uint32))


def fp32_gemm_bound(a, b):
    """|array - exact| <= this, per element of a @ b (hw/spec/NUMERICS.md,
    "Error against exact arithmetic (a bound)"), plus PyTorch's own fp32 rounding of
    the same sum, so that it bounds |array - torch fp32|."""
    k = a.shape[1]
    u_bf16, u_fp32 = 2.0**-8, 2.0**-24
    gamma = lambda n: n * u_fp32 / (1 - n * u_fp32)  # noqa: E731
    magnitude = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    ours = (2 * u_bf16 + u_bf16**2) + gamma(k + 1) * (1 + u_bf16)**2
    return (ours + gamma(k)) * magnitude


def fp32_sum_bound(x):
    """|sum - exact| <= this, per column of a bias's sum of x's rows
    (NUMERICS.md, "Products and reductions"): each term through at most
    rows + 1 fp32 additions, each rounded or flushed, no bf16 rounding."""
    additions = x.shape[0] + 1
    u_fp32 = 2.0**-24
    gamma = additions * u_fp32 / (1 - additions * u_fp32)
    return gamma * np.abs(x.astype(np.float64)).sum(axis=0) + additions * 2.0**-126


class AutogradTest(unittest.TestCase):
    def setUp(self):
        self.generator = torch.Generator().manual_seed(SEED)

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.generator)

    def test_linear_forward_and_backward_bits(self):
        for batch, inputs, units in [(7, 33, 5), (40, 16, 17), (3, 70, 1)]:
            with self.subTest(batch=batch, inputs=inputs, units=units):
                x = self.randn(batch, inputs).requires_grad_()
                w = self.randn(units, inputs).requires_grad_()
                b = self.randn(units).requires_grad_()
                y = st.linear(x, w, b)
                dy = self.randn(batch, units)
                y.backward(dy)
                xn, wn, dyn = x.detach().numpy(), w.detach().numpy(), dy.numpy()
                self.assertTrue(same_bits(y, oracle.gemm(xn, wn.T, ROWS, b.detach().numpy())))
                self.assertTrue(same_bits(w.grad, oracle.gemm(dyn.T, xn, ROWS)))
                self.assertTrue(same_bits(b.grad, oracle.row_sums(dyn, ROWS)))
                self.assertTrue(same_bits(x.grad, oracle.gemm(dyn, wn, ROWS)))

    def test_linear_forward_equals_the_cpp_runtime(self):
        """An accelerated nn.Linear and the C++ runtime's dense layer (systole.
        Model, the same weights through a safetensors file) give the same bits."""
        layer = nn.Linear(45, 11)
        x = self.randn(19, 45)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "dense.safetensors")
            systole.save_safetensors(path, {"0.weight": layer.weight.detach().numpy(),
                                            "0.bias": layer.bias.detach().numpy()})
            model = systole.Model({"backend": "sw_emu", "devices": 1, "array": f"{ROWS}x{ROWS}",
                                   "model": {"layers": [{"type": "dense", "units": 11}], "classes": 11}})
            model.evaluate(x.numpy(), np.zeros(19, np.int64))  # builds it for 45 inputs
            model.load_weights(path)
            expected = model.predict(x.numpy())
        accelerated = st.accelerate(layer)
        self.assertTrue(same_bits(accelerated(x), expected))

    def test_conv2d_weights_travel_in_torchs_layout(self):
        """An nn.Conv2d's weight [filters, channels, kh, kw] loaded into the
        C++ runtime's conv2d from a safetensors file, and read back with
        get_weights(), both in torch's layout (the runtime keeps it as
        [filters][kh][kw][channels]); its forward pass against the oracle on
        patches in the runtime's K order (row, column, channel), bit for bit."""
        conv = nn.Conv2d(3, 5, (3, 2), stride=(1, 2))
        x = self.randn(4, 3, 7, 6)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "conv.safetensors")
            systole.save_safetensors(path, {"0.weight": conv.weight.detach().numpy(),
                                            "0.bias": conv.bias.detach().numpy()})
            model = systole.Model({"backend": "sw_emu", "devices": 1, "array": f"{ROWS}x{ROWS}",
                                   "model": {"layers": [{"type": "conv2d", "filters": 5, "kernel_size": [3, 2],
                                                         "strides": [1, 2]},
                                                        {"type": "flatten"}],
                                             "classes": 5 * 5 * 3}})
            nhwc = x.permute(0, 2, 3, 1).contiguous().numpy()
            model.evaluate(nhwc, np.zeros(4, np.int64))  # builds it for 7x6x3 inputs
            model.load_weights(path)
            got = model.predict(nhwc)
            self.assertTrue(same_bits(torch.from_numpy(model.get_weights()["0.weight"]), conv.weight.detach()))
        patches = F.unfold(x, (3, 2), stride=(1, 2))  # [N, (c, ky, kx), L]
        rows = patches.reshape(4, 3, 6, 15).permute(0, 3, 2, 1).reshape(4 * 15, 6 * 3)  # (ky, kx, c)
        weight = conv.weight.detach().permute(0, 2, 3, 1).reshape(5, 6 * 3)
        expected = oracle.gemm(rows.numpy(), weight.numpy().T, ROWS, conv.bias.detach().numpy())
        # flatten gives torch's [filters, height, width] order.
        expected = expected.reshape(4, 15, 5).transpose(0, 2, 1).reshape(4, 75)
        self.assertTrue(same_bits(torch.from_numpy(got), expected))

    def test_gradients_against_finite_differences(self):
        """The array's dW, db and dx of loss = sum(r * linear(x)) against
        central differences of the exact (fp64) loss, within the bound."""
        x = self.randn(6, 21)
        w = self.randn(4, 21)
        b = self.randn(4)
        r = self.randn(6, 4)
        xs, ws, bs = (t.clone().requires_grad_() for t in (x, w, b))
        (st.linear(xs, ws, bs) * r).sum().backward()

        def loss(x64, w64, b64):
            return float(((x64 @ w64.T + b64) * r.double()).sum())

        def central(which, tensor):
            grad = np.zeros(tensor.shape)
            h = 1e-6
            for index in np.ndindex(*tensor.shape):
                args = [x.double(), w.double(), b.double()]
                plus, minus = args[which].clone(), args[which].clone()
                plus[index] += h
                minus[index] -= h
                grad[index] = (loss(*[plus if i == which else a for i, a in enumerate(args)]) -
                               loss(*[minus if i == which else a for i, a in enumerate(args)])) / (2 * h)
            return grad

        for name, which, got, bound in [
                ("dx", 0, xs.grad, fp32_gemm_bound(r.numpy(), w.numpy())),
                ("dw", 1, ws.grad, fp32_gemm_bound(r.numpy().T, x.numpy())),
                ("db", 2, bs.grad, fp32_sum_bound(r.numpy()))]:
            with self.subTest(name):
                error = np.abs(got.numpy() - central(which, [x, w, b][which]))
                self.assertTrue(np.all(error <= bound + 1e-6), f"{name}: worst {error.max()} vs bound {bound.max()}")
                self.assertGreater(np.abs(got.numpy()).max(), 0.1)

    def test_within_the_error_bound_of_torch_fp32(self):
        for m, k, n in [(33, 1000, 17), (8, 4099, 3)]:
            a, b = self.randn(m, k), self.randn(k, n)
            got = st.matmul(a, b).numpy().astype(np.float64)
            torch_fp32 = (a @ b).numpy().astype(np.float64)
            bound = fp32_gemm_bound(a.numpy(), b.numpy())
            with self.subTest(m=m, k=k, n=n):
                self.assertTrue(np.all(np.abs(got - torch_fp32) <= bound))
                self.assertFalse(np.array_equal(got, torch_fp32), "bf16 operands should differ from fp32")

    def test_bias_gradients_are_fp32_sums(self):
        """db of nn.Linear and nn.Conv2d is the fp32 sum of dy's rows (a
        convolution's: one per example and pixel) in the array's K tiles,
        bit for bit, and within fp32's rounding of the exact sum where the
        terms cancel: 1 + 2^-10, -1 and -2^-10 sum to 0 in fp32, to -2^-10
        with the first rounded to bf16."""
        cancelling = torch.tensor([1 + 2.0**-10, -1.0, -(2.0**-10)])
        dy = self.randn(12, 9)
        dy[:, 4] = cancelling.repeat(4)
        x = self.randn(12, 5).requires_grad_()
        w = self.randn(9, 5).requires_grad_()
        b = self.randn(9).requires_grad_()
        st.linear(x, w, b).backward(dy)
        self.assertTrue(same_bits(b.grad, oracle.row_sums(dy.numpy(), ROWS)))
        self.assertEqual(b.grad[4].item(), 0.0)
        exact = dy.double().sum(0).numpy()
        self.assertTrue(np.all(np.abs(b.grad.numpy() - exact) <= fp32_sum_bound(dy.numpy())))

        conv = st.accelerate(nn.Conv2d(2, 3, 3, padding=1))
        images = self.randn(5, 2, 4, 7)
        out = conv(images)
        dy = self.randn(*out.shape)
        out.backward(dy)
        rows = dy.permute(0, 2, 3, 1).reshape(-1, 3).numpy()  # (example, pixel) rows
        self.assertTrue(same_bits(conv.bias.grad, oracle.row_sums(rows, ROWS)))

    def test_matmul_and_bmm_backward_bits(self):
        a = self.randn(3, 9, 20).requires_grad_()
        b = self.randn(3, 20, 6).requires_grad_()
        c = st.matmul(a, b)
        dc = self.randn(3, 9, 6)
        c.backward(dc)
        for i in range(3):
            an, bn, dcn = a[i].detach().numpy(), b[i].detach().numpy(), dc[i].numpy()
            self.assertTrue(same_bits(c[i], oracle.gemm(an, bn, ROWS)))
            self.assertTrue(same_bits(a.grad[i], oracle.gemm(dcn, bn.T, ROWS)))
            self.assertTrue(same_bits(b.grad[i], oracle.gemm(an.T, dcn, ROWS)))


class Mixed(nn.Module):
    """Convolution, pooling, linear layers and a matmul in forward."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 5, 3, padding=1, stride=2)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(5 * 2 * 2, 7)
        self.mix = nn.Parameter(torch.randn(7, 7))

    def forward(self, x):
        h = self.pool(F.relu(self.conv(x))).flatten(1)
        return torch.matmul(self.fc(h), self.mix) + (h @ torch.ones(20, 1))


class AccelerateTest(unittest.TestCase):
    def test_model_runs_its_products_on_the_array(self):
        torch.manual_seed(SEED)
        plain = Mixed()
        accelerated = Mixed()
        accelerated.load_state_dict(plain.state_dict())
        st.accelerate(accelerated)
        x = torch.randn(6, 2, 9, 9)
        before = st.array_device().counters()["launches"]
        y = accelerated(x)
        forward = st.array_device().counters()["launches"] - before
        y.square().sum().backward()
        backward = st.array_device().counters()["launches"] - before - forward
        # Forward: conv, fc, matmul and @. Backward: conv's dW (its input
        # needs none), fc's dW and dx, the matmul's dA and dB, and the dA of
        # @ (ones need none); the biases' gradients are fp32 sums, not
        # products.
        self.assertEqual(forward, 4)
        self.assertEqual(backward, 6)
        y_plain = plain(x)
        y_plain.square().sum().backward()
        # bf16 operands: close to fp32, not equal. The outputs within 2 %
        # (relative norm); the gradients, after three more rounded products
        # and sums that cancel, point the same way (cosine above 0.99).
        self.assertLess(((y - y_plain).norm() / y_plain.norm()).item(), 0.02)
        for (name, p), q in zip(accelerated.named_parameters(), plain.parameters()):
            with self.subTest(name):
                self.assertGreater(F.cosine_similarity(p.grad.flatten(), q.grad.flatten(), dim=0).item(), 0.99)
                self.assertFalse(torch.equal(p.grad, q.grad))
        self.assertEqual(list(accelerated.state_dict()), list(plain.state_dict()))

    def test_constant_images_with_batchnorm_learn_their_label(self):
        """torch_xla's MNIST smoke test (its fake data: all-zero images, label
        0) trains to plain PyTorch's test accuracy through accelerate(). Each
        convolution's output is its bias everywhere, so BatchNorm's input
        gradient cancels exactly and the convolutions' bias gradients are
        zero but for fp32 rounding: a sum through bf16 walked conv1's bias
        far enough that evaluation flipped every prediction."""

        MNIST = xla_mnist_job.MNIST  # torch_xla's test/test_train_mp_mnist.py model

        def train(model):
            """Test accuracy and how far conv1's bias moved in 200 steps of
            64 (the SGD of torch_xla's test)."""
            torch.manual_seed(SEED)
            model.load_state_dict(MNIST().state_dict())
            before = model.conv1.bias.detach().clone()
            optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.5)
            images, labels = torch.zeros(64, 1, 28, 28), torch.zeros(64, dtype=torch.int64)
            model.train()
            for _ in range(200):
                optimizer.zero_grad()
                F.nll_loss(model(images), labels).backward()
                optimizer.step()
            model.eval()
            with torch.no_grad():
                accuracy = (model(images).argmax(1) == labels).float().mean().item()
            return accuracy, (model.conv1.bias.detach() - before).abs().max().item()

        plain, plain_moved = train(MNIST())
        self.assertEqual(plain, 1.0)
        accelerated, moved = train(st.accelerate(MNIST()))
        # fp32 sums move the bias about 1e-4 (PyTorch's 6e-5), sums of
        # bf16-rounded terms 0.26, and the accuracy was 0.
        self.assertLess(plain_moved, 1e-3)
        self.assertLess(moved, 1e-3)
        self.assertEqual(accelerated, plain)

    def test_conv2d_is_the_patch_product(self):
        x = torch.randn(2, 3, 7, 6)
        conv = st.accelerate(nn.Conv2d(3, 4, (3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)))
        y = conv(x)
        patches = F.unfold(x, (3, 2), dilation=(1, 2), padding=(1, 0), stride=(2, 1))
        rows = patches.transpose(1, 2).reshape(-1, 3 * 3 * 2).numpy()
        expected = oracle.gemm(rows, conv.weight.detach().reshape(4, -1).numpy().T, ROWS, conv.bias.detach().numpy())
        self.assertEqual(tuple(y.shape), tuple(F.conv2d(x, conv.weight, conv.bias, (2, 1), (1, 0), (1, 2)).shape))
        self.assertTrue(same_bits(y.permute(0, 2, 3, 1).reshape(-1, 4).contiguous(), expected))

    def test_a_copy_stays_accelerated_on_its_own_parameters(self):
        layer = st.accelerate(nn.Linear(6, 3))
        copy = __import__("copy").deepcopy(layer)
        with torch.no_grad():
            copy.weight.mul_(2)
        x = torch.randn(4, 6)
        before = st.array_device().counters()["launches"]
        self.assertTrue(same_bits(copy(x), oracle.gemm(x.numpy(), copy.weight.detach().numpy().T, ROWS,
                                                       copy.bias.detach().numpy())))
        self.assertEqual(st.array_device().counters()["launches"], before + 1)
        self.assertFalse(torch.equal(copy(x), layer(x)))

    def test_other_dtypes_stay_with_pytorch(self):
        layer = st.accelerate(nn.Linear(4, 3).double())
        x = torch.randn(2, 4, dtype=torch.float64)
        before = st.array_device().counters()["launches"]
        self.assertTrue(torch.equal(layer(x), F.linear(x, layer.weight, layer.bias)))
        self.assertEqual(st.array_device().counters()["launches"], before)


REPLICAS = int(os.environ.get("SYSTOLE_TEST_REPLICAS", "2"))  # the slow label runs 8


class ReplicaTest(unittest.TestCase):
    def test_spawned_replicas_equal_one_process_in_replica_order(self):
        with tempfile.TemporaryDirectory() as tmp:
            runs = []
            for run in range(2):
                path = os.path.join(tmp, f"run{run}.pt")
                xmp.spawn(spawn_job.train, args=(path,), nprocs=REPLICAS)
                runs.append(torch.load(path))
        torch.set_num_threads(max(1, (os.cpu_count() or 1) // REPLICAS))  # as each replica had
        expected = spawn_job.reference(REPLICAS)
        self.assertEqual(list(runs[0]), list(expected))
        for name in expected:
            with self.subTest(name):
                self.assertTrue(np.array_equal(bits(runs[0][name]), bits(expected[name])), "spawn vs one process")
                self.assertTrue(np.array_equal(bits(runs[0][name]), bits(runs[1][name])), "two runs")

    def test_names_outside_a_job(self):
        self.assertEqual(xm.xrt_world_size(), 1)
        self.assertEqual(xm.get_ordinal(), 0)
        self.assertEqual(xm.get_ordinal(defval=-1), -1)
        self.assertTrue(xm.is_master_ordinal())

    def test_bad_arguments_raise(self):
        st.array_device()  # opened: configure comes too late now
        for error, pattern, call in [
                (ValueError, "nprocs must be a count >= 1, got 0", lambda: xmp.spawn(print, nprocs=0)),
                (RuntimeError, "already open", lambda: st.configure("sw_emu"))]:
            with self.subTest(pattern):
                with self.assertRaisesRegex(error, pattern):
                    call()

    def test_loaders_keep_the_order_and_pass_errors_on(self):
        batches = [torch.full((2,), float(i)) for i in range(20)]
        loader = pl.ParallelLoader(batches, [torch.device("cpu")]).per_device_loader(torch.device("cpu"))
        self.assertEqual(len(loader), 20)
        self.assertEqual([b[0].item() for b in loader], list(range(20)))
        self.assertEqual([b[0].item() for b in pl.MpDeviceLoader(batches, torch.device("cpu"))], list(range(20)))

        def broken():
            yield batches[0]
            raise OSError("disk went away")

        got = []
        with self.assertRaisesRegex(OSError, "disk went away"):
            for batch in pl.MpDeviceLoader(broken(), torch.device("cpu")):
                got.append(batch)
        self.assertEqual(len(got), 1)

    def test_save_is_atomic_and_loadable(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.pt")
            xm.save({"w": torch.arange(5.0)}, path)
            self.assertEqual(os.listdir(tmp), ["m.pt"])
            self.assertTrue(torch.equal(torch.load(path)["w"], torch.arange(5.0)))
            with self.assertRaises(Exception):
                xm.save({"f": lambda: 0}, path)  # cannot be pickled
            self.assertEqual(os.listdir(tmp), ["m.pt"])  # the old file stays, no temporary left
            self.assertTrue(torch.equal(torch.load(path)["w"], torch.arange(5.0)))


if __name__ == "__main__":
    unittest.main()
