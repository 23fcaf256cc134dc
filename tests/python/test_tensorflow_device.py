# SPDX-License-Identifier: Apache-2.0
"""The SYSTOLE PluggableDevice (tensorflow/systole_plugin.cpp), loaded by
`import tensorflow` from TF_PLUGGABLE_DEVICE_LIBRARY_PATH: a device per
compute unit, tf.matmul on the array to the numerics contract's bits
(oracle.py) on awkward shapes, transposed or not, on every unit and on
the RTL (hw_emu); Keras fit
with its variables and products on SYSTOLE:0 near the CPU run, and under
MirroredStrategy on two units; Add, Sub, Mul and DivNoNan (broadcasting),
Neg, Relu and ReluGrad to the CPU's bits; the sparse softmax
cross-entropy near a float64 statement of it; and a bad configuration reported at import, with no
devices and no abort."""

import os
import subprocess
import sys
import unittest

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("SYSTOLE_TF_UNITS", "2")
os.environ.setdefault("SYSTOLE_TF_ARRAY", "16x16")
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402

import oracle  # noqa: E402

SEED = int(os.environ.get("SYSTOLE_TEST_SEED", "20261203"))
print(f"seed {SEED} (SYSTOLE_TEST_SEED)")
ROWS = int(os.environ["SYSTOLE_TF_ARRAY"].split("x")[0])


def tiled_sum(x):
    """NUMERICS.md's reductions of x's rows, stated again: tiles of ROWS
    rows, each summed from +0 in order, then the tiles' sums from +0 in
    order."""
    total = np.zeros(x.shape[1], np.float32)
    for t in range(0, len(x), ROWS):
        acc = np.zeros(x.shape[1], np.float32)
        for row in x[t:t + ROWS]:
            acc = (acc + row).astype(np.float32)
        total = (total + acc).astype(np.float32)
    return total


class DeviceTest(unittest.TestCase):
    def test_one_device_per_compute_unit(self):
        names = [d.name for d in tf.config.list_physical_devices("SYSTOLE")]
        self.assertEqual(names, [f"/physical_device:SYSTOLE:{i}" for i in range(int(os.environ["SYSTOLE_TF_UNITS"]))])

    def test_matmul_runs_on_the_array_to_the_bit(self):
        rng = np.random.default_rng(SEED)
        for m, k, n in [(1, 1, 1), (37, 300, 29), (17, 16, 33), (5, 1, 7)]:
            for transpose_a in (False, True):
                for transpose_b in (False, True):
                    for unit in range(2):
                        with self.subTest(m=m, k=k, n=n, transpose_a=transpose_a, transpose_b=transpose_b, unit=unit):
                            a = rng.standard_normal((m, k)).astype(np.float32)
                            b = rng.standard_normal((k, n)).astype(np.float32)
                            with tf.device(f"/device:SYSTOLE:{unit}"):
                                c = tf.matmul(tf.constant(a.T.copy() if transpose_a else a),
                                              tf.constant(b.T.copy() if transpose_b else b),
                                              transpose_a=transpose_a, transpose_b=transpose_b)
                            self.assertTrue(c.device.endswith(f"SYSTOLE:{unit}"), c.device)
                            np.testing.assert_array_equal(c.numpy().view(np.uint32),
                                                          oracle.gemm(a, b, ROWS).view(np.uint32))

    def test_empty_products(self):
        with tf.device("/device:SYSTOLE:0"):
            c = tf.matmul(tf.ones((3, 0)), tf.ones((0, 4)))
            e = tf.matmul(tf.ones((0, 5)), tf.ones((5, 2)))
        np.testing.assert_array_equal(c.numpy(), np.zeros((3, 4), np.float32))
        self.assertEqual(e.shape, (0, 2))

    def test_a_shape_mismatch_names_the_shapes(self):
        with tf.device("/device:SYSTOLE:0"):
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "3x4.*5x2|Matrix size-incompatible"):
                tf.matmul(tf.ones((3, 4)), tf.ones((5, 2)))

    def test_elementwise_kernels_give_the_cpus_bits(self):
        rng = np.random.default_rng(SEED + 2)
        x = rng.standard_normal((3, 1, 5)).astype(np.float32)
        x[0, 0, :3] = [1e-40, -0.0, 3e38]  # a subnormal, a signed zero, near overflow
        ops = {
            "add": (tf.add, np.add),
            "subtract": (tf.subtract, np.subtract),
            "multiply": (tf.multiply, np.multiply),
            "divide_no_nan": (tf.math.divide_no_nan,
                              lambda a, b: np.where(b == 0, np.float32(0), a / np.where(b == 0, 1, b))),
        }
        for y_shape in [(3, 1, 5), (5,), (4, 1), (1, 4, 5), ()]:
            y = rng.standard_normal(y_shape).astype(np.float32)
            if y.ndim:
                y.flat[0] = 0.0  # DivNoNan's zero divisor
                y.flat[-1] = 1e-39
            for name, (op, reference) in ops.items():
                with self.subTest(op=name, y_shape=y_shape):
                    with tf.device("/device:SYSTOLE:1"):
                        z = op(tf.constant(x), tf.constant(y))
                    self.assertTrue(z.device.endswith("SYSTOLE:1"), z.device)
                    with np.errstate(all="ignore"):
                        want = reference(x, y).astype(np.float32)
                    np.testing.assert_array_equal(z.numpy().view(np.uint32), want.view(np.uint32))
        with tf.device("/device:SYSTOLE:0"):
            negated = tf.negative(tf.constant(x))
        self.assertTrue(negated.device.endswith("SYSTOLE:0"), negated.device)
        np.testing.assert_array_equal(negated.numpy().view(np.uint32), (-x).view(np.uint32))
        with tf.device("/device:SYSTOLE:0"):
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, r"\[3, 1, 5\] and \[2\] do not broadcast"):
                tf.add(tf.constant(x), tf.ones((2,)))
            features = tf.constant(np.array([-1.0, -0.0, 0.0, 2.5, 1e-45], np.float32))
            relu = tf.nn.relu(features)
            with tf.GradientTape() as tape:
                tape.watch(features)
                out = tf.nn.relu(features)
            grad = tape.gradient(out, features, output_gradients=tf.constant([3.0, 3.0, 3.0, 3.0, -2.0]))
        np.testing.assert_array_equal(relu.numpy().view(np.uint32),
                                      np.array([0, 0, 0, 2.5, 1e-45], np.float32).view(np.uint32))
        np.testing.assert_array_equal(grad.numpy().view(np.uint32),
                                      np.array([0, 0, 0, 3.0, -2.0], np.float32).view(np.uint32))

    def test_sparse_softmax_cross_entropy_on_the_device(self):
        # exp and log are not one IEEE operation: the device's values are
        # compared with a float64 statement of TensorFlow's formula, to
        # within what fp32 rounding of it leaves, and with TensorFlow's
        # CPU kernel to the same tolerance.
        rng = np.random.default_rng(SEED + 5)
        logits = (rng.standard_normal((37, 11)) * 4).astype(np.float32)
        logits[3] = 0.0  # a uniform row
        logits[4, 2] = 80.0  # exp of the rest underflows
        for dtype in (np.int32, np.int64):
            labels = rng.integers(0, 11, 37).astype(dtype)
            with self.subTest(labels=dtype.__name__):
                with tf.device("/device:SYSTOLE:0"):
                    z = tf.constant(logits)
                    with tf.GradientTape() as tape:
                        tape.watch(z)
                        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=tf.constant(labels), logits=z)
                    grad = tape.gradient(loss, z)
                self.assertTrue(loss.device.endswith("SYSTOLE:0"), loss.device)
                with tf.device("/device:CPU:0"):
                    cpu_loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
                shifted = logits.astype(np.float64) - logits.max(axis=1, keepdims=True)
                total = np.exp(shifted).sum(axis=1)
                want_loss = np.log(total) - shifted[np.arange(37), labels]
                want_grad = np.exp(shifted) / total[:, None]
                want_grad[np.arange(37), labels] -= 1
                np.testing.assert_allclose(loss.numpy(), want_loss, rtol=1e-6, atol=1e-6)
                np.testing.assert_allclose(grad.numpy(), want_grad, rtol=1e-6, atol=1e-7)
                np.testing.assert_allclose(loss.numpy(), cpu_loss.numpy(), rtol=1e-6, atol=1e-6)
        with tf.device("/device:SYSTOLE:0"):
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError,
                                        r"labels\[2\] is 11, outside the valid range of \[0, 11\)"):
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=tf.constant([0, 1, 11], tf.int32), logits=tf.constant(logits[:3]))

    def test_sums_over_leading_axes_run_in_the_arrays_order(self):
        rng = np.random.default_rng(SEED + 4)
        for shape, axes, keepdims in [((300, 7), [0], False), ((1, 5), [0], True), ((33, 4, 3), [0, 1], False),
                                      ((17, 2, 3), [-3], True)]:
            with self.subTest(shape=shape, axes=axes, keepdims=keepdims):
                x = (rng.standard_normal(shape) * 100).astype(np.float32)
                with tf.device("/device:SYSTOLE:1"):
                    z = tf.reduce_sum(tf.constant(x), axis=axes, keepdims=keepdims)
                self.assertTrue(z.device.endswith("SYSTOLE:1"), z.device)
                leading = len({a % len(shape) for a in axes})
                want = tiled_sum(x.reshape(int(np.prod(shape[:leading])), -1)).reshape(
                    np.sum(x, axis=tuple(axes), keepdims=keepdims).shape)
                np.testing.assert_array_equal(z.numpy().view(np.uint32), want.view(np.uint32))
        # Other axes on the host: each output's values in row-major order.
        x = (rng.standard_normal((4, 6, 5)) * 100).astype(np.float32)
        with tf.device("/device:SYSTOLE:0"):
            z = tf.reduce_sum(tf.constant(x), axis=[1])
        want = np.zeros((4, 5), np.float32)
        for j in range(6):
            want = (want + x[:, j, :]).astype(np.float32)
        np.testing.assert_array_equal(z.numpy().view(np.uint32), want.view(np.uint32))
        with tf.device("/device:SYSTOLE:0"):
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "out of range|Invalid reduction"):
                tf.reduce_sum(tf.constant(x), axis=[3])

    def test_bias_add_and_its_gradient(self):
        rng = np.random.default_rng(SEED + 8)
        for shape in [(37, 5), (3, 4, 6, 7), (1, 1)]:
            with self.subTest(shape=shape):
                x = rng.standard_normal(shape).astype(np.float32)
                b = rng.standard_normal(shape[-1:]).astype(np.float32)
                dy = (rng.standard_normal(shape) * 10).astype(np.float32)
                with tf.device("/device:SYSTOLE:1"):
                    tb = tf.constant(b)
                    with tf.GradientTape() as tape:
                        tape.watch(tb)
                        z = tf.nn.bias_add(tf.constant(x), tb)
                    db = tape.gradient(z, tb, output_gradients=tf.constant(dy))
                for result in (z, db):
                    self.assertTrue(result.device.endswith("SYSTOLE:1"), result.device)
                np.testing.assert_array_equal(z.numpy().view(np.uint32), (x + b).view(np.uint32))
                np.testing.assert_array_equal(db.numpy().view(np.uint32),
                                              tiled_sum(dy.reshape(-1, shape[-1])).view(np.uint32))
        with tf.device("/device:SYSTOLE:0"):
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "bias|Biases must be 1D"):
                tf.nn.bias_add(tf.ones((2, 3)), tf.ones((2,)))

    def test_convolutions_run_on_the_array_to_the_bit(self):
        # The contract restated: patches (ky, kx, channel) with TensorFlow's
        # padding, their products by the oracle, and col2im's sums (each
        # input value from +0, one term per tap in descending order).
        def patches(x, kh, kw, sh, sw, same):
            n, h, w, c = x.shape
            oh, ow = ((h + sh - 1) // sh, (w + sw - 1) // sw) if same else ((h - kh) // sh + 1, (w - kw) // sw + 1)
            top = max((oh - 1) * sh + kh - h, 0) // 2 if same else 0
            left = max((ow - 1) * sw + kw - w, 0) // 2 if same else 0
            cols = np.zeros((n, oh, ow, kh, kw, c), np.float32)
            source = np.full((n, oh, ow, kh, kw), -1, np.int64)
            for oy in range(oh):
                for ox in range(ow):
                    for ky in range(kh):
                        for kx in range(kw):
                            y, xx = oy * sh + ky - top, ox * sw + kx - left
                            if 0 <= y < h and 0 <= xx < w:
                                cols[:, oy, ox, ky, kx] = x[:, y, xx]
                                source[:, oy, ox, ky, kx] = y * w + xx
            return cols.reshape(n * oh * ow, kh * kw * c), source, (oh, ow)

        rng = np.random.default_rng(SEED + 6)
        for (n, h, w, c, kh, kw, f, strides, padding) in [(3, 7, 6, 2, 3, 2, 5, (1, 1), "SAME"),
                                                           (2, 9, 8, 3, 3, 3, 4, (2, 1), "VALID"),
                                                           (1, 5, 5, 17, 1, 1, 3, (2, 2), "SAME")]:
            with self.subTest(shape=(n, h, w, c), kernel=(kh, kw, f), strides=strides, padding=padding):
                x = rng.standard_normal((n, h, w, c)).astype(np.float32)
                k = rng.standard_normal((kh, kw, c, f)).astype(np.float32)
                col, source, (oh, ow) = patches(x, kh, kw, *strides, padding == "SAME")
                dy = rng.standard_normal((n, oh, ow, f)).astype(np.float32)
                with tf.device("/device:SYSTOLE:0"):
                    tx, tk = tf.constant(x), tf.constant(k)
                    with tf.GradientTape(persistent=True) as tape:
                        tape.watch([tx, tk])
                        y = tf.nn.conv2d(tx, tk, strides=[1, *strides, 1], padding=padding)
                    dx, dk = tape.gradient(y, [tx, tk], output_gradients=tf.constant(dy))
                for result in (y, dx, dk):
                    self.assertTrue(result.device.endswith("SYSTOLE:0"), result.device)
                w2 = k.reshape(kh * kw * c, f)
                want_y = oracle.gemm(col, w2, ROWS).reshape(n, oh, ow, f)
                np.testing.assert_array_equal(y.numpy().view(np.uint32), want_y.view(np.uint32))
                dy2 = dy.reshape(-1, f)
                want_dk = oracle.gemm(np.ascontiguousarray(dy2.T), col, ROWS).T.reshape(kh, kw, c, f)
                np.testing.assert_array_equal(dk.numpy().view(np.uint32), want_dk.view(np.uint32))
                dcol = oracle.gemm(dy2, np.ascontiguousarray(w2.T), ROWS).reshape(n, oh * ow, kh * kw, c)
                want_dx = np.zeros((n, h * w, c), np.float32)
                src = source.reshape(n, oh * ow, kh * kw)
                for tap in reversed(range(kh * kw)):
                    for p in range(oh * ow):
                        for b in range(n):
                            if src[b, p, tap] >= 0:
                                want_dx[b, src[b, p, tap]] = (want_dx[b, src[b, p, tap]] + dcol[b, p, tap]).astype(
                                    np.float32)
                np.testing.assert_array_equal(dx.numpy().view(np.uint32),
                                              want_dx.reshape(n, h, w, c).view(np.uint32))
        with tf.device("/device:SYSTOLE:0"):
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, r"dilations \[1, 2, 2, 1\]: only 1 runs"):
                tf.nn.conv2d(tf.ones((1, 5, 5, 1)), tf.ones((2, 2, 1, 1)), strides=1, padding="VALID", dilations=2)
            with self.assertRaisesRegex(tf.errors.InvalidArgumentError, "3 channels and the filter 2|input depth"):
                tf.nn.conv2d(tf.ones((1, 5, 5, 3)), tf.ones((2, 2, 2, 1)), strides=1, padding="VALID")

    def test_keras_fit_with_variables_on_the_device(self):
        rng = np.random.default_rng(SEED + 1)
        x = rng.standard_normal((512, 20)).astype(np.float32)
        y = (x[:, :3].sum(axis=1) > 0).astype(np.int64)

        def fit(device):
            keras.utils.set_random_seed(7)
            with tf.device(device):
                model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"),
                                          keras.layers.Dense(2)])
                model.compile(optimizer="adam", metrics=["accuracy"], steps_per_execution=4, jit_compile=False,
                              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                history = model.fit(x, y, epochs=3, batch_size=32, verbose=0)
            return model, history.history

        cpu_model, cpu = fit("/device:CPU:0")
        model, ours = fit("/device:SYSTOLE:0")
        self.assertTrue(all(w.value.device.endswith("SYSTOLE:0") for w in model.weights))
        # bf16 operands: not the CPU's bits, but its run within a point.
        self.assertNotEqual(ours["loss"], cpu["loss"])
        self.assertLess(abs(ours["accuracy"][-1] - cpu["accuracy"][-1]), 0.01)
        self.assertLess(abs(ours["loss"][-1] - cpu["loss"][-1]), 0.01)
        self.assertGreater(ours["accuracy"][-1], 0.65)

    def test_mirrored_strategy_over_two_units(self):
        # TPUStrategy's semantics: each unit a replica of its share of the
        # batch, gradients summed by TensorFlow's collective all-reduce,
        # whose reduction adds on the devices (Add in place). The same run
        # reduced on the CPU (ReductionToOneDevice) has the same losses.
        rng = np.random.default_rng(SEED + 3)
        x = rng.standard_normal((512, 20)).astype(np.float32)
        y = (x[:, :3].sum(axis=1) > 0).astype(np.int64)
        units = ["/device:SYSTOLE:0", "/device:SYSTOLE:1"]

        def fit(strategy):
            keras.utils.set_random_seed(7)
            with strategy.scope():
                model = keras.Sequential([keras.Input((20,)), keras.layers.Dense(32, activation="relu"),
                                          keras.layers.Dense(2)])
                # steps_per_execution > 1 fails under MirroredStrategy with
                # this Keras and TensorFlow on the CPU's devices too.
                model.compile(optimizer="adam", metrics=["accuracy"], jit_compile=False,
                              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
                return model.fit(x, y, epochs=3, batch_size=64, verbose=0).history

        ours = fit(tf.distribute.MirroredStrategy(units))
        on_cpu = fit(tf.distribute.MirroredStrategy(
            units, cross_device_ops=tf.distribute.ReductionToOneDevice(reduce_to_device="/cpu:0")))
        cpu = fit(tf.distribute.OneDeviceStrategy("/cpu:0"))
        self.assertEqual(ours["loss"], on_cpu["loss"])
        self.assertLess(abs(ours["accuracy"][-1] - cpu["accuracy"][-1]), 0.01)

    def test_matmul_on_the_rtl(self):
        # SYSTOLE_TF_BACKEND=hw_emu: the products on the Verilated RTL kernel.
        script = """if True:
            import sys, numpy as np, tensorflow as tf, oracle
            rng = np.random.default_rng(int(sys.argv[1]))
            a = rng.standard_normal((20, 37)).astype(np.float32)
            b = rng.standard_normal((37, 9)).astype(np.float32)
            with tf.device("/device:SYSTOLE:1"):
                c = tf.matmul(a, b)
            assert c.device.endswith("SYSTOLE:1"), c.device
            assert c.numpy().view(np.uint32).tolist() == oracle.gemm(a, b, 16).view(np.uint32).tolist()
            print("equal")
        """
        env = dict(os.environ, SYSTOLE_TF_BACKEND="hw_emu", SYSTOLE_TF_ARRAY="16x16")
        done = subprocess.run([sys.executable, "-c", script, str(SEED)], env=env, capture_output=True, text=True)
        self.assertEqual((done.returncode, done.stdout), (0, "equal\n"), done.stderr[-2000:])

    def test_a_bad_configuration_is_reported_at_import(self):
        for variable, value, message in [
                ("SYSTOLE_TF_BACKEND", "nonesuch", "SYSTOLE_TF_BACKEND 'nonesuch': unknown backend 'nonesuch'"),
                ("SYSTOLE_TF_UNITS", "0", "SYSTOLE_TF_UNITS: expected a count of compute units (1 to 64), got '0'"),
                ("SYSTOLE_TF_ARRAY", "16y16", "SYSTOLE_TF_ARRAY: "),
                ("SYSTOLE_TF_BACKEND", "perf", "SYSTOLE_TF_BACKEND 'perf': TensorFlow's kernels read a device's "
                 "memory as the host's, and this backend's is not")]:
            with self.subTest(variable=variable):
                env = dict(os.environ, **{variable: value})
                done = subprocess.run([sys.executable, "-c", "import tensorflow as tf; "
                                       "print(len(tf.config.list_physical_devices('SYSTOLE')))"],
                                      env=env, capture_output=True, text=True)
                self.assertEqual((done.returncode, done.stdout), (0, "0\n"), done.stderr[-2000:])
                self.assertIn("Systole: no SYSTOLE devices: " + message, done.stderr)


if __name__ == "__main__":
    unittest.main()
