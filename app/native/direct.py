"""A GGUF's first load straight onto the native path: its config from the file's metadata, its tokenizer
converted once by transformers and kept, the kernel's records from the file's own blocks (gguf_model.py),
float rows only when something reads them. No transformers model classes and no float copy of the weights,
so the load's memory stays near the file's size.

Its conversion-cache folder holds what a later launch reads instead (light.py): config, generation config,
tokenizer, the record that keys its machine profile, and, for files up to STORE_BYTES, the laid-out records.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from app.native import conversion_cache, stored
from app.native.backend import NativeBackend
from app.native.build import assemble, expected_shapes, matrices_of
from app.native.descriptor import TWO_DIGITS, Digits, Unfit, config_problem
from app.native.gguf import model as gguf_model
from app.native.gguf.index import GgufIndex
from app.native.model import NativeCausalLM
from app.native.record import Record, write_record

STORE_BYTES = 2 * 2**30  # laid-out records kept for a faster next launch: a copy of the file on disk, so not of any size


def fingerprint(gguf: Path) -> str:
    """What keys this file's machine profile: its whole content (conversion_cache.fingerprint)."""
    return f"gguf {conversion_cache.fingerprint(gguf)}"


def read(gguf: Path) -> tuple[GgufIndex, object]:
    """(its index, its config); Unfit where the kernel does not run its family or shape."""
    index = GgufIndex(gguf)
    config = gguf_model.config_of(index)
    why = config_problem(config)
    if why is not None:
        raise Unfit(why)
    return index, config


def tokenizer_of(gguf: Path, folder: Path, notes: list[str] | None = None, shared: Path | None = None,
                 chat_template: str | None = None):
    """The file's tokenizer: kept in its folder after the first conversion (transformers reads the GGUF's
    vocabulary in seconds, tens of them for a 150k vocabulary on a loaded CPU; the kept files in milliseconds).
    shared: the folder of every file whose tokenizer fields are this one's (GgufIndex.tokenizer_key), so a draft
    of its target's family converts nothing the target's first load converted; the key leaves the chat template
    out, so a tokenizer read from `shared` takes this file's own (chat_template: its tokenizer.chat_template)."""
    from transformers import AutoTokenizer

    for kept in (folder, shared):
        if kept is None or not (kept / "tokenizer_config.json").is_file():
            continue
        try:
            tokenizer = AutoTokenizer.from_pretrained(kept)
        except Exception:  # noqa: BLE001  kept files of any damage: converted again below, and said
            if notes is not None:
                notes.append(f"the kept tokenizer of {gguf.name} was unreadable: converted again from the file")
            continue
        if kept is shared:
            tokenizer.chat_template = chat_template
            with contextlib.suppress(OSError):
                tokenizer.save_pretrained(folder)
        return tokenizer
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    for kept in (folder, shared):
        if kept is not None:
            with contextlib.suppress(OSError):  # a read-only cache only means converting again next time
                tokenizer.save_pretrained(kept)
    return tokenizer


def generation_config(config):
    from transformers import GenerationConfig

    text = config.get_text_config()
    return GenerationConfig(bos_token_id=getattr(text, "bos_token_id", None), eos_token_id=getattr(text, "eos_token_id", None))


def build(gguf: Path, index: GgufIndex, config, folder: Path | None, digits: Digits = TWO_DIGITS,
          notes: list[str] | None = None, record: Record | None = None) -> NativeCausalLM:
    """The native model of the file: its records stored in `folder` where they fit (else laid out again).
    record: what keys its profile, as a first load wrote it (default: this file's own)."""
    tied = bool(getattr(config.get_text_config(), "tie_word_embeddings", False))
    parts = stored.load(folder, expected_shapes(config, tied)) if folder is not None else None
    if parts is None:
        if notes is not None and folder is not None and stored.path_in(folder).is_file():
            notes.append(f"the stored kernel weights of {gguf.name} did not fit its model: laid out again from the file")
        parts = gguf_model.parts_of(index, config)
        if folder is not None and sum(m.nbytes for m in matrices_of(parts)) <= STORE_BYTES:
            try:
                stored.save(folder, parts)
            except OSError as exc:  # the cache only saves time: this launch goes on, the next lays them out again
                if notes is not None:
                    notes.append(f"{exc}: the next launch lays them out again")
    weights = assemble(config, parts, digits=digits)
    if record is None:
        count = sum(info.elements for info in index.tensors.values())
        record = Record(fingerprint(gguf), count, config.architectures[0])
    return NativeCausalLM(config, generation_config(config), None, None, NativeBackend(weights), record, gguf).eval()


def keep(folder: Path, native: NativeCausalLM) -> None:
    """What a light launch reads: config, generation config, the record, and the folder marked complete."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        native.config.save_pretrained(folder)
        native.generation_config.save_pretrained(folder)
        write_record(folder, Record(native.fingerprint, native.weight_count, native.config.architectures[0]))
        (folder / conversion_cache.COMPLETE_MARKER).write_text(str(native.gguf.name), encoding="utf-8")
    except OSError:
        pass  # the cache only saves time
