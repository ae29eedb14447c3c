"""Malformed descriptors and passes the kernel must refuse with an exception (never a crash, never a read or
write outside what it was handed): each case mutates one field of a valid tiny model's."""

from __future__ import annotations

import math

import numpy as np
import torch
from odd_shapes import backend_of, tiny_model


def _valid(build):
    from app.native.build import ModuleFloats, model_fields, parts_of

    model = tiny_model("narrow-attention")
    parts = parts_of(model.config, ModuleFloats(model))
    return model, parts, model_fields(model.config, parts, build)


def _layer(fields, **change):
    layers = [dict(layer) for layer in fields["parts"]]
    layers[0].update(change)
    return {**fields, "parts": layers}


def model_cases(build):
    """(name, keywords) of Model calls that must raise."""
    model, parts, ok = _valid(build)
    other = parts["1.o"]  # [hidden, attention] where qkv sits: shapes that differ
    layer0 = ok["parts"][0]
    no_bias = dict(layer0)
    del no_bias["qkv_bias"]
    yield "hidden changed", {**ok, "hidden": ok["hidden"] + 32}
    yield "heads changed", {**ok, "heads": ok["heads"] * 2}
    yield "kv heads changed", {**ok, "kv_heads": 2}
    yield "head dim changed", {**ok, "head_dim": ok["head_dim"] * 2}
    yield "ffn changed", {**ok, "ffn": ok["ffn"] + 32}
    yield "more layers than parts", {**ok, "layers": ok["layers"] + 1}
    yield "group over 16", {**ok, "heads": 34, "kv_heads": 2}
    yield "zero kv heads", {**ok, "kv_heads": 0}
    yield "odd head dim", {**ok, "head_dim": 15}
    yield "narrow rotary table", {**ok, "cos": ok["cos"][:, :4].copy(), "sin": ok["sin"][:, :4].copy()}
    yield "positions beyond the table", {**ok, "max_positions": ok["max_positions"] + 1}
    yield "norm too short", {**ok, "norm": ok["norm"][:-1].copy()}
    yield "float64 norm", {**ok, "norm": ok["norm"].astype(np.float64)}
    yield "vocabulary past the embedding", {**ok, "vocab": ok["embed"].n + 1}  # a head may hold fewer rows (a draft's subset)
    yield "NaN epsilon", {**ok, "eps": math.nan}
    yield "negative layers", {**ok, "layers": -1, "parts": []}
    yield "o where qkv goes", _layer(ok, qkv=other.native(build))
    yield "missing layer key", {**ok, "parts": [no_bias, *ok["parts"][1:]]}
    yield "extra layer key", _layer(ok, extra=None)
    yield "a vector where a matrix goes", _layer(ok, down=ok["norm"])
    yield "short attention norm", _layer(ok, attn_norm=ok["norm"][:8].copy())
    yield "short bias", _layer(ok, qkv_bias=np.zeros(3, np.float32))
    yield "strided norm", {**ok, "norm": np.zeros(2 * ok["hidden"], np.float32)[::2]}


def matrix_cases():
    """(name, Matrix arguments) that must raise."""
    record = 544  # Q8_0
    yield "unknown kind", (9, 16, 32, np.zeros(record, np.uint8))
    yield "rows not a panel", (2, 15, 32, np.zeros(record, np.uint8))
    yield "inputs not a block", (2, 16, 31, np.zeros(record, np.uint8))
    yield "too few bytes", (2, 16, 64, np.zeros(record, np.uint8))
    yield "too many bytes", (2, 16, 32, np.zeros(record + 1, np.uint8))
    yield "float data", (2, 16, 32, np.zeros(record // 4, np.float32))
    yield "huge rows", (2, 16 << 40, 32, np.zeros(record, np.uint8))
    yield "negative inputs", (2, 16, -32, np.zeros(record, np.uint8))


def pass_cases(native):
    """(name, forward arguments) that must raise, against a valid model and cache."""
    w = native.weights
    cache = native.new_cache()
    keys, values = cache.buffers
    tokens, positions = np.arange(3, dtype=np.int64), np.arange(3, dtype=np.int64)
    logits = np.zeros((3, w.head.n), np.float32)
    ok = [w.model, tokens, None, positions, 0, 0, None, keys, values, None, 3, logits, 1]

    def case(**change):
        args = list(ok)
        names = ["model", "tokens", "inputs", "positions", "held", "masked_from", "visible", "keys", "values",
                 "hidden_out", "keep", "logits_out", "threads"]
        for name, value in change.items():
            args[names.index(name)] = value
        return args

    yield "held past capacity", case(held=cache.capacity)
    yield "negative held", case(held=-1)
    yield "masked from past held", case(masked_from=1)
    yield "keep more than rows", case(keep=4, logits_out=np.zeros((4, w.head.n), np.float32))
    yield "logits too small", case(logits_out=np.zeros((2, w.head.n), np.float32))
    yield "no logits buffer", case(logits_out=None)
    yield "token past the vocabulary", case(tokens=np.array([0, 1, w.vocab], np.int64))
    yield "negative token", case(tokens=np.array([0, -1, 2], np.int64))
    yield "position past the table", case(positions=np.array([0, 1, w.max_positions], np.int64))
    yield "tokens and positions differ", case(tokens=np.arange(2, dtype=np.int64))
    yield "int32 tokens", case(tokens=tokens.astype(np.int32))
    yield "keys too short", case(keys=keys.reshape(-1)[:-1].copy())
    yield "keys and values one buffer", case(values=keys)
    yield "visibility the wrong size", case(visible=np.ones((3, 2), np.uint8))
    yield "both tokens and inputs", case(inputs=np.zeros((3, w.hidden), np.float32))
    yield "neither tokens nor inputs", case(tokens=None)
    yield "hidden out too small", case(hidden_out=np.zeros((2, w.hidden), np.float32))
    yield "read-only cache", case(keys=np.frombuffer(bytes(keys.nbytes), np.float32))
    yield "not a model", case(model=object())


def check_refusals(build) -> list[str]:
    done = []
    for name, kw in model_cases(build):
        try:
            build.Model(**kw)
        except (ValueError, TypeError):
            done.append(f"{build.isa()} Model refused: {name}")
        else:
            raise AssertionError(f"Model accepted {name}")
    for name, args in matrix_cases():
        try:
            build.Matrix(*args)
        except (ValueError, TypeError, OverflowError):
            done.append(f"{build.isa()} Matrix refused: {name}")
        else:
            raise AssertionError(f"Matrix accepted {name}")
    native = backend_of(tiny_model("narrow-attention"), build)
    for name, args in pass_cases(native):
        try:
            build.forward(*args)
        except (ValueError, TypeError):
            done.append(f"{build.isa()} forward refused: {name}")
        else:
            raise AssertionError(f"forward accepted {name}")
    mat = native.weights.head.native(build)
    x = np.zeros((2, mat.k), np.float32)
    for name, args in [("matmul input not whole rows", (mat, x.reshape(-1)[:-1].copy(), np.zeros((2, mat.n), np.float32), 1)),
                       ("matmul output too small", (mat, x, np.zeros((1, mat.n), np.float32), 1))]:
        try:
            build.matmul(*args)
        except (ValueError, TypeError):
            done.append(f"{build.isa()} {name}")
        else:
            raise AssertionError(f"matmul accepted {name}")
    with torch.inference_mode():  # and the valid pass still runs after every refusal
        native.forward(native.new_cache(), torch.arange(3), keep=3)
    return done
