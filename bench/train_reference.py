#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Retraces an accel_train run in PyTorch, step for step: the same initial
weights (DIR/initial.safetensors, loaded with strict=True into
bench/reference_model.py's module), the same global batches in the same
order (DIR/train_*.npy) and the same update rules and hyper-parameters, so
the two runs differ only in the numerics (the array's bf16 operands and
fixed-order fp32 sums against PyTorch's fp32 on this CPU). `accel_train
--retrace DIR` writes DIR.

  dense tensors:     Adam (beta1 0.9, beta2 0.999, epsilon --epsilon: 1e-7 by
                     default, Systole's and Keras', where PyTorch's is 1e-8)
  embedding tables:  Adagrad on the rows a step touches, as Systole's
                     tables: accumulator (from 0.1) += g^2,
                     w -= lr * g / (sqrt(accumulator) + 1e-7); a row a step
                     does not touch has g = 0 and keeps its value
  loss:              Systole's sparse_categorical_crossentropy: the mean
                     over the global batch of each example's loss; with a
                     label per position (a language model) an example's
                     loss is the mean over its positions whose label is
                     not --ignore-class

Prints one line per epoch (the training loss over the epoch, the
validation set's loss, accuracy and bits per labelled position after it),
then `test_loss L`, `test_accuracy A`, `validation_bits_per_position B`
and `samples_per_s R` (training steps only, on this CPU's threads).

With --array the module's products run on the simulated array through
systole.torch (accelerate): the same model trained by systole.torch, step
for step as accel_train trained it.

Usage: train_reference.py DIR --steps-per-epoch N --global-batch B
           --learning-rate LR [--epsilon E] [--embedding-learning-rate LR]
           [--ignore-class C] [--threads N] [--array]
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_model  # noqa: E402
from check_torch_load import load_safetensors  # noqa: E402


def sparse_cross_entropy(logits, labels, ignore_class):
    """Systole's sparse_categorical_crossentropy: per example, the mean over
    its labelled positions (all but ignore_class's), summed over examples;
    the sum of the labelled positions' losses; and their count."""
    if labels.dim() == 1:
        losses = torch.nn.functional.cross_entropy(logits, labels, reduction="none")
        return losses.sum(), losses.sum(), len(labels)
    losses = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction="none")
    counted = labels != ignore_class if ignore_class is not None else torch.ones_like(labels, dtype=torch.bool)
    losses = losses * counted
    per_example = losses.sum(1) / counted.sum(1).clamp(min=1)
    return per_example.sum(), losses.sum(), int(counted.sum())


def evaluate(model, inputs, labels, ignore_class, batch=512):
    """Mean loss (Systole's), accuracy over the labelled positions, and
    bits per labelled position, over a set in inference mode."""
    total_loss, position_loss, positions, correct = 0.0, 0.0, 0, 0
    with torch.no_grad():
        for start in range(0, len(inputs), batch):
            x = torch.from_numpy(inputs[start:start + batch])
            y = torch.from_numpy(labels[start:start + batch]).long()
            logits = model(x)
            loss, summed, counted = sparse_cross_entropy(logits, y, ignore_class)
            total_loss, position_loss, positions = total_loss + loss.item(), position_loss + summed.item(), positions + counted
            hits = logits.argmax(-1) == y
            if y.dim() == 2 and ignore_class is not None:
                hits = hits & (y != ignore_class)
            correct += hits.sum().item()
    return total_loss / len(inputs), correct / positions, position_loss / positions / math.log(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dir")
    parser.add_argument("--steps-per-epoch", type=int, required=True)
    parser.add_argument("--global-batch", type=int, required=True)
    parser.add_argument("--learning-rate", type=float, required=True)
    parser.add_argument("--embedding-learning-rate", type=float, default=0.05)
    parser.add_argument("--embedding-initial-accumulator", type=float, default=0.1)
    parser.add_argument("--ignore-class", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--epsilon", type=float, default=1e-7, help="Adam's (the config's train.epsilon)")
    parser.add_argument("--array", action="store_true", help="run the products on the array (systole.torch)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    tensors, metadata = load_safetensors(os.path.join(args.dir, "initial.safetensors"))
    model = reference_model.from_description(metadata["model"])
    model.load_state_dict(model.from_checkpoint(tensors), strict=True)
    if args.array:
        import systole.torch as st
        st.configure("sw_emu", threads=args.threads)
        st.accelerate(model)
    tables = {name + ".weight" for name, module in model.named_modules()
              if isinstance(module, torch.nn.Embedding) and name in model._tables}
    dense = [p for name, p in model.named_parameters() if name not in tables]
    sparse = [p for name, p in model.named_parameters() if name in tables]
    adam = torch.optim.Adam(dense, lr=args.learning_rate, betas=(0.9, 0.999), eps=args.epsilon)
    accumulators = [torch.full_like(p, args.embedding_initial_accumulator) for p in sparse]

    load = lambda name: np.load(os.path.join(args.dir, name))
    inputs, labels = load("train_inputs.npy"), load("train_labels.npy")
    sets = {}
    for split in ("validation", "test"):
        if os.path.exists(os.path.join(args.dir, f"{split}_inputs.npy")):
            sets[split] = (load(f"{split}_inputs.npy"), load(f"{split}_labels.npy"))
    batch, steps = args.global_batch, len(inputs) // args.global_batch
    if steps * batch != len(inputs) or steps % args.steps_per_epoch:
        sys.exit(f"train_reference: {len(inputs)} recorded examples are not whole epochs of "
                 f"{args.steps_per_epoch} batches of {batch}")

    seconds = 0.0
    for epoch in range(steps // args.steps_per_epoch):
        model.train()
        epoch_loss = 0.0
        begin = time.perf_counter()
        for step in range(epoch * args.steps_per_epoch, (epoch + 1) * args.steps_per_epoch):
            x = torch.from_numpy(inputs[step * batch:(step + 1) * batch])
            y = torch.from_numpy(labels[step * batch:(step + 1) * batch]).long()
            logits = model(x)
            loss = sparse_cross_entropy(logits, y, args.ignore_class)[0] / batch
            adam.zero_grad(set_to_none=False)
            for p in sparse:
                p.grad = None
            loss.backward()
            adam.step()
            with torch.no_grad():
                for p, accumulator in zip(sparse, accumulators):
                    accumulator += p.grad * p.grad
                    p -= args.embedding_learning_rate * p.grad / (accumulator.sqrt() + 1e-7)
            epoch_loss += loss.item() * batch
        seconds += time.perf_counter() - begin
        line = f"epoch {epoch + 1} loss {epoch_loss / (args.steps_per_epoch * batch):.4f}"
        model.eval()
        if "validation" in sets:
            val_loss, val_accuracy, val_bits = evaluate(model, *sets["validation"], args.ignore_class)
            line += f" val_loss {val_loss:.4f} val_accuracy {val_accuracy:.4f} val_bits {val_bits:.4f}"
        print(line, flush=True)
    if "test" in sets:
        test_loss, test_accuracy, _ = evaluate(model, *sets["test"], args.ignore_class)
        print(f"test_loss {test_loss:.4f}")
        print(f"test_accuracy {test_accuracy:.4f}")
    if "validation" in sets:
        print(f"validation_bits_per_position {val_bits:.4f}")
    print(f"samples_per_s {steps * batch / seconds:.1f}")
    print(f"threads {torch.get_num_threads()}")


if __name__ == "__main__":
    main()
