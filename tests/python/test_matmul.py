# SPDX-License-Identifier: Apache-2.0
"""systole.matmul and systole.Device from NumPy: bits against the contract's
oracle and against accel_gemm, any operand layout, counters, the perf
projection, errors, and the GIL released while the device works."""

import os
import subprocess
import tempfile
import threading
import time
import unittest

import numpy as np

import oracle
import systole

SEED = int(os.environ.get("SYSTOLE_TEST_SEED", "20261126"))
print(f"seed {SEED} (SYSTOLE_TEST_SEED)")


def same_bits(x, y):
    return x.shape == y.shape and np.array_equal(x.view(np.uint32), y.view(np.uint32))


class MatmulTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rng = np.random.default_rng(SEED)
        cls.device = systole.Device("sw_emu", array=(16, 16), units=2, threads=1)

    def operands(self, m, k, n):
        return (self.rng.standard_normal((m, k), dtype=np.float32),
                self.rng.standard_normal((k, n), dtype=np.float32))

    def test_version_is_the_packages(self):
        self.assertEqual(systole.__version__, os.environ["SYSTOLE_VERSION"])

    def test_awkward_shapes_match_the_oracle(self):
        for m, k, n in [(1, 1, 1), (17, 33, 5), (3, 250, 129), (64, 16, 31), (37, 1000, 3)]:
            with self.subTest(m=m, k=k, n=n):
                a, b = self.operands(m, k, n)
                bias = self.rng.standard_normal(n, dtype=np.float32)
                got = self.device.matmul(a, b, bias=bias, relu=True)
                self.assertTrue(same_bits(got, oracle.gemm(a, b, 16, bias, relu=True)), f"{m}x{k}x{n}")

    def test_layouts_give_the_same_bits(self):
        a, b = self.operands(23, 41, 19)
        expected = self.device.matmul(a, b)
        a_t = np.ascontiguousarray(a.T)  # stored k x m
        b_t = np.ascontiguousarray(b.T)
        wide = np.zeros((23, 60), dtype=np.float32)
        wide[:, 7:48] = a  # a slice with a wider row stride
        views = {
            "transpose flags": self.device.matmul(a_t, b_t, transpose_a=True, transpose_b=True),
            "column-major views": self.device.matmul(a_t.T, b_t.T),
            "transposed column-major": self.device.matmul(np.asfortranarray(a_t), b, transpose_a=True),
            "row slice": self.device.matmul(wide[:, 7:48], b),
            "strided columns": self.device.matmul(np.repeat(a, 2, axis=1)[:, ::2], b),
            "negative stride": self.device.matmul(a[::-1][::-1], b),
            "unit 1": self.device.matmul(a, b, unit=1),
        }
        for name, got in views.items():
            with self.subTest(name):
                self.assertTrue(same_bits(got, expected), name)

    def test_matches_accel_gemm(self):
        """The same bits as the command-line tool on the same .npy operands
        (the 128x128 array, K longer than one descriptor)."""
        device = systole.Device("sw_emu", threads=1)
        with tempfile.TemporaryDirectory() as tmp:
            for m, k, n in [(131, 300, 77), (5, 4099, 9)]:
                a, b = self.operands(m, k, n)
                np.save(os.path.join(tmp, "a.npy"), a)
                np.save(os.path.join(tmp, "b.npy"), b)
                out = os.path.join(tmp, "c.npy")
                subprocess.run([os.environ["SYSTOLE_ACCEL_GEMM"], "--a", os.path.join(tmp, "a.npy"), "--b",
                                os.path.join(tmp, "b.npy"), "--out", out, "--repeat", "1", "--verify", "none",
                                "--threads", "1"], check=True, stdout=subprocess.DEVNULL)
                with self.subTest(m=m, k=k, n=n):
                    self.assertTrue(same_bits(device.matmul(a, b), np.load(out)))

    def test_hw_emu_runs_the_rtl(self):
        device = systole.Device("hw_emu", array=(4, 4))
        self.assertEqual(device.info["name"], "hw_emu[0] 4x4 rtl")
        a, b = self.operands(7, 13, 5)
        bias = self.rng.standard_normal(5, dtype=np.float32)
        self.assertTrue(same_bits(device.matmul(a, b, bias=bias), oracle.gemm(a, b, 4, bias)))

    def test_module_matmul_uses_the_default_device(self):
        a, b = self.operands(9, 130, 4)
        self.assertTrue(same_bits(systole.matmul(a, b), oracle.gemm(a, b, 128)))
        systole.set_default_device(self.device)
        try:
            self.assertTrue(same_bits(systole.matmul(a, b), oracle.gemm(a, b, 16)))
        finally:
            systole.set_default_device(systole.Device("sw_emu"))

    def test_counters_count_the_work(self):
        device = systole.Device("sw_emu", array=(16, 16), threads=1)
        a, b = self.operands(20, 48, 12)
        device.matmul(a, b)
        counters = device.counters()
        self.assertEqual(counters["launches"], 1)
        self.assertEqual(counters["macs"], 20 * 48 * 12)
        self.assertGreater(counters["busy_cycles"], 0)
        device.matmul(a, b)
        self.assertEqual(device.counters()["macs"], 2 * 20 * 48 * 12)
        self.assertEqual(device.counters(unit=0)["launches"], 2)

    def test_perf_projects_a_board(self):
        device = systole.Device("perf", board="u55c", array=(32, 32))
        a, b = self.operands(64, 256, 64)
        self.assertTrue(same_bits(device.matmul(a, b), oracle.gemm(a, b, 32)))
        projection = device.projection()
        self.assertIn("u55c", projection["board"])
        self.assertEqual(projection["macs"], 64 * 256 * 64)
        self.assertGreater(projection["seconds"], 0)
        with self.assertRaisesRegex(RuntimeError, "projection|perf|board"):
            self.device.projection()

    def test_bad_arguments_raise(self):
        a, b = self.operands(4, 5, 6)
        cases = [
            (TypeError, "a: expected dtype float32, got float64", lambda: self.device.matmul(a.astype(np.float64), b)),
            (TypeError, "b: expected a numpy.ndarray", lambda: self.device.matmul(a, [[1.0]])),
            (ValueError, r"a: expected a 2-D array, got shape \(4, 5, 1\)", lambda: self.device.matmul(a[..., None], b)),
            (ValueError, r"op\(a\) is 4x5 and op\(b\) is 6x5", lambda: self.device.matmul(a, b.T)),
            (ValueError, "bias: expected 6 values", lambda: self.device.matmul(a, b, bias=np.zeros(5, np.float32))),
            (ValueError, "empty", lambda: self.device.matmul(np.zeros((0, 5), np.float32), b)),
            (ValueError, r"unit: 2 is out of range \(the device has 2 compute units\)",
             lambda: self.device.matmul(a, b, unit=2)),
            (ValueError, "unknown backend 'tpu'", lambda: systole.Device("tpu")),
            (ValueError, "array: expected", lambda: systole.Device("sw_emu", array=(0, 4))),
            (ValueError, r"array: expected .* got \(True, 4\)", lambda: systole.Device("sw_emu", array=(True, 4))),
            (ValueError, r"array: expected .* got \(1180591620717411303424, 4\)",
             lambda: systole.Device("sw_emu", array=(2**70, 4))),
            (ValueError, "array: expected ROWSxCOLS .* got '12by12'", lambda: systole.Device("sw_emu", array="12by12")),
            (ValueError, "engine: expected 'fast' or 'hls', got 'slow'", lambda: systole.Device(engine="slow")),
            (ValueError, "units: expected at least 1", lambda: systole.Device(units=0)),
            (TypeError, "", lambda: systole.Device(units=-1)),
            (ValueError, "board", lambda: systole.Device("perf", board="nonesuch")),
            (ValueError, r"hw_emu has no 5x5 build \(built: 4x4", lambda: systole.Device("hw_emu", array=(5, 5))),
            (RuntimeError, "/nonexistent/tty: cannot open the board's serial port",
             lambda: systole.Device("uart", port="/nonexistent/tty")),
            (ValueError, "launch_timeout", lambda: systole.Device(launch_timeout=0)),
            (TypeError, "set_default_device", lambda: systole.set_default_device("sw_emu")),
        ]
        for error, pattern, call in cases:
            with self.subTest(pattern):
                with self.assertRaisesRegex(error, pattern):
                    call()

    def test_device_tensors_are_multiplied_where_they_are(self):
        # Made, filled, multiplied (operands, bias and result on the unit)
        # and read back: the bits of the same product from NumPy arrays, on
        # either unit, transposed or not.
        for unit in (0, 1):
            for m, k, n in [(1, 1, 1), (19, 37, 5), (33, 7, 40)]:
                for transpose_a in (False, True):
                    with self.subTest(unit=unit, m=m, k=k, n=n, transpose_a=transpose_a):
                        a, b = self.operands(m, k, n)
                        stored_a = np.ascontiguousarray(a.T) if transpose_a else a
                        bias = self.rng.standard_normal((1, n), dtype=np.float32)
                        ta, tb = self.device.tensor(stored_a, unit=unit), self.device.tensor(b, unit=unit)
                        out = self.device.tensor(shape=(m, n), unit=unit)
                        self.assertEqual((out.shape, out.unit), ((m, n), unit))
                        got = self.device.matmul(ta, tb, bias=self.device.tensor(bias, unit=unit), relu=True,
                                                 transpose_a=transpose_a, out=out, unit=unit)
                        self.assertIs(got, out)
                        want = oracle.gemm(a, b, 16, bias[0], relu=True)
                        self.assertTrue(same_bits(out.numpy(), want))
                        # An array beside a tensor, and the result as a new array.
                        self.assertTrue(same_bits(self.device.matmul(a, tb, unit=unit), oracle.gemm(a, b, 16)))
        # A tensor written again is read again (its bf16 copy is made anew).
        a, b = self.operands(6, 9, 4)
        ta = self.device.tensor(a)
        self.device.matmul(ta, b)
        a2 = a * 3.5
        ta.write(a2)
        self.assertTrue(same_bits(ta.numpy(), a2))
        self.assertTrue(same_bits(self.device.matmul(ta, b), oracle.gemm(a2, b, 16)))

    def test_device_tensor_errors_name_the_argument(self):
        a, b = self.operands(4, 5, 6)
        ta, tb = self.device.tensor(a), self.device.tensor(b)
        cases = [
            (ValueError, r"b: a device tensor of unit 1, for a product on unit 0",
             lambda: self.device.matmul(ta, self.device.tensor(b, unit=1))),
            (ValueError, r"out: expected shape \(4, 6\) for the product, got a device tensor of shape \(6, 4\)",
             lambda: self.device.matmul(ta, tb, out=self.device.tensor(shape=(6, 4)))),
            (TypeError, r"out: expected a systole.DeviceTensor, got <class 'numpy.ndarray'>",
             lambda: self.device.matmul(ta, tb, out=np.zeros((4, 6), np.float32))),
            (ValueError, r"bias: expected 6 values \(the columns of the product\), got a device tensor of shape \(4, 5\)",
             lambda: self.device.matmul(ta, tb, bias=ta)),
            (ValueError, r"values: expected shape \(4, 5\) as the device tensor's, got \(5, 4\)",
             lambda: ta.write(a.T)),
            (ValueError, r"shape: expected \(rows, cols\) of positive sizes, got \(0, 3\)",
             lambda: self.device.tensor(shape=(0, 3))),
            (ValueError, r"inner dimensions differ", lambda: self.device.matmul(tb, tb)),
            (ValueError, r"unit: 2 is out of range", lambda: self.device.tensor(a, unit=2)),
        ]
        for error, message, call in cases:
            with self.subTest(message=message):
                with self.assertRaisesRegex(error, message):
                    call()
        self.assertTrue(same_bits(ta.numpy(), a), "a refused call leaves the tensor as it was")

    def test_the_gil_is_released_while_the_device_works(self):
        """A Python thread keeps running while a long product runs (the HLS
        engine: a quarter of a billion MACs take about half a second)."""
        device = systole.Device("sw_emu", array=(16, 16), engine="hls", threads=1)
        a, b = self.operands(512, 1024, 512)
        ticks = []
        running = threading.Event()
        running.set()

        def count():
            while running.is_set():
                ticks.append(time.perf_counter())
                time.sleep(0.001)

        ticker = threading.Thread(target=count)
        ticker.start()
        time.sleep(0.02)
        started = time.perf_counter()
        device.matmul(a, b)
        finished = time.perf_counter()
        running.clear()
        ticker.join()
        during = [t for t in ticks if started < t < finished]
        self.assertGreater(finished - started, 0.05, "the product was too short to tell")
        self.assertGreater(len(during), 5, f"{len(during)} ticks in {finished - started:.3f} s of device work")


if __name__ == "__main__":
    unittest.main()
