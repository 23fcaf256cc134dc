#!/usr/bin/python3
"""The PyTorch peer of accel_train: the same MLP, initialisation, data split,
batch, optimizer and epochs on the CPU (float32), timed over the training
steps only. Prints `samples_per_s` and `test_accuracy` lines for bench/run.

Usage: train_pytorch.py DATA_DIR EPOCHS GLOBAL_BATCH THREADS
"""
import gzip
import sys
import time

import numpy as np
import torch


def read_idx(path, dimensions):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    assert magic == 0x800 | dimensions, f"{path}: bad magic {magic:#x}"
    shape = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dimensions)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * dimensions).reshape(shape)


def load(directory, prefix):
    images = read_idx(f"{directory}/{prefix}-images-idx3-ubyte.gz", 3)
    labels = read_idx(f"{directory}/{prefix}-labels-idx1-ubyte.gz", 1)
    x = torch.from_numpy(images.reshape(len(images), -1).astype(np.float32) / 255.0)
    return x, torch.from_numpy(labels.astype(np.int64))


def main():
    directory, epochs, batch, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    x, y = load(directory, "train")
    x_train, y_train = x[:55000], y[:55000]  # accel_train holds out the last 5000
    x_test, y_test = load(directory, "t10k")

    layers = []
    widths = [784, 256, 128, 10]
    for i in range(len(widths) - 1):
        linear = torch.nn.Linear(widths[i], widths[i + 1])
        torch.nn.init.xavier_uniform_(linear.weight)  # Glorot uniform, as accel_train
        torch.nn.init.zeros_(linear.bias)
        layers.append(linear)
        if i + 2 < len(widths):
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-7)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(1)

    seconds, samples = 0.0, 0
    for _ in range(epochs):
        order = torch.randperm(len(x_train), generator=generator)
        steps = len(order) // batch  # drop the remainder, as accel_train
        start = time.perf_counter()
        for s in range(steps):
            index = order[s * batch:(s + 1) * batch]
            optimizer.zero_grad(set_to_none=True)
            loss = loss_fn(model(x_train[index]), y_train[index])
            loss.backward()
            optimizer.step()
        seconds += time.perf_counter() - start
        samples += steps * batch
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    print(f"samples_per_s {samples / seconds:.0f}")
    print(f"test_accuracy {accuracy:.4f}")


if __name__ == "__main__":
    main()
