"""A model load as phases, each with its own determinate bar: importing torch and transformers, loading the
target, dequantising a GGUF (first run only), timing the drafters (first run only), preparing the draft.

The first run spent 36.7 s before ready, 17.5 s of it timing drafters: one bar for the whole load sat near
80 % for most of that. A bar that restarts for each named phase says what is happening and how far it is."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from app.models import LoadProgress

# The GGUF dequantiser reports LoadProgress.fraction over this span of the target's load (app/models/loading.py).
CONVERT_SPAN = (0.15, 0.75)


def imports_progress(fraction: float) -> tuple[str, float]:
    return QCoreApplication.translate("LoadPhases", "Loading torch and transformers"), fraction


def phase_progress(what: str, p: LoadProgress) -> tuple[str, float]:
    """(label, fraction of its phase) for a progress report of the target ("Target") or the draft ("Draft")."""
    size = f" {p.bytes_done / 2**20:.0f}/{p.bytes_total / 2**20:.0f} MiB" if p.bytes_total else ""
    detail = f"{p.message or p.stage}{size}"
    if what == "Target" and p.stage == "convert":
        low, high = CONVERT_SPAN
        fraction = (p.fraction - low) / (high - low)
        text = QCoreApplication.translate("LoadPhases", "Dequantising the GGUF (first run only): {0}")
        return text.format(detail), _clamp(fraction)
    if what == "Target":
        return QCoreApplication.translate("LoadPhases", "Loading the target: {0}").format(detail), _clamp(p.fraction)
    if p.stage == "measure":
        text = QCoreApplication.translate("LoadPhases", "Timing the drafters on this machine (first run only): {0}")
        return text.format(detail), _clamp(p.fraction)
    return QCoreApplication.translate("LoadPhases", "Preparing the draft: {0}").format(detail), _clamp(p.fraction)


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))
