# SPDX-License-Identifier: Apache-2.0
"""TensorFlow and TensorBoard as the oracle for Systole's files: what
accel_data, accel_train and systole.Model write, TensorFlow reads (TFRecord
plain, GZIP and ZLIB through tf.data and tf.io.parse_single_example;
event files through TensorBoard's EventAccumulator), record for record and
value for value; and what TensorFlow writes (tf.io.TFRecordWriter, Keras'
TensorBoard callback, tf.summary), Systole reads the same way."""

import glob
import math
import os
import re
import subprocess
import sys
import tempfile
import unittest

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow's import: no banner
import tensorflow as tf  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402

import faulthandler  # noqa: E402
faulthandler.enable()
import systole  # noqa: E402

SEED = int(os.environ.get("SYSTOLE_TEST_SEED", "20261203"))
print(f"seed {SEED} (SYSTOLE_TEST_SEED)")

ACCEL_DATA = os.environ["SYSTOLE_ACCEL_DATA"]
ACCEL_TRAIN = os.environ["SYSTOLE_ACCEL_TRAIN"]
MAKE_IDX = os.environ["SYSTOLE_MAKE_IDX"]
# accel_data's --compression and TFRecordOptions' compression_type.
COMPRESSIONS = {"none": "", "gzip": "GZIP", "zlib": "ZLIB"}


def awkward_floats(rng, count):
    """float32 values of every kind: signed zeros, subnormals, the extremes,
    values with all 24 bits of mantissa, integers, tiny and huge."""
    special = np.array([0.0, -0.0, 1.0, -1.0, 1e-45, -1e-45, 1.1754942e-38, 3.4028235e38, -3.4028235e38,
                        0.1, 1 / 3, 16777217.0], dtype=np.float32)
    bits = rng.integers(0, 2**32, count, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    # No NaN or infinity: a NaN's payload does not survive CSV text.
    values = np.where(np.isfinite(values), values, np.float32(2.5))
    return np.concatenate([special, values])[:count] if count >= len(special) else special[:count]


def f32_bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def tensorboard_scalars(directory):
    """{tag: [(step, value)]} of every event file under `directory`, as
    TensorBoard reads them: a simple_value scalar, or a scalar tensor (what
    TF2's tf.summary writes)."""
    found = {}
    for path in sorted(glob.glob(os.path.join(directory, "**", "events.out.tfevents.*"), recursive=True)):
        accumulator = event_accumulator.EventAccumulator(
            path, size_guidance={event_accumulator.SCALARS: 0, event_accumulator.TENSORS: 0})
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            found.setdefault(tag, []).extend((e.step, e.value) for e in accumulator.Scalars(tag))
        for tag in accumulator.Tags()["tensors"]:
            if accumulator.SummaryMetadata(tag).plugin_data.plugin_name != "scalars":
                continue  # Keras' model config (text), histograms
            for e in accumulator.Tensors(tag):
                found.setdefault(tag, []).append((e.step, float(tf.make_ndarray(e.tensor_proto))))
    return found


def systole_scalars(directory, doubles=()):
    """{tag: [(step, value)]} of every event file under `directory`, as
    `accel_data events` reads them: the shortest text that reads back to
    the value, a float32 but for the tags in `doubles`."""
    found = {}
    for path in sorted(glob.glob(os.path.join(directory, "**", "events.out.tfevents.*"), recursive=True)):
        out = subprocess.run([ACCEL_DATA, "events", path], check=True, capture_output=True, text=True).stdout
        lines = out.splitlines()
        assert lines[-1].startswith(path + ": ") and "every CRC correct" in lines[-1], out
        for line in lines[:-1]:
            step, tag, text = line.split(" ")
            value = float(text) if tag in doubles else float(np.float32(text))
            found.setdefault(tag, []).append((int(step), value))
    return found

def assert_epochs_logged(test, logs, history):
    """TensorBoard reads train/ and validation/ as Systole does, and each
    split's epoch scalars are the run's own: history's (metric -> [per
    epoch]; val_ for validation) to the float32 bit."""
    test.assertEqual(systole_scalars(logs), tensorboard_scalars(logs))
    for split, prefix in (("train", ""), ("validation", "val_")):
        scalars = tensorboard_scalars(os.path.join(logs, split))
        for key, values in history.items():
            if not key.startswith(prefix) or (not prefix and key.startswith("val_")):
                continue
            with test.subTest(split=split, key=key):
                logged = scalars["epoch_" + key[len(prefix):]]
                test.assertEqual([step for step, _ in logged], list(range(len(values))))
                np.testing.assert_array_equal(f32_bits([v for _, v in logged]), f32_bits(values))


class SystoleWritesTensorFlowReads(unittest.TestCase):
    def test_csv_records_parse_to_the_values_written_in_every_compression(self):
        rng = np.random.default_rng(SEED)
        count = 37
        scores = awkward_floats(rng, count)
        counts = np.concatenate([[0, -1, 2**63 - 1, -2**63], rng.integers(-2**63, 2**63 - 1, count - 4)])
        names = [f"name {i} é\u4e2d" if i % 3 else "" for i in range(count)]
        with tempfile.TemporaryDirectory() as tmp:
            csv = os.path.join(tmp, "rows.csv")
            with open(csv, "w", encoding="utf-8") as out:
                out.write("name,score,count\n")
                for name, score, whole in zip(names, scores, counts):
                    out.write(f'"{name}",{float(score)!r},{int(whole)}\n')
            features = {"name": tf.io.FixedLenFeature([], tf.string),
                        "score": tf.io.FixedLenFeature([], tf.float32),
                        "count": tf.io.FixedLenFeature([], tf.int64)}
            for compression, tf_name in COMPRESSIONS.items():
                with self.subTest(compression=compression):
                    prefix = os.path.join(tmp, compression)
                    subprocess.run([ACCEL_DATA, "--compression", compression, "from-csv", "--csv", csv, "--out",
                                    prefix, "--shards", "3", "--float", "score", "--int64", "count"],
                                   check=True, stdout=subprocess.DEVNULL)
                    files = sorted(glob.glob(prefix + "-*.tfrecord"))
                    self.assertEqual(len(files), 3)
                    records = [tf.io.parse_single_example(r, features)
                               for r in tf.data.TFRecordDataset(files, compression_type=tf_name)]
                    self.assertEqual(len(records), count)
                    # Shards take records round-robin or in runs: match them by name and count.
                    got = sorted((r["count"].numpy().item(), r["name"].numpy().decode(),
                                  int(f32_bits(r["score"].numpy()))) for r in records)
                    want = sorted((int(c), n, int(b)) for c, n, b in zip(counts, names, f32_bits(scores)))
                    self.assertEqual(got, want)

    def test_fashion_mnist_records_hold_the_idx_pixels(self):
        with tempfile.TemporaryDirectory() as tmp:
            idx = os.path.join(tmp, "idx")
            os.mkdir(idx)
            subprocess.run([MAKE_IDX, idx, "200", "30"], check=True, stdout=subprocess.DEVNULL)
            images, labels = read_idx(os.path.join(idx, "train-images-idx3-ubyte.gz"),
                                      os.path.join(idx, "train-labels-idx1-ubyte.gz"))
            for compression, tf_name in COMPRESSIONS.items():
                with self.subTest(compression=compression):
                    out = os.path.join(tmp, "fm-" + compression)
                    subprocess.run([ACCEL_DATA, "--compression", compression, "fashion-mnist", "--data-dir", idx,
                                    "--out", out, "--shards", "2", "--validation-examples", "20"],
                                   check=True, stdout=subprocess.DEVNULL)
                    features = {"image": tf.io.FixedLenFeature([28, 28, 1], tf.float32),
                                "label": tf.io.FixedLenFeature([], tf.int64)}
                    seen = []
                    for split in ("train", "validation"):
                        files = sorted(glob.glob(os.path.join(out, split + "-*.tfrecord")))
                        for record in tf.data.TFRecordDataset(files, compression_type=tf_name):
                            example = tf.io.parse_single_example(record, features)
                            seen.append((example["image"].numpy(), example["label"].numpy()))
                    self.assertEqual(len(seen), len(images))
                    # Every record is one IDX example, its pixels p as float32(p) / 255.
                    want = {(int(label), f32_bits(image.reshape(28, 28, 1) / np.float32(255)).tobytes())
                            for image, label in zip(images.astype(np.float32), labels)}
                    got = {(int(label), f32_bits(image).tobytes()) for image, label in seen}
                    self.assertEqual(got, want)


def read_idx(images_path, labels_path):
    import gzip
    with gzip.open(images_path) as f:
        data = f.read()
    count, rows, cols = (int.from_bytes(data[i:i + 4], "big") for i in (4, 8, 12))
    images = np.frombuffer(data, np.uint8, count * rows * cols, 16).reshape(count, rows, cols)
    with gzip.open(labels_path) as f:
        labels = np.frombuffer(f.read(), np.uint8, count, 8)
    return images, labels


class TensorFlowWritesSystoleReads(unittest.TestCase):
    def test_tfrecord_writer_files_train_on_the_values_written(self):
        rng = np.random.default_rng(SEED + 1)
        count, width = 24, 7
        pixels = awkward_floats(rng, count * width).reshape(count, width)
        extra = rng.standard_normal((count, 2)).astype(np.float32)
        labels = rng.integers(0, 5, count)
        with tempfile.TemporaryDirectory() as tmp:
            for compression, tf_name in COMPRESSIONS.items():
                with self.subTest(compression=compression):
                    path = os.path.join(tmp, f"train-{compression}.tfrecord")
                    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type=tf_name)) as writer:
                        for x, e, y in zip(pixels, extra, labels):
                            feature = {"x": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                                       "extra": tf.train.Feature(float_list=tf.train.FloatList(value=e)),
                                       "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[y])),
                                       "note": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"\x00\xff"]))}
                            writer.write(tf.train.Example(features=tf.train.Features(feature=feature))
                                         .SerializeToString())
                    config = {"devices": 1, "array": "16x16", "model": {"hidden": [8], "classes": 5},
                              "data": {"format": "tfrecord", "train": path, "shuffle_buffer": 0,
                                       "features": {"x": {"dtype": "float32", "shape": [width]},
                                                    "extra": {"dtype": "float32", "shape": [2]},
                                                    "label": {"dtype": "int64"}},
                                       "inputs": ["x", "extra"], "label": "label"},
                              "train": {"global_batch": 8, "epochs": 1}}
                    batches = list(systole.RecordDataset(config))
                    x = np.concatenate([b[0] for b in batches])
                    y = np.concatenate([b[1] for b in batches])
                    np.testing.assert_array_equal(f32_bits(x), f32_bits(np.concatenate([pixels, extra], axis=1)))
                    np.testing.assert_array_equal(y, labels)

    def test_systole_imported_before_tensorflow_reads_too(self):
        # Either order of imports: the extension's protobuf is its own.
        script = """if True:
            import sys, numpy as np, systole, tensorflow as tf
            path = sys.argv[1]
            with tf.io.TFRecordWriter(path) as writer:
                for i in range(4):
                    x = tf.train.Feature(float_list=tf.train.FloatList(value=[i / 3, -i]))
                    y = tf.train.Feature(int64_list=tf.train.Int64List(value=[i % 2]))
                    writer.write(tf.train.Example(features=tf.train.Features(feature={"x": x, "y": y}))
                                 .SerializeToString())
            config = {"devices": 1, "array": "16x16", "model": {"hidden": [4], "classes": 2},
                      "data": {"format": "tfrecord", "train": path, "shuffle_buffer": 0, "inputs": ["x"], "label": "y",
                               "features": {"x": {"dtype": "float32", "shape": [2]}, "y": {"dtype": "int64"}}},
                      "train": {"global_batch": 4, "epochs": 1}}
            (x, y), = list(systole.RecordDataset(config))
            want = np.array([[i / 3, -i] for i in range(4)], np.float32)
            assert x.view(np.uint32).tolist() == want.view(np.uint32).tolist() and y.tolist() == [0, 1, 0, 1], (x, y)
            print("read")
        """
        with tempfile.TemporaryDirectory() as tmp:
            done = subprocess.run([sys.executable, "-c", script, os.path.join(tmp, "r.tfrecord")],
                                  capture_output=True, text=True)
            self.assertEqual((done.returncode, done.stdout), (0, "read\n"), done.stderr[-2000:])

    def test_tf_summary_scalars_read_to_their_bits(self):
        values = np.array([0.0, -0.0, 1e-45, -3.4028235e38, 0.1, 1 / 3, 12345.678], dtype=np.float32)
        wide = [0.1, -1e-300, 1e300, 2.0**-1074, 1 / 3]
        with tempfile.TemporaryDirectory() as tmp:
            writer = tf.summary.create_file_writer(tmp)
            with writer.as_default():
                for step, value in enumerate(values):
                    tf.summary.scalar("awkward", value, step=step * 3 - 1)
                # tf.summary.scalar casts to float32; a float64 tensor of the
                # scalars plugin, as other writers give, keeps its 64 bits.
                metadata = tf.compat.v1.SummaryMetadata()
                metadata.plugin_data.plugin_name = "scalars"
                for step, value in enumerate(wide):
                    tf.summary.write("wide", tf.constant(value, tf.float64), step=step, metadata=metadata)
            writer.close()
            got = systole_scalars(tmp, doubles=("wide",))
            self.assertEqual([s for s, _ in got["awkward"]], [s * 3 - 1 for s in range(len(values))])
            np.testing.assert_array_equal(f32_bits([v for _, v in got["awkward"]]), f32_bits(values))
            self.assertEqual([math.copysign(1, v) for _, v in got["awkward"]][:2], [1, -1])  # -0.0 stays
            self.assertEqual(got["wide"], list(enumerate(wide)))
            self.assertEqual(got, tensorboard_scalars(tmp))

    def test_keras_tensorboard_callback_files_read_as_keras_logged(self):
        rng = np.random.default_rng(SEED + 2)
        x = rng.standard_normal((64, 5)).astype(np.float32)
        y = (x.sum(axis=1) > 0).astype(np.int64)
        model = tf.keras.Sequential([tf.keras.Input((5,)), tf.keras.layers.Dense(4, activation="relu"),
                                     tf.keras.layers.Dense(2)])
        model.compile(optimizer="adam", metrics=["accuracy"],
                      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        with tempfile.TemporaryDirectory() as tmp:
            history = model.fit(x, y, epochs=3, batch_size=16, validation_split=0.25, verbose=0,
                                callbacks=[tf.keras.callbacks.TensorBoard(log_dir=tmp, update_freq="epoch")])
            self.assertEqual(sorted(history.history), ["accuracy", "loss", "val_accuracy", "val_loss"])
            assert_epochs_logged(self, tmp, history.history)


class TensorBoardReadsSystolesEvents(unittest.TestCase):
    def test_accel_train_and_systole_model_scalars_read_by_tensorboard(self):
        with tempfile.TemporaryDirectory() as tmp:
            data = os.path.join(tmp, "data")
            os.mkdir(data)
            subprocess.run([MAKE_IDX, data, "320", "64"], check=True, stdout=subprocess.DEVNULL)
            logs = os.path.join(tmp, "accel_train")
            out = subprocess.run([ACCEL_TRAIN, "--data-dir", data, "--validation-examples", "64", "--global-batch",
                                  "32", "--array", "16x16", "--hidden", "16", "--epochs", "2", "--tensorboard", logs],
                                 check=True, capture_output=True, text=True).stdout
            # accel_train prints 4 decimals; the files hold the float32 values.
            printed = re.findall(r" - loss: ([0-9.]+) - accuracy: ([0-9.]+) - val_loss: ([0-9.]+) - "
                                 r"val_accuracy: ([0-9.]+)", out)
            self.assertEqual(len(printed), 2, out)
            scalars = {split: tensorboard_scalars(os.path.join(logs, split)) for split in ("train", "validation")}
            self.assertEqual(systole_scalars(logs), tensorboard_scalars(logs))
            for epoch, values in enumerate(printed):
                logged = [scalars["train"]["epoch_loss"], scalars["train"]["epoch_accuracy"],
                          scalars["validation"]["epoch_loss"], scalars["validation"]["epoch_accuracy"]]
                for text, series in zip(values, logged):
                    self.assertEqual(series[epoch][0], epoch)
                    self.assertAlmostEqual(series[epoch][1], float(text), delta=5e-5)

            logs = os.path.join(tmp, "model")
            rng = np.random.default_rng(SEED + 3)
            x = rng.standard_normal((96, 6)).astype(np.float32)
            y = (x[:, 0] > 0).astype(np.int64)
            model = systole.Model({"devices": 2, "array": "16x16", "model": {"hidden": [8], "classes": 2},
                                   "train": {"epochs": 3, "global_batch": 16}, "tensorboard": {"dir": logs}})
            history = model.fit(x, y, validation_data=(x[:32], y[:32]), verbose=0)
            self.assertIn("val_loss", history.history)
            assert_epochs_logged(self, logs, history.history)


if __name__ == "__main__":
    unittest.main()
