# SPDX-License-Identifier: Apache-2.0
"""systole.Model: the library's fit from Python, with Python callbacks, on
NumPy arrays, on the config's data and on a RecordDataset; the same bits as
accel_train on the same config; evaluate, predict, weights; errors."""

import json
import os
import subprocess
import tempfile
import unittest

import numpy as np

import systole

SEED = int(os.environ.get("SYSTOLE_TEST_SEED", "20261126"))
print(f"seed {SEED} (SYSTOLE_TEST_SEED)")


def clusters(rng, count, features=12, classes=3):
    """Separable clusters: class c around a random centre."""
    centres = np.random.default_rng(1).standard_normal((classes, features)).astype(np.float32) * 3
    y = rng.integers(0, classes, count)
    x = centres[y] + rng.standard_normal((count, features)).astype(np.float32)
    return x.astype(np.float32), y.astype(np.int64)


CONFIG = {
    "devices": 2, "array": "16x16",
    "model": {"hidden": [16]},
    "train": {"epochs": 3, "global_batch": 32, "optimizer": "adam", "learning_rate": 0.01},
}


def fashion_mnist_shards(tmp, shards):
    """tmp/fm/{train,validation,test}-*.tfrecord: make_idx's 640 training
    (64 of them validation) and 160 test examples, as accel_data writes
    Fashion-MNIST, the training set in `shards` files."""
    idx = os.path.join(tmp, "idx")
    os.mkdir(idx)
    subprocess.run([os.environ["SYSTOLE_MAKE_IDX"], idx, "640", "160"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([os.environ["SYSTOLE_ACCEL_DATA"], "fashion-mnist", "--data-dir", idx, "--out",
                    os.path.join(tmp, "fm"), "--shards", str(shards), "--validation-examples", "64"],
                   check=True, stdout=subprocess.DEVNULL)


class Recorder(systole.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def on_train_begin(self, logs):
        self.calls.append(("train_begin",))

    def on_epoch_end(self, epoch, logs):
        self.calls.append(("epoch_end", epoch, dict(logs)))

    def on_train_batch_end(self, batch, logs):
        self.calls.append(("batch_end", batch))

    def on_train_end(self, logs):
        self.calls.append(("train_end",))


class ModelTest(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(SEED)

    def test_fit_on_numpy_with_a_python_callback(self):
        x, y = clusters(self.rng, 640)
        xv, yv = clusters(self.rng, 96)
        model = systole.Model(CONFIG)
        recorder = Recorder()
        history = model.fit(x, y, validation_data=(xv, yv), callbacks=[recorder], verbose=0)
        self.assertEqual(history.epoch, [0, 1, 2])
        self.assertEqual(model.replicas, 2)
        self.assertEqual(systole.Model(CONFIG, {"devices": 1}).config_yaml().count("devices: 1"), 1)
        for key in ("loss", "accuracy", "val_loss", "val_accuracy"):
            self.assertEqual(len(history.history[key]), 3, key)
        self.assertGreater(history.history["val_accuracy"][-1], 0.9)
        self.assertLess(history.history["loss"][-1], history.history["loss"][0])
        batches = 640 // 32
        self.assertEqual(recorder.calls[0], ("train_begin",))
        self.assertEqual(recorder.calls[-1], ("train_end",))
        self.assertEqual(sum(1 for c in recorder.calls if c[0] == "batch_end"), 3 * batches)
        epoch_logs = [c[2] for c in recorder.calls if c[0] == "epoch_end"]
        self.assertEqual([logs["val_accuracy"] for logs in epoch_logs], history.history["val_accuracy"])
        self.assertIs(recorder.model, model)

        results = model.evaluate(xv, yv)
        self.assertAlmostEqual(results["accuracy"], history.history["val_accuracy"][-1], places=6)
        logits = model.predict(xv)
        self.assertEqual(logits.shape, (96, 3))
        self.assertAlmostEqual(float(np.mean(logits.argmax(1) == yv)), results["accuracy"], places=6)
        self.assertEqual(set(model.get_weights()), {"0.weight", "0.bias", "2.weight", "2.bias"})
        self.assertEqual(model.get_weights()["0.weight"].shape, (16, 12))

    def test_placement_device_gives_the_same_bits(self):
        # The parameters and Adam's slots kept on the card's two units give
        # the weights the host path gives, to the bit.
        x, y = clusters(self.rng, 320)
        weights = {}
        for placement in ("host", "device"):
            model = systole.Model(CONFIG, {"train": {"epochs": 2, "placement": placement}})
            model.fit(x, y, verbose=0)
            weights[placement] = model.get_weights()
        for name, value in weights["host"].items():
            self.assertEqual(value.tobytes(), weights["device"][name].tobytes(), name)

    def test_a_callback_stops_training(self):
        class StopAfterFirst(systole.Callback):
            def on_epoch_end(self, epoch, logs):
                self.model.stop_training = True

        x, y = clusters(self.rng, 320)
        history = systole.Model(CONFIG).fit(x, y, epochs=5, callbacks=[StopAfterFirst()], verbose=0)
        self.assertEqual(history.epoch, [0])
        self.assertTrue(history.stopped_early)

    def test_a_callbacks_exception_reaches_the_caller(self):
        class Broken(systole.Callback):
            def on_train_batch_end(self, batch, logs):
                if batch == 2:
                    raise KeyError("broken callback")

        x, y = clusters(self.rng, 320)
        model = systole.Model(CONFIG)
        with self.assertRaisesRegex(KeyError, "broken callback"):
            model.fit(x, y, callbacks=[Broken()], verbose=0)
        model.fit(x, y, epochs=1, verbose=0)  # the model is still usable

    def test_same_bits_as_accel_train(self):
        """Python fit on the config's IDX data and accel_train on the same
        config end with the same weights, bit for bit."""
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            os.mkdir(data)
            subprocess.run([os.environ["SYSTOLE_MAKE_IDX"], data, "640", "160"], check=True, stdout=subprocess.DEVNULL)
            config = os.path.join(tmp, "small.yaml")
            with open(config, "w") as f:
                f.write(f"array: 16x16\ndevices: 2\nmodel: {{hidden: [32]}}\n"
                        f"data: {{dir: {data}, validation_examples: 64}}\n"
                        f"train: {{epochs: 2, global_batch: 32, learning_rate: 0.003}}\n"
                        f"checkpoint: {{dir: {tmp}/ckpt}}\n")
            subprocess.run([os.environ["SYSTOLE_ACCEL_TRAIN"], "--config", config], check=True,
                           stdout=subprocess.DEVNULL)
            model = systole.Model(config)
            model.fit(verbose=0)
            tool = systole.load_safetensors(os.path.join(tmp, "ckpt", "checkpoint.safetensors"))
            ours = model.get_weights()
            for name, value in ours.items():
                with self.subTest(name):
                    self.assertTrue(np.array_equal(value.view(np.uint32), tool[name].view(np.uint32)))
            test = model.evaluate()  # the config's test split
            self.assertGreater(test["accuracy"], 0.5)

    def test_fit_on_a_record_dataset(self):
        with tempfile.TemporaryDirectory() as tmp:
            fashion_mnist_shards(tmp, 3)
            config = {
                "array": "16x16", "devices": 2, "model": {"hidden": [32], "classes": 10},
                "data": {"format": "tfrecord", "train": f"{tmp}/fm/train-*.tfrecord",
                         "validation": f"{tmp}/fm/validation-*.tfrecord", "test": f"{tmp}/fm/test-*.tfrecord",
                         "features": {"image": {"dtype": "float32", "shape": [28, 28, 1]},
                                      "label": {"dtype": "int64"}},
                         "inputs": ["image"], "shuffle_buffer": 100},
                "train": {"epochs": 2, "global_batch": 32, "learning_rate": 0.003},
            }
            records = systole.RecordDataset(config)
            self.assertEqual(len(records), 576 // 32)
            batches = list(records)
            self.assertEqual(len(batches), 18)
            x, y = batches[0]
            self.assertEqual((x.shape, y.shape, x.dtype), ((32, 28, 28, 1), (32,), np.float32))
            self.assertTrue(np.all((y >= 0) & (y < 10) & (y == np.floor(y))))
            second = list(records)  # the next epoch: the same examples, reshuffled
            self.assertFalse(np.array_equal(second[0][1], batches[0][1]) and np.array_equal(second[0][0], x))
            self.assertEqual(sorted(np.concatenate([b[1] for b in second])),
                             sorted(np.concatenate([b[1] for b in batches])))
            model = systole.Model(config)
            history = model.fit(systole.RecordDataset(config), verbose=0)
            self.assertEqual(len(history.history["val_loss"]), 2)
            self.assertGreater(model.evaluate()["accuracy"], 0.3)

    def test_a_record_dataset_iterates_the_batches_fit_trains_on(self):
        """On 1, 2 and 4 replicas, iterating a RecordDataset gives, batch by
        batch and bit for bit, the global batches fit trains on (accel_train's
        --retrace dump of them): each replica's shard through its own pipeline
        and its share of the shuffle buffer, in replica order."""
        with tempfile.TemporaryDirectory() as tmp:
            fashion_mnist_shards(tmp, 4)
            for replicas in (1, 2, 4):
                with self.subTest(replicas=replicas):
                    config = {
                        "array": "16x16", "devices": replicas, "model": {"hidden": [8], "classes": 10},
                        "data": {"format": "tfrecord", "train": f"{tmp}/fm/train-*.tfrecord",
                                 "features": {"image": {"dtype": "float32", "shape": [28, 28, 1]},
                                              "label": {"dtype": "int64"}},
                                 "inputs": ["image"], "shuffle_buffer": 100},
                        "train": {"epochs": 1, "global_batch": 32},
                    }
                    path = os.path.join(tmp, f"replicas_{replicas}.yaml")
                    with open(path, "w") as f:
                        json.dump(config, f)  # JSON is YAML
                    dump = os.path.join(tmp, f"dump_{replicas}")
                    subprocess.run([os.environ["SYSTOLE_ACCEL_TRAIN"], "--config", path, "--retrace", dump],
                                   check=True, stdout=subprocess.DEVNULL)
                    inputs = np.load(os.path.join(dump, "train_inputs.npy"))
                    labels = np.load(os.path.join(dump, "train_labels.npy"))
                    records = systole.RecordDataset(config)
                    batches = list(records)
                    self.assertEqual(len(records), len(batches))
                    self.assertEqual(len(batches) * 32, len(inputs))
                    for step, (x, y) in enumerate(batches):
                        rows = slice(step * 32, (step + 1) * 32)
                        self.assertTrue(np.array_equal(x.view(np.uint32), inputs[rows].view(np.uint32)), step)
                        self.assertTrue(np.array_equal(y.view(np.uint32), labels[rows].view(np.uint32)), step)

    def test_initial_weights_and_safetensors(self):
        x, y = clusters(self.rng, 64)
        weights = {"0.weight": self.rng.standard_normal((16, 12), dtype=np.float32),
                   "0.bias": self.rng.standard_normal(16, dtype=np.float32),
                   "2.weight": self.rng.standard_normal((3, 16), dtype=np.float32),
                   "2.bias": np.zeros(3, np.float32)}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "initial.safetensors")
            systole.save_safetensors(path, weights)
            read = systole.load_safetensors(path)
            self.assertEqual(sorted(read), sorted(weights))
            model = systole.Model(CONFIG, {"model": {"initial_weights": path}})
            model.evaluate(x, y)  # builds it
            for name, value in model.get_weights().items():
                with self.subTest(name):
                    self.assertTrue(np.array_equal(value.view(np.uint32), weights[name].view(np.uint32)))
                    self.assertTrue(np.array_equal(read[name].view(np.uint32), weights[name].view(np.uint32)))
            with self.assertRaisesRegex(ValueError, "model.initial_weights: .*missing.safetensors"):
                systole.Model(CONFIG, {"model": {"initial_weights": os.path.join(tmp, "missing.safetensors")}}).evaluate(x, y)
            del weights["2.bias"]
            systole.save_safetensors(path, weights)
            with self.assertRaisesRegex(ValueError, "model.initial_weights: .*2.bias"):
                systole.Model(CONFIG, {"model": {"initial_weights": path}}).evaluate(x, y)
            with self.assertRaisesRegex(TypeError, "save_safetensors: 'w': expected dtype float32, got float64"):
                systole.save_safetensors(path, {"w": np.zeros(3)})

    def test_resume_trace_and_retrace_act_as_in_accel_train(self):
        """checkpoint.resume, trace and retrace from systole.Model: a run
        resumed after one epoch ends with the weights of two epochs straight
        through; its trace and retrace dump are written."""
        x, y = clusters(self.rng, 128)
        with tempfile.TemporaryDirectory() as tmp:
            ckpt, trace, dump = (os.path.join(tmp, name) for name in ("ckpt", "trace.json", "dump"))
            straight = systole.Model(CONFIG, {"train": {"epochs": 2}})
            straight.fit(x, y, verbose=0)
            first = systole.Model(CONFIG, {"train": {"epochs": 1}, "checkpoint": {"dir": ckpt}})
            first.fit(x, y, verbose=0)
            del first  # its lock on the checkpoint directory goes with it
            resumed = systole.Model(CONFIG, {"train": {"epochs": 2}, "checkpoint": {"dir": ckpt, "resume": True},
                                             "trace": trace, "retrace": dump})
            history = resumed.fit(x, y, verbose=0)
            self.assertEqual(history.epoch, [1])
            for name, weight in straight.get_weights().items():
                np.testing.assert_array_equal(resumed.get_weights()[name], weight, err_msg=name)
            with open(trace) as f:
                self.assertGreater(len(json.load(f)["traceEvents"]), 0)
            self.assertEqual(np.load(os.path.join(dump, "train_inputs.npy")).shape, (128, 12))
            with self.assertRaisesRegex(ValueError, "retrace: the dump in .* retraces this run's first fit"):
                resumed.fit(x, y, verbose=0)
            with self.assertRaisesRegex(RuntimeError, r"ckpt is in use by systole.Model pid"):
                systole.Model(CONFIG, {"checkpoint": {"dir": ckpt}}).fit(x, y, verbose=0)

    def test_bad_arguments_raise(self):
        x, y = clusters(self.rng, 64)
        model = systole.Model(CONFIG)
        for error, pattern, call in [
                (TypeError, "x: expected dtype float32, got float64", lambda: model.fit(x.astype(np.float64), y)),
                (ValueError, r"y: expected \(64,\)", lambda: model.fit(x, y[:10])),
                (TypeError, "y: expected integer class indices or float32, got bool",
                 lambda: model.fit(x, y > 0)),
                (ValueError, "x and y go together", lambda: model.fit(x)),
                (ValueError, r"y: label 3 \(20000000\) is not exact in float32",
                 lambda: model.fit(x, np.where(np.arange(64) == 3, 20_000_000, y))),
                (ValueError, "model.classes: required when the labels are not class indices",
                 lambda: systole.Model(CONFIG).fit(x, np.full(64, 0.5, np.float32))),
                (ValueError, "label", lambda: systole.Model(CONFIG, {"model": {"classes": 2}}).fit(x, y, verbose=0)),
                (ValueError, "epochs must be at least 1", lambda: model.fit(x, y, epochs=0)),
                (ValueError, "epochs must be a whole number", lambda: model.fit(x, y, epochs=-1)),
                (ValueError, "not built", lambda: model.predict(x)),
                (ValueError, r"config: train.epochs", lambda: systole.Model({"train": {"epochs": "many"}})),
                (ValueError, r"config: .*nonesuch", lambda: systole.Model({"nonesuch": 1})),
                (ValueError, "cannot open", lambda: systole.Model("/nonexistent/config.yaml")),
                (TypeError, "expected a config dict", lambda: systole.Model(42)),
                (ValueError, r"overrides: train.global_batch", lambda: systole.Model(CONFIG, {"train": {"global_batch": -3}})),
                (TypeError, "overrides must be a dict", lambda: systole.Model(CONFIG, "devices: 2")),
                (ValueError, "train.global_batch: 32 is more than the 16 training examples",
                 lambda: systole.Model(CONFIG).fit(x[:16], y[:16])),
        ]:
            with self.subTest(pattern):
                with self.assertRaisesRegex(error, pattern):
                    call()
        model.fit(x, y, epochs=1, verbose=0)
        with self.assertRaisesRegex(ValueError, r"examples of shape \[3, 4\], but the model was built for \[12\]"):
            model.predict(x.reshape(64, 3, 4))


if __name__ == "__main__":
    unittest.main()
