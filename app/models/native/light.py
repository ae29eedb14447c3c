"""A GGUF's native model without transformers' model classes: what a launch loads when this file's cached
profile already chose the native path, so it imports neither the model classes (~2 s) nor builds their
float32 matrices (~540 MB for the embedded model).

The first load of a file (transformers' model, the path timed, the quality measured) leaves a record in
its conversion-cache folder: the model's fingerprint and weight count, which key its machine profile. A
later load reads the config, generation config and the embedding's float rows (which a feature draft reads)
from that folder, and the kernel's weights as the first load laid them out (stored.py), or, where they are
not stored, the GGUF's own blocks, checked against the folder's floats. The first load itself ends as this
model too (loading keeps its kernel weights with keep_parts), its float32 module released.
"""

from __future__ import annotations

from pathlib import Path

from . import stored
from .backend import NativeBackend
from .build import SafetensorsFloats, assemble, expected_shapes, parts_of
from .descriptor import TWO_DIGITS, Digits, Unfit, config_problem
from .model import NativeCausalLM
from .record import Record


def config_of(folder: Path):
    """The folder's config as transformers' base class reads it: the family's own class would import the model
    classes' dependencies (~1 s); the native kernel reads only the fields every family's config.json holds."""
    from transformers import PreTrainedConfig
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()  # the base class warns that it is not the family's class: it is meant not to be
    try:
        config = PreTrainedConfig.from_pretrained(folder)
    finally:
        logging.set_verbosity(level)
    return config


def load(folder: Path, gguf: Path, record: Record, config, notes: list[str] | None = None,
         digits: Digits = TWO_DIGITS) -> NativeCausalLM:
    """The native model of `gguf` from its conversion-cache folder (config_of, generation config, float rows).
    Nothing in the folder is trusted: the config must describe the file itself (gguf_config), the stored kernel
    weights and the float rows the config's shapes, and the kernel checks the whole model again. Unfit, with
    the reason, when any of it does not hold (the caller discards the folder and loads the file anew). What
    was made again on the way is said in `notes`."""
    from transformers import GenerationConfig

    from ..gguf_config import mismatch

    why = config_problem(config) or mismatch(config, gguf)
    if why is not None:
        raise Unfit(why)
    generation = GenerationConfig.from_pretrained(folder)
    text = config.get_text_config()
    tied = bool(getattr(text, "tie_word_embeddings", False))
    floats = SafetensorsFloats(folder / "model.safetensors", tied)
    shapes = expected_shapes(config, tied)
    parts = stored.load(folder, shapes)
    if parts is None:
        if notes is not None and stored.path_in(folder).is_file():
            notes.append(f"the stored kernel weights of {gguf.name} did not fit its model: laid out again from the file")
        parts = parts_of(config, floats, gguf)
        stored.save(folder, parts)
    weights = assemble(config, parts, digits=digits)
    embed = _rows(floats, "model.embed_tokens.weight", (text.vocab_size, text.hidden_size))
    head = None if tied or not floats.has("lm_head.weight") else _rows(floats, "lm_head.weight", (text.vocab_size, text.hidden_size))
    return NativeCausalLM(config, generation, embed, head, NativeBackend(weights), record, gguf).eval()


def _rows(floats: SafetensorsFloats, name: str, shape: tuple[int, int]):
    rows = floats.get(name)
    if rows is None or tuple(rows.shape) != shape or not rows.is_floating_point():
        raise Unfit(f"the converted copy's {name} is not {list(shape)} floats")
    return rows.float()


def keep_parts(native: NativeCausalLM, folder: Path) -> None:
    """A first load's kernel weights beside its converted copy: what the next launch reads instead of building."""
    if not stored.path_in(folder).is_file():
        stored.save(folder, native.cache_backend.weights.parts)
