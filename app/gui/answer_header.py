"""How the window names the pair behind an answer (its header) and in the status bar: the target with the
kernels it ran on, the drafter, or target-only."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication


def target_header(name: str, kernels: str | None) -> str:
    """The target as an answer's header names it: with the kernels it ran on ("… (bf16 · oneDNN packed)")."""
    return f"{name} ({kernels})" if kernels else name


def draft_name(drafter) -> str:
    return drafter.name if drafter is not None else QCoreApplication.translate("ModelFlow", "none (target only)")
