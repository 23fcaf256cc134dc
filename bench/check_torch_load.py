#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Loads accel_train's model.safetensors into PyTorch with strict=True and
compares PyTorch's logits with accel_train predict's on the same inputs. A
list model is the torch.nn.Sequential of its `torch:` code; a graph model
(its layers name their inputs) is bench/reference_model.py's module, built
from the model description in the file's metadata (give "-" as the code).
PyTorch computes in fp32 where the array rounds operands to bf16, so the
logits agree to bf16 precision, not to the bit. Prints `max_logit_diff`
and `argmax_agreement` lines; exits 1 if loading fails.

Usage: check_torch_load.py MODEL_SAFETENSORS TORCH_CODE|- INPUT_NPY LOGITS_NPY
(the safetensors file is parsed here: Debian 12 has no safetensors package)
"""
import json
import struct
import sys

import numpy as np
import torch

import reference_model

DTYPES = {"F32": np.float32, "I64": np.int64}


def load_safetensors(path):
    """The tensors by name, and the metadata."""
    with open(path, "rb") as f:
        data = f.read()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        array = np.frombuffer(body[begin:end], DTYPES[entry["dtype"]]).reshape(entry["shape"])
        tensors[name] = torch.from_numpy(array.copy())
    return tensors, header.get("__metadata__", {})


def main():
    path, code, input_path, logits_path = sys.argv[1:5]
    tensors, metadata = load_safetensors(path)
    if code == "-":
        model = reference_model.from_description(metadata["model"])
        tensors = model.from_checkpoint(tensors)
    else:
        model = eval(code, {"torch": torch})
    model.load_state_dict(tensors, strict=True)
    model.eval()
    x = torch.from_numpy(np.load(input_path).astype(np.float32))
    if any(isinstance(m, torch.nn.Conv2d) for m in model.modules()):
        x = x.reshape(len(x), 1, x.shape[1], x.shape[2])
    else:
        x = x.reshape(len(x), -1)
    with torch.no_grad():
        theirs = model(x).numpy()
    ours = np.load(logits_path)
    print(f"max_logit_diff {np.abs(theirs - ours).max():.4f}")
    print(f"argmax_agreement {(theirs.argmax(1) == ours.argmax(1)).mean():.4f}")


if __name__ == "__main__":
    main()
