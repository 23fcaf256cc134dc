#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The PyTorch reference of a Systole graph model (a model whose layers name
their inputs, Keras' functional API), built from the model description that
accel_train stores in every checkpoint and model.safetensors. Its
state_dict() has the names and shapes of Systole's tensors, so a
model.safetensors loads into it with load_state_dict(strict=True):

  <layer>.weight / .bias                    dense (torch.nn.Linear),
                                            layer_normalization (LayerNorm),
                                            position_embedding, embedding
                                            (torch.nn.Embedding)
  <layer>.query/.key/.value/.output.weight  multi_head_attention (Linear each)

Padding masks follow Systole's (and Keras') rules: an embedding with
mask_zero masks the positions whose id is 0; a layer's output keeps the
mask of its inputs (all of them, for add) when it keeps their positions;
attention leaves masked keys out (an example with none gets zeros) and the
average pooling averages over the tokens.

PyTorch computes in fp32 where the array rounds operands to bf16, so its
logits agree with Systole's to bf16 precision, not to the bit.
"""
import json
import math

import torch

FLAT_INPUT = "reference_model: only flat model inputs are built (the graph layers take [features] or rows)"


def layer_names(layers):
    """Each layer's name as Systole gives it: its `name`, or Keras' type,
    type_1, type_2, ... skipping names already taken."""
    used = {layer["name"] for layer in layers if "name" in layer}
    names = []
    for layer in layers:
        name = layer.get("name")
        if name is None:
            name, n = layer["type"], 1
            while name in used:
                name, n = f"{layer['type']}_{n}", n + 1
            used.add(name)
        names.append(name)
    return names


def inputs_of(text):
    """`inputs` as the description stores it: "[a, b]" or "a"."""
    return [part.strip() for part in text.strip("[]").split(",") if part.strip()]


class MultiHeadAttention(torch.nn.Module):
    """Self-attention as Systole's multi_head_attention computes it: the
    query scaled by 1 / sqrt(key_dim) before Q K^T, softmax over the keys,
    later positions left out under the causal mask."""

    def __init__(self, width, heads, key_dim, value_dim, bias, causal):
        super().__init__()
        self.heads, self.key_dim, self.value_dim, self.causal = heads, key_dim, value_dim, causal
        self.query = torch.nn.Linear(width, heads * key_dim, bias=bias)
        self.key = torch.nn.Linear(width, heads * key_dim, bias=bias)
        self.value = torch.nn.Linear(width, heads * value_dim, bias=bias)
        self.output = torch.nn.Linear(heads * value_dim, width, bias=bias)

    def forward(self, x, mask=None):
        n, t, _ = x.shape
        split = lambda y, d: y.reshape(n, t, self.heads, d).transpose(1, 2)  # n, heads, t, d
        q = split(self.query(x), self.key_dim) / math.sqrt(self.key_dim)
        k, v = split(self.key(x), self.key_dim), split(self.value(x), self.value_dim)
        scores = q @ k.transpose(-1, -2)
        seen = torch.ones(n, 1, t, t, dtype=torch.bool)  # (example, head, query, key)
        if self.causal:
            seen = seen & ~torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        if mask is not None:
            seen = seen & mask[:, None, None, :]
        any_key = seen.any(dim=-1, keepdim=True)  # a row with no key gets zeros, not NaN
        scores = scores.masked_fill(~seen, float("-inf")).masked_fill(~any_key, 0.0)
        heads = (torch.softmax(scores, dim=-1) * any_key) @ v
        return self.output(heads.transpose(1, 2).reshape(n, t, self.heads * self.value_dim))


class GraphModel(torch.nn.Module):
    """Each layer with parameters is a submodule under its layer's name; the
    bookkeeping lives in underscore names, which layers do not take."""

    def __init__(self, spec):
        super().__init__()
        layers = spec["layers"]
        self._names = layer_names(layers)
        if len(spec["input_shape"]) != 1:
            raise ValueError(FLAT_INPUT)
        shapes = {"input": list(spec["input_shape"])}
        self._inputs, self._kinds, self._options = [], [], []
        self._tables = set()  # embedding layers: Systole trains their rows with Adagrad
        modules = {}
        for i, (layer, name) in enumerate(zip(layers, self._names)):
            sources = inputs_of(layer["inputs"]) if "inputs" in layer else [self._names[i - 1] if i else "input"]
            shape = shapes[sources[0]]
            kind, option = layer["type"], None
            if kind == "dense":
                modules[name] = torch.nn.Linear(shape[-1], int(layer["units"]), bias=layer.get("use_bias", "true") == "true")
                option = layer.get("activation") == "relu"
                shape = shape[:-1] + [int(layer["units"])]
            elif kind == "reshape":
                shape = [int(d) for d in inputs_of(layer["target_shape"])]
                option = shape
            elif kind == "layer_normalization":
                modules[name] = torch.nn.LayerNorm(shape[-1], eps=float(layer.get("epsilon", "0.001")))
            elif kind == "position_embedding":
                modules[name] = torch.nn.Embedding(int(layer["sequence_length"]), shape[-1])
            elif kind == "embedding":
                if "," in layer["input_dim"]:
                    raise ValueError(f"reference_model: one table per column is not built ({name})")
                modules[name] = torch.nn.Embedding(int(layer["input_dim"]), int(layer["output_dim"]))
                option = layer.get("mask_zero", "false") == "true"
                shape = shape + [int(layer["output_dim"])]
                self._tables.add(name)
            elif kind == "multi_head_attention":
                heads = int(layer["num_heads"])
                key_dim = int(layer.get("key_dim", shape[-1] // heads))
                modules[name] = MultiHeadAttention(shape[-1], heads, key_dim, int(layer.get("value_dim", key_dim)),
                                                   layer.get("use_bias", "true") == "true",
                                                   layer.get("causal", "false") == "true")
            elif kind == "gelu":
                option = "tanh" if layer.get("approximate", "false") == "true" else "none"
            elif kind == "global_average_pooling1d":
                shape = shape[1:]
            elif kind not in ("add", "relu", "softmax", "dropout"):
                raise ValueError(f"reference_model: no reference for layer type '{kind}' ({name})")
            shapes[name] = shape
            self._inputs.append(sources)
            self._kinds.append(kind)
            self._options.append(option)
        for name, module in modules.items():
            self.add_module(name, module)
        # A list model's checkpoint names its tensors by torch.nn.Sequential's
        # indices, as accel_train's "torch:" line builds it (a dense layer
        # with a ReLU takes two places); a graph's by layer names.
        self._sequential_names = {}
        if not any("name" in layer or "inputs" in layer for layer in layers):
            index = 0
            for layer, name in zip(layers, self._names):
                if name in modules:
                    self._sequential_names[str(index)] = name
                index += 2 if layer["type"] == "dense" and layer.get("activation") == "relu" else 1

    def from_checkpoint(self, tensors):
        """A checkpoint's tensors under this module's names."""
        renamed = {}
        for key, value in tensors.items():
            prefix, _, rest = key.partition(".")
            renamed[f"{self._sequential_names.get(prefix, prefix)}.{rest}"] = value
        return renamed

    def forward(self, x):
        values = {"input": x.reshape(len(x), -1)}
        masks = {"input": None}  # per tensor: (example, position) True at tokens, or None
        for name, kind, option, sources in zip(self._names, self._kinds, self._options, self._inputs):
            y = values[sources[0]]
            mask = None
            if kind == "dense":
                y = getattr(self, name)(y)
                y = torch.relu(y) if option else y
            elif kind == "reshape":
                y = y.reshape(len(y), *option)
            elif kind == "layer_normalization":
                y = getattr(self, name)(y)
            elif kind == "multi_head_attention":
                y = getattr(self, name)(y, masks[sources[0]])
            elif kind == "embedding":
                ids = y.long()
                y = getattr(self, name)(ids)
                mask = ids != 0 if option else None
            elif kind == "position_embedding":
                y = getattr(self, name).weight[: y.shape[1]].expand_as(y)
            elif kind == "add":
                for source in sources[1:]:
                    y = y + values[source]
            elif kind == "gelu":
                y = torch.nn.functional.gelu(y, approximate=option)
            elif kind == "softmax":
                y = torch.softmax(y, dim=-1)
            elif kind == "relu":
                y = torch.relu(y)
            elif kind == "global_average_pooling1d":
                given = masks[sources[0]]
                if given is None:
                    y = y.mean(dim=1)
                else:
                    weights = given.to(y.dtype)[:, :, None]
                    y = (y * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
            if mask is None and kind != "reshape" and y.dim() >= 3:
                for source in sources:  # the mask of the inputs that keep these positions
                    given = masks[source]
                    if given is not None and values[source].shape[1] == y.shape[1]:
                        mask = given if mask is None else mask & given
            values[name], masks[name] = y, mask
        return values[self._names[-1]]


def from_description(text):
    """The reference of the model description stored in a checkpoint's
    metadata ("model")."""
    return GraphModel(json.loads(text))
