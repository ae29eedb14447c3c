"""How each token status looks, shared by the GUI and the HTML export.

Colours are the Okabe-Ito palette, which stays distinguishable under the common forms of
colour blindness; every status also has its own underline or weight, so nothing depends
on colour alone (greyscale prints, monochrome screens). Accepted and target share a plain
shape, but never share an answer: target tokens appear only when there is no draft.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.engine.events import Status

ACCEPTED = "#0072B2"  # blue
CORRECTED = "#D55E00"  # vermillion
BONUS = "#009E73"  # bluish green
REJECTED = "#999999"  # grey

STATUSES = tuple(s.value for s in Status)  # in the order a legend lists them


@dataclass(frozen=True, slots=True)
class TokenStyle:
    color: str | None  # None: the surrounding text colour
    underline: str  # "none" | "wavy" | "dotted": CSS text-decoration styles; Qt has WaveUnderline and DotLine
    bold: bool
    strike: bool
    label: str
    meaning: str  # one line for legends and tooltips


STYLES: dict[str, TokenStyle] = {
    "accepted": TokenStyle(
        ACCEPTED, "none", False, False, "accepted", "draft token kept by the min(1, p/q) test"
    ),
    "corrected": TokenStyle(
        CORRECTED,
        "wavy",
        False,
        False,
        "corrected",
        "sampled from the residual max(0, p - q) after a rejection",
    ),
    "bonus": TokenStyle(
        BONUS, "dotted", True, False, "bonus", "sampled from p after every draft token was accepted"
    ),
    "target": TokenStyle(
        None, "none", False, False, "target", "sampled from p with no draft (target-only decoding)"
    ),
    "rejected": TokenStyle(
        REJECTED, "none", False, True, "rejected", "draft token refused; not part of the answer"
    ),
}


def css_declarations(status: str) -> str:
    """The CSS for one status, e.g. 'color:#D55E00;text-decoration:underline wavy #D55E00'."""
    style = STYLES[status]
    parts = [f"color:{style.color}"] if style.color else []
    if style.bold:
        parts.append("font-weight:bold")
    if style.underline != "none":
        parts.append(f"text-decoration:underline {style.underline} {style.color or 'currentColor'}")
        parts.append("text-underline-offset:0.2em")
    if style.strike:
        parts.append("text-decoration:line-through")
    return ";".join(parts)
