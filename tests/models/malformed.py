"""The malformed-input campaign: model files, configs and caches that a user may have, each made on the spot
from a valid tiny model with one fault, and what loading it must give: a clear one-line refusal, a model on
torch with the reason native was left out, or a cache discarded and made again, never a crash or garbage.
Every case runs in one process, one after another, and the process answers a prompt after all of them.

    python tests/models/malformed.py      # the table in docs/malformed-inputs.md, from a run
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import raw_gguf  # noqa: E402
from tiny_gguf import write_tiny_gguf  # noqa: E402

REFUSED, TORCH, NATIVE, REMADE = "refused", "runs on torch", "runs native", "cache made again"


@dataclass(frozen=True)
class Case:
    group: str  # "GGUF", "config" or "cache"
    name: str
    make: Callable[[Path], tuple[Path, str]]  # (the spec to load, --kernels), written under the folder given
    outcome: str  # REFUSED, TORCH, NATIVE or REMADE
    says: str  # a fragment the message must hold


# ------------------------------------------------------------------ GGUF files


def _tiny(folder: Path, **kw) -> Path:
    return write_tiny_gguf(folder / "tiny.gguf", q8_0=True, alignment=32, **kw)


def _edited(folder: Path, edit: Callable[[bytearray], None], **kw) -> tuple[Path, str]:
    path = _tiny(folder, **kw)
    data = bytearray(path.read_bytes())
    edit(data)
    path.write_bytes(bytes(data))
    return path, "auto"


def _value_at(data: bytearray, key: bytes) -> int:
    """Where a metadata key's value starts (after its length-prefixed name and its 4-byte type)."""
    return data.index(key) + len(key) + 4


def _tensor_info_at(data: bytearray, name: bytes) -> int:
    """Where a tensor's info starts after its name: the dims count."""
    return data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name)


def _cut(share: float) -> Callable[[Path], tuple[Path, str]]:
    return lambda f: _edited(f, lambda d: d.__delitem__(slice(int(len(d) * share), None)))


def _set_u32(key: bytes, value: int):
    return lambda f: _edited(f, lambda d: d.__setitem__(slice(_value_at(d, key), _value_at(d, key) + 4),
                                                         struct.pack("<I", value)))


def _tensor_field(name: bytes, what: str, value: int):
    """Set one field of a tensor's info: "dim0", "type" or "offset" (the tiny file's tensors have 1 or 2 dims)."""
    def edit(d: bytearray) -> None:
        at = _tensor_info_at(d, name)
        (dims,) = struct.unpack_from("<I", d, at)
        where = {"dim0": at + 4, "type": at + 4 + 8 * dims, "offset": at + 8 + 8 * dims}[what]
        fmt = "<I" if what == "type" else "<Q"
        d[where : where + struct.calcsize(fmt)] = struct.pack(fmt, value)
    return lambda f: _edited(f, edit)


def _raw(data: bytes) -> Callable[[Path], tuple[Path, str]]:
    def make(folder: Path) -> tuple[Path, str]:
        path = folder / "raw.gguf"
        path.write_bytes(data)
        return path, "auto"
    return make


GGUFS = [
    Case("GGUF", "empty file", _raw(b""), REFUSED, "truncated"),
    Case("GGUF", "cut in its header", _cut(0.002), REFUSED, "tiny.gguf"),
    Case("GGUF", "cut in its metadata", _cut(0.05), REFUSED, "tiny.gguf"),
    Case("GGUF", "cut in its tensor data", _cut(0.7), REFUSED, "needs bytes"),
    Case("GGUF", "not a GGUF (bad magic)", lambda f: _edited(f, lambda d: d.__setitem__(slice(0, 4), b"GGUX")),
         REFUSED, "not a valid GGUF file"),
    Case("GGUF", "version 1", lambda f: _edited(f, lambda d: d.__setitem__(slice(4, 8), struct.pack("<I", 1))),
         REFUSED, "version 1"),
    Case("GGUF", "zero alignment", _set_u32(b"general.alignment", 0), REFUSED, "alignment"),
    Case("GGUF", "alignment not a power of two", _set_u32(b"general.alignment", 3), REFUSED, "alignment"),
    Case("GGUF", "tensor offset past the end", _tensor_field(b"blk.1.ffn_down.weight", "offset", 2**40), REFUSED,
         "blk.1.ffn_down.weight"),
    Case("GGUF", "misaligned tensor offset", _tensor_field(b"blk.1.ffn_down.weight", "offset", 3), REFUSED,
         "blk.1.ffn_down.weight"),
    Case("GGUF", "huge dimension", _tensor_field(b"output.weight", "dim0", 2**62), REFUSED, "output.weight"),
    Case("GGUF", "unknown tensor type", _tensor_field(b"output.weight", "type", 99), REFUSED, "output.weight"),
    Case("GGUF", "tensor count larger than the file", lambda f: _edited(
        f, lambda d: d.__setitem__(slice(8, 16), struct.pack("<Q", 10**12))), REFUSED, "tensor"),
    Case("GGUF", "arrays nested 20 deep", _raw(raw_gguf.valid([*raw_gguf.BASE_FIELDS, raw_gguf.nested("deep", 20)])),
         REFUSED, "more than 8 deep"),
    Case("GGUF", "duplicate tensor name", lambda f: _edited(
        f, lambda d: d.__setitem__(slice(d.index(b"blk.0.ffn_up.weight"), d.index(b"blk.0.ffn_up.weight") + 19),
                                   b"blk.1.ffn_up.weight")), REFUSED, "blk.1.ffn_up.weight"),
    Case("GGUF", "no architecture", _raw(raw_gguf.valid(raw_gguf.BASE_FIELDS[1:])), REFUSED, "architecture"),
    Case("GGUF", "an architecture transformers lacks", lambda f: (_tiny(f, arch="gpt9"), "auto"), REFUSED, "gpt9"),
    Case("GGUF", "a layer's tensor missing", lambda f: (_tiny(f, drop=("blk.1.ffn_down.weight",)), "auto"),
         REFUSED, "has no blk.1.ffn_down.weight"),
    Case("GGUF", "metadata wider than its tensors", lambda f: (_tiny(f, embedding_length=64), "auto"), REFUSED,
         "tiny"),
    Case("GGUF", "a NaN block scale", lambda f: (_tiny(f, nan_scale="blk.0.attn_q.weight"), "auto"), REFUSED,
         "NaN"),
]

# ------------------------------------------------------------------ configs (save_pretrained folders)


def _folder(folder: Path, config_update: dict | None = None, **shape) -> tuple[Path, str]:
    """A tiny Llama saved with its tokenizer; `shape` builds it so, `config_update` edits config.json after."""
    import torch
    from tiny_models import char_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    base = {"vocab_size": 34, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
            "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 128, "bos_token_id": 0,
            "eos_token_id": 1, "pad_token_id": 1}
    model = LlamaForCausalLM(LlamaConfig(**(base | shape))).eval()
    out = folder / "model"
    model.save_pretrained(out)
    char_tokenizer().save_pretrained(out)
    if config_update:
        config = json.loads((out / "config.json").read_text())
        config.update(config_update)
        (out / "config.json").write_text(json.dumps(config))
    return out, "auto"


def _broken_json(folder: Path) -> tuple[Path, str]:
    out, kernels = _folder(folder)
    (out / "config.json").write_text("{heads")
    return out, kernels


def _native(make):
    return lambda f: (make(f)[0], "native")


CONFIGS = [
    Case("config", "head_dim that its weights do not have", lambda f: _folder(f, {"head_dim": 16}), REFUSED, "do not match its config"),
    Case("config", "more layers than its weights", lambda f: _folder(f, {"num_hidden_layers": 3}), REFUSED,
         "model.layers.2"),
    Case("config", "vocabulary larger than its weights", lambda f: _folder(f, {"vocab_size": 40}), REFUSED, "do not match its config"),
    Case("config", "config.json not JSON", lambda f: _broken_json(f), REFUSED, "model"),
    Case("config", "partial rotary factor", lambda f: _folder(f, {"partial_rotary_factor": 0.5}), TORCH,
         "partial rotary"),
    Case("config", "partial rotary factor, --kernels native", _native(lambda f: _folder(f, {"partial_rotary_factor": 0.5})),
         REFUSED, "partial rotary"),
    Case("config", "a group of 17 query heads a key head", lambda f: _folder(
        f, hidden_size=544, num_attention_heads=34, num_key_value_heads=2, head_dim=16), TORCH, "groups of at most 16"),
    Case("config", "attention narrower than the hidden size (hidden 64, 2 x 16)", _native(lambda f: _folder(
        f, hidden_size=64, num_attention_heads=2, num_key_value_heads=1, head_dim=16)), NATIVE, ""),
    Case("config", "head_dim 24 and a vocabulary of 34", _native(lambda f: _folder(
        f, hidden_size=64, num_attention_heads=4, num_key_value_heads=2, head_dim=24)), NATIVE, ""),
    Case("config", "GELU, --kernels native", _native(lambda f: _folder(f, {"hidden_act": "gelu"})), REFUSED,
         "SiLU only"),
]

# ------------------------------------------------------------------ caches (a first load's, then edited)


def _cached(folder: Path, edit: Callable[[Path], None]) -> tuple[Path, str]:
    """A tiny GGUF loaded once on the native path (its converted copy, record and kernel weights written),
    then the cache edited as a user or a crash might leave it."""
    from app.models import load_model
    from app.native import conversion_cache

    gguf = _tiny(folder)
    load_model(str(gguf), device="cpu", kernels="native")
    edit(conversion_cache.lookup(gguf))
    return gguf, "native"


def _config_edit(**change):
    def edit(cache: Path) -> None:
        config = json.loads((cache / "config.json").read_text())
        config.update(change)
        (cache / "config.json").write_text(json.dumps(config))
    return lambda f: _cached(f, edit)


def _stored(edit_bytes: Callable[[bytes], bytes]):
    def edit(cache: Path) -> None:
        stored = next(cache.glob("speclens-native-*.safetensors"))
        stored.write_bytes(edit_bytes(stored.read_bytes()))
    return lambda f: _cached(f, edit)


def _label_edit(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    def edit(data: bytes) -> bytes:
        (length,) = struct.unpack_from("<Q", data)  # the safetensors header: JSON, padded with spaces
        header = data[8 : 8 + length]
        assert old in header, header[:200]
        return data[:8] + header.replace(old, new, 1).ljust(length) + data[8 + length :]
    return edit


def _stale(folder: Path) -> tuple[Path, str]:
    """The file itself edited in its middle, size unchanged, after its first load."""
    gguf, _ = _cached(folder, lambda cache: None)
    data = bytearray(gguf.read_bytes())
    data[len(data) // 2] ^= 0x01
    gguf.write_bytes(bytes(data))
    return gguf, "native"


def _write(name: str, text: bytes):
    return lambda f: _cached(f, lambda cache: (cache / name).write_bytes(text))


CACHES = [
    Case("cache", "config: attention heads 4 -> 8", _config_edit(num_attention_heads=8), REMADE,
         "num_attention_heads"),
    Case("cache", "config: key heads 2 -> 1", _config_edit(num_key_value_heads=1), REMADE, "num_key_value_heads"),
    Case("cache", "config: head_dim 8 -> 16", _config_edit(head_dim=16), REMADE, "head_dim"),
    Case("cache", "config: hidden size 32 -> 64", _config_edit(hidden_size=64), REMADE, "hidden_size"),
    Case("cache", "config: FFN width 64 -> 96", _config_edit(intermediate_size=96), REMADE, "intermediate_size"),
    Case("cache", "config: layers 2 -> 3", _config_edit(num_hidden_layers=3), REMADE, "num_hidden_layers"),
    Case("cache", "config: norm epsilon 1e-5 -> 1e-2", _config_edit(rms_norm_eps=1e-2), REMADE, "rms_norm_eps"),
    Case("cache", "config.json not JSON", _write("config.json", b"{"), REMADE, "discarded"),
    Case("cache", "kernel weights truncated", _stored(lambda d: d[: len(d) // 2]), NATIVE, "laid out again"),
    Case("cache", "kernel weights: a block type label edited", _stored(_label_edit(b'[2, 34]', b'[1, 34]')), NATIVE,
         "laid out again"),
    Case("cache", "kernel weights: a row count label edited", _stored(_label_edit(b'[2, 34]', b'[2, 30]')), NATIVE,
         "laid out again"),
    Case("cache", "kept tokenizer truncated", lambda f: _cached(
        f, lambda c: (c / "tokenizer.json").write_bytes((c / "tokenizer.json").read_bytes()[:1000])), REMADE,
        "discarded"),
    Case("cache", "native record not JSON", _write("speclens-native.json", b"\xff"), NATIVE, "record was unreadable"),
    Case("cache", "stale: the GGUF edited in its middle, same size", _stale, NATIVE, "read anew"),
]

CASES = GGUFS + CONFIGS + CACHES


@dataclass(frozen=True)
class Seen:
    outcome: str
    message: str  # the refusal, the reason native was left out, or the cache warning
    answer: str  # a greedy continuation of a prompt, where it loaded


def attempt(case: Case, folder: Path) -> Seen:
    """Load the case's input as the app does (in this process) and answer a prompt with what loaded."""
    from app.engine import DecodeParams, generate
    from app.errors import ModelError
    from app.models import load_model

    folder.mkdir(parents=True, exist_ok=True)
    before = os.environ.get("SPECLENS_CACHE_DIR")
    os.environ["SPECLENS_CACHE_DIR"] = str(folder / "cache")  # each case's first load is its own
    try:
        spec, kernels = case.make(folder)
        loaded = load_model(str(spec), device="cpu", kernels=kernels)
    except ModelError as exc:
        return Seen(REFUSED, str(exc), "")
    finally:
        if before is None:
            os.environ.pop("SPECLENS_CACHE_DIR", None)
        else:
            os.environ["SPECLENS_CACHE_DIR"] = before
    ids = loaded.encode_chat([{"role": "user", "content": "abc"}])
    out = generate(loaded.model, ids, None, DecodeParams(temperature=0, max_new_tokens=6, seed=0),
                   vocab_size=loaded.vocab_size).token_ids
    warnings, notes = loaded.extra.get("warnings") or [], loaded.extra.get("notes") or []
    if any("discarded" in w for w in warnings):
        return Seen(REMADE, warnings[0], str(out))
    native = "native" in loaded.kernels
    said = "; ".join(warnings + notes)
    if not native:
        said = said or loaded.profile.kernels.reason
    elif not said and loaded.extra.get("converted_cache") in ("stored", "native") and case.group == "cache":
        said = "no cached copy of this content: read anew from the file"
    return Seen(NATIVE if native else TORCH, said, str(out))


def table(rows: list[tuple[Case, Seen]]) -> str:
    lines = ["| # | input | outcome | what the app says |", "|---|---|---|---|"]
    for i, (case, seen) in enumerate(rows, 1):
        said = seen.message.replace("|", "\\|") or "(loads and answers)"
        lines.append(f"| {i} | {case.group}: {case.name} | {seen.outcome} | {said} |")
    return "\n".join(lines)


def main() -> None:
    import tempfile

    root = Path(tempfile.mkdtemp(prefix="speclens-malformed-"))
    rows = [(case, attempt(case, root / str(i))) for i, case in enumerate(CASES)]
    print(table(rows))
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
