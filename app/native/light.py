"""A GGUF's native model on a later launch: what loads when this file's cached profile already chose the
native path, so it imports no model classes (~2 s), measures nothing again and holds no float matrices.

The first load of a file leaves, in its conversion-cache folder, the record that keys its machine profile
(fingerprint, weight count, class), its config and tokenizer and, where they fit, the kernel's records as it
laid them out (stored.py). A later load reads those and lays out again from the file's own blocks what is not
stored (direct.py); float rows are made only when something reads them (model.KernelRows).
"""

from __future__ import annotations

from pathlib import Path

from app.native.descriptor import TWO_DIGITS, Digits, Unfit, config_problem
from app.native.model import NativeCausalLM
from app.native.record import Record


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
    """The native model of `gguf` from its conversion-cache folder: the config (config_of) and record a first
    load kept, the kernel's records as stored there or laid out again from the file's own blocks. Nothing in
    the folder is trusted: the config must describe the file itself (gguf_config), the stored records the
    config's shapes, and the kernel checks the whole model again. Unfit, with the reason, when any of it does
    not hold (the caller discards the folder and loads the file anew). What was made again is said in `notes`."""
    from transformers import GenerationConfig

    from app.native import direct
    from app.native.gguf.config import mismatch
    from app.native.gguf.index import GgufIndex

    why = config_problem(config) or mismatch(config, gguf)
    if why is not None:
        raise Unfit(why)
    # Only the file's index: its config is the folder's, checked against the file above. direct.read would make
    # the family's config class too, whose module imports torch.distributed.tensor and sympy (~1 s) for nothing.
    index = GgufIndex(gguf)
    native = direct.build(gguf, index, config, folder, digits, notes, record)
    native.generation_config = GenerationConfig.from_pretrained(folder)
    return native
