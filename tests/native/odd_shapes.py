"""Native-kernel checks on odd shapes, shared by the in-process tests (every build that runs here) and the
sanitized run (tests/native/sanitized_driver.py): attention narrower and wider than the hidden size, head
dims the vector attention does not take (24, 160), vocabularies that are not whole panels, groups of 1 and 8.
Each check raises AssertionError with what differed."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import app.native as native_package

# (hidden, heads, kv heads, head_dim, vocab): the first is the overflow (attention 32 < hidden 64)
SHAPES = {
    "narrow-attention": (64, 2, 1, 16, 80),
    "head-dim-24": (64, 4, 2, 24, 77),
    "head-dim-160": (64, 2, 2, 160, 81),
    "group-8": (128, 8, 1, 16, 97),
    "group-1": (64, 4, 4, 32, 83),
}


def tiny_model(shape: str, seed: int = 0) -> LlamaForCausalLM:
    hidden, heads, kv, head_dim, vocab = SHAPES[shape]
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=heads, num_key_value_heads=kv, head_dim=head_dim,
                         max_position_embeddings=64)
    return LlamaForCausalLM(config).eval()


def backend_of(model, build):
    from app.native.backend import NativeBackend
    from app.native.build import ModuleFloats, assemble, native_support, parts_of

    assert native_support(model) is None, native_support(model)
    return NativeBackend(assemble(model.config, parts_of(model.config, ModuleFloats(model)), build))


@torch.inference_mode()
def check_close_to_float32(model, native) -> None:
    ids = torch.randint(0, model.config.vocab_size, (12,), generator=torch.Generator().manual_seed(1))
    ref = model(ids.view(1, -1)).logits[0]
    out = native.forward(native.new_cache(), ids, keep=len(ids))
    assert out.shape == ref.shape, (out.shape, ref.shape)
    err = float((out - ref).abs().max() / ref.abs().max())
    assert err < 0.05, f"native logits {err:.3f} of the largest from float32's"


@torch.inference_mode()
def check_rows_and_threads(native, vocab: int) -> None:
    ids = torch.randint(0, vocab, (17,), generator=torch.Generator().manual_seed(2))
    whole = native.forward(native.new_cache(), ids, keep=17)
    cache = native.new_cache()
    native.forward(cache, ids[:5], keep=1)
    parts = [native.forward(cache, ids[5:8], keep=3), native.forward(cache, ids[8:9], keep=1),
             native.forward(cache, ids[9:], keep=8)]
    assert torch.equal(torch.cat(parts), whole[5:]), "a row's logits depend on the rows that share its pass"
    threads = native_package._threads
    try:
        for count in (1, 2, 3):
            native_package.set_threads(count)
            assert torch.equal(native.forward(native.new_cache(), ids, keep=17), whole), f"{count} threads differ"
    finally:
        native_package.set_threads(threads)


@torch.inference_mode()
def check_tree_row_equals_chain(native, vocab: int) -> None:
    ids = torch.randint(0, vocab, (8,), generator=torch.Generator().manual_seed(3))
    cache = native.new_cache()
    native.forward(cache, ids[:6], keep=1)
    tokens = torch.tensor([int(ids[6]), (int(ids[6]) + 1) % vocab, int(ids[7])])
    visible = torch.ones(3, 9, dtype=torch.bool)
    visible[:, 6:] = torch.tensor([[1, 0, 0], [0, 1, 0], [1, 0, 1]], dtype=torch.bool)
    tree = native.tree_forward(cache, tokens, torch.tensor([6, 6, 7]), visible, keep=3)
    chain = native.forward(native.new_cache(), ids, keep=2)
    assert torch.equal(tree[0], chain[0]) and torch.equal(tree[2], chain[1]), "a tree row differs from its chain"


def check_all(build, shapes=tuple(SHAPES)) -> list[str]:
    """Every check on every shape for one build; returns what ran."""
    done = []
    for shape in shapes:
        model = tiny_model(shape)
        native = backend_of(model, build)
        check_close_to_float32(model, native)
        check_rows_and_threads(native, model.config.vocab_size)
        check_tree_row_equals_chain(native, model.config.vocab_size)
        done.append(f"{build.isa()} {shape}")
    return done


def check_small_blocks(build) -> list[str]:
    """GGML's Q4_0, Q5_0 and Q5_1 records (q5.py) on an odd shape (37 rows, 7 blocks, the last panel part
    padding): each row of 1..17 rows and 1..3 threads equals the same row of the 17-row pass, the 17-row pass
    is the float64 product of gguf's dequantised weights, and the embedding rows are gguf's values."""
    import numpy as np
    from gguf import GGMLQuantizationType
    from gguf.quants import dequantize

    from app.native import q5

    rows, k, done = 37, 224, []
    rng = np.random.default_rng(5)
    for name, kind in q5.KINDS.items():
        raw = rng.integers(0, 256, (rows, k // 32, q5.FILE_BYTES[kind]), dtype=np.uint8)
        d = rng.uniform(0.004, 0.012, (rows, k // 32)).astype(np.float16)
        raw[..., 0:2] = d.view(np.uint8).reshape(rows, -1, 2)
        if name == "Q5_1":
            raw[..., 2:4] = (-15.5 * d).astype(np.float16).view(np.uint8).reshape(rows, -1, 2)
        raw = raw.reshape(rows, -1)
        data, _ = q5.records(kind, raw)
        want = dequantize(raw, GGMLQuantizationType[name])
        got = np.empty((rows, k), np.float32)
        build.rows(build.Matrix(kind, data.shape[0] * 16, k, data), np.arange(rows, dtype=np.int64), got)
        assert np.array_equal(got, want), f"{name}'s rows differ from gguf's"
        x = rng.standard_normal((17, k)).astype(np.float32)
        exact = x.astype(np.float64) @ want.T.astype(np.float64)
        for digits, tolerance in ((2, 1e-4), (1, 2e-2)):
            mat = build.Matrix(kind, data.shape[0] * 16, k, data, digits)
            whole = np.empty((17, mat.n), np.float32)
            build.matmul(mat, x, whole, 1)
            err = np.abs(whole[:, :rows] - exact).max() / np.abs(exact).max()
            assert err < tolerance, f"{name} with {digits} digits: {err:.2g} of the largest from float64"
            for r in (1, 2, 5, 6, 7, 13, 17):
                for threads in (1, 2, 3):
                    out = np.empty((r, mat.n), np.float32)
                    build.matmul(mat, x[:r].copy(), out, threads)
                    assert np.array_equal(out, whole[:r]), f"{name}: {r} rows on {threads} threads differ"
        done.append(f"{build.isa()} {name}")
    return done
