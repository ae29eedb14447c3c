"""How the window names the pair behind an answer (its header) and in the status bar: the target with the
kernels it ran on, the drafter, or target-only. An answer's header is one short line ("SmolLM2-135M ←
lookup, else feature draft"); the full names, with the kernels, are its tooltip."""

from __future__ import annotations

import re

from PySide6.QtCore import QCoreApplication

_BRACKETS = re.compile(r"\s*\([^()]*\)")  # "(embedded)", "(bf16 · oneDNN packed)", "(trained feature draft)"
_TUNE = re.compile(r"-(instruct|chat|it)$", re.IGNORECASE)  # the fine-tune's suffix: the size names the model


def target_header(name: str, kernels: str | None) -> str:
    """The target as an answer's header names it: with the kernels it ran on ("… (bf16 · oneDNN packed)")."""
    return f"{name} ({kernels})" if kernels else name


def draft_name(drafter) -> str:
    return drafter.name if drafter is not None else QCoreApplication.translate("ModelFlow", "none (target only)")


def short_model(name: str) -> str:
    """A model's name without what is in brackets or its fine-tune's suffix: "SmolLM2-135M-Instruct (embedded)"
    -> "SmolLM2-135M"."""
    bare = _BRACKETS.sub("", name).strip()
    return _TUNE.sub("", bare) or name


def short_draft(draft: str, target: str) -> str:
    """A drafter's name without the target's, which most drafters are named after: "prompt lookup, else
    SmolLM2-135M-Instruct (embedded) feature draft (trained feature draft)" -> "lookup, else feature draft";
    "SmolLM2-135M-Instruct (bf16 self-draft)" -> "bf16 self-draft"; a draft model of its own keeps its short name."""
    if draft == draft_name(None):
        return QCoreApplication.translate("ModelFlow", "target only")
    target_bare = _BRACKETS.sub("", target).strip()
    parts = []
    for part in draft.split(", else "):
        bare = _BRACKETS.sub("", part).strip()
        rest = bare.removeprefix(target_bare).strip() if target_bare else bare
        if not rest:  # named after the target alone: what its brackets say ("bf16 self-draft")
            inner = re.findall(r"\(([^()]*)\)", part)
            rest = inner[-1] if inner else short_model(part)
        elif rest == bare:
            rest = short_model(bare)
        parts.append("lookup" if rest == "prompt lookup" else rest)
    return ", else ".join(parts)


def answer_heading(stats: dict) -> tuple[str, str]:
    """(the one-line header, its tooltip) of an answer whose stats name its target and draft."""
    target, draft = stats.get("target", ""), stats.get("draft", "")
    line = f"{short_model(target)} ← {short_draft(draft, target)}" if target else short_draft(draft, target)
    tip = QCoreApplication.translate("ChatView", "Target: {0}\nDraft: {1}").format(target, draft)
    return line, tip
