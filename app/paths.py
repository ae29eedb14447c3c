"""Where SpecLens reads its resources and writes user data, from source and frozen builds alike."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

APP_NAME = "SpecLens"


def frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def resource_path(*parts: str) -> Path:
    """A file under resources/: inside the PyInstaller bundle when frozen, else the source tree."""
    root = Path(getattr(sys, "_MEIPASS", "")) if frozen() else Path(__file__).resolve().parent.parent
    return root.joinpath("resources", *parts)


def user_data_dir() -> Path:
    """History database and settings; SPECLENS_DATA_DIR overrides (tests, portable installs)."""
    path = Path(os.environ.get("SPECLENS_DATA_DIR") or platformdirs.user_data_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path


def user_cache_dir() -> Path:
    """Converted model weights and other caches; SPECLENS_CACHE_DIR overrides."""
    path = Path(os.environ.get("SPECLENS_CACHE_DIR") or platformdirs.user_cache_dir(APP_NAME, appauthor=False))
    path.mkdir(parents=True, exist_ok=True)
    return path
