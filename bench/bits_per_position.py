#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Cross-entropy in bits per labelled position of logits (accel_train
predict's .npy, [examples, positions, classes]) against labels
([examples, positions]), leaving out the positions labelled IGNORE_CLASS:
a language model's bits per character. Prints `bits_per_position B`.

Usage: bits_per_position.py LOGITS_NPY LABELS_NPY IGNORE_CLASS
"""
import math
import sys

import numpy as np


def main():
    logits = np.load(sys.argv[1]).astype(np.float64)
    labels = np.load(sys.argv[2]).astype(np.int64)
    ignore = int(sys.argv[3])
    if logits.shape[:2] != labels.shape:
        sys.exit(f"bits_per_position: logits {logits.shape} do not match labels {labels.shape}")
    top = logits.max(-1, keepdims=True)
    log_sum = np.log(np.exp(logits - top).sum(-1)) + top[..., 0]
    picked = np.take_along_axis(logits, labels[..., None], -1)[..., 0]
    counted = labels != ignore
    bits = ((log_sum - picked) * counted).sum() / counted.sum() / math.log(2)
    print(f"bits_per_position {bits:.4f}")


if __name__ == "__main__":
    main()
