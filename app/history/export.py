"""A conversation as a self-contained HTML page or as Markdown.

HTML keeps what SpecLens shows: every token coloured and underlined by status, rejected drafts
struck through in place (hidden until the reader ticks a box; CSS only, no script), a legend,
and per-message statistics. Markdown cannot colour text, so it keeps each turn's exact text
and adds a statistics line under each answer.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from html import escape
from numbers import Real

from .palette import STATUSES, STYLES, css_declarations
from .records import ConversationInfo, StoredMessage, StoredToken

_ROLE_TITLES = {"system": "System", "user": "User", "assistant": "Assistant"}


def to_html(info: ConversationInfo, messages: Sequence[StoredMessage]) -> str:
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="generator" content="SpecLens">',
        f"<title>{escape(info.title)} · SpecLens</title>",
        f"<style>{_css()}</style>",
        "</head>",
        "<body>",
        f'<header><h1>{escape(info.title)}</h1><p class="meta">{escape(_meta(info))}</p></header>',
        # The checkbox must precede <main> as a sibling for the ':checked ~ main' rule to reach the tokens.
        '<input type="checkbox" id="show-rejected">',
        '<label for="show-rejected">Show rejected draft tokens, struck through where they were proposed</label>',
        _legend(),
        "<main>",
    ]
    if info.system_prompt:
        prompt = escape(info.system_prompt)
        parts.append(
            f'<section class="system-prompt"><h2>System prompt</h2><div class="text">{prompt}</div></section>'
        )
    for msg in messages:
        parts.append(_html_message(msg))
    parts += ["</main>", "</body>", "</html>", ""]
    return "\n".join(parts)


def to_markdown(info: ConversationInfo, messages: Sequence[StoredMessage]) -> str:
    """Each turn's text verbatim (answers are usually Markdown already), one section per turn."""
    parts = [f"# {info.title}", "", _meta(info) + " · exported from SpecLens", ""]
    if info.system_prompt:
        parts += ["**System prompt**", "", *(f"> {line}" for line in info.system_prompt.split("\n")), ""]
    for msg in messages:
        heading = _ROLE_TITLES.get(msg.role, msg.role)
        parts += ["---", "", f"### {heading}{' (interrupted)' if msg.partial else ''}", "", msg.content, ""]
        if msg.role == "assistant" and (figures := _figures(msg)):
            parts += ["**Statistics:** " + " · ".join(figures), ""]
            histogram = _histogram(msg.stats)
            if histogram:
                counts = " · ".join(f"{n}: {count}" for n, count in enumerate(histogram))
                parts += [f"**Rounds by accepted drafts:** {counts}", ""]
    return "\n".join(parts)


def _html_message(msg: StoredMessage) -> str:
    badge = ' <span class="badge">interrupted</span>' if msg.partial else ""
    heading = f"<h2>{escape(_ROLE_TITLES.get(msg.role, msg.role))}{badge}</h2>"
    body = "".join(_html_token(t) for t in msg.tokens if t.text) if msg.tokens else escape(msg.content)
    parts = [f'<article class="msg {escape(msg.role)}">', heading, f'<div class="text">{body}</div>']
    if msg.role == "assistant":
        figures = _figures(msg)
        if figures:
            parts.append(f'<p class="stats">{escape(" · ".join(figures))}</p>')
        histogram = _histogram(msg.stats)
        if histogram:
            parts.append(_html_histogram(histogram))
    parts.append("</article>")
    return "\n".join(parts)


def _html_token(t: StoredToken) -> str:
    details = [t.status, f"round {t.round + 1}", f"p {t.p:.3f}"]
    if t.q is not None:
        details.append(f"q {t.q:.3f}")
    if t.accept_prob is not None:
        details.append(f"min(1, p/q) {t.accept_prob:.3f}")
    return f'<span class="tok {t.status}" title="{escape(" · ".join(details))}">{escape(t.text)}</span>'


def _html_histogram(histogram: list[int]) -> str:
    top = max(histogram) or 1
    rows = "".join(
        f'<tr><th scope="row">{n}</th><td class="bar"><span style="width:{100 * count / top:.0f}%"></span></td>'
        f"<td>{count}</td></tr>"
        for n, count in enumerate(histogram)
    )
    return (
        '<table class="histogram"><caption>Rounds by accepted drafts</caption>'
        '<tr><th scope="col">accepted</th><th scope="col"></th><th scope="col">rounds</th></tr>'
        f"{rows}</table>"
    )


def _legend() -> str:
    items = "".join(
        f'<li><span class="tok {s}">{escape(STYLES[s].label)}</span> {escape(STYLES[s].meaning)}</li>'
        for s in STATUSES
    )
    return f'<aside class="legend"><h2>Legend</h2><ul>{items}</ul></aside>'


def _css() -> str:
    tokens = "".join(
        f".tok.{status}{{{css_declarations(status)}}}" for status in STATUSES if css_declarations(status)
    )
    return (
        "body{background:#fff;color:#1a1a1a;font:16px/1.55 system-ui,-apple-system,'Segoe UI',sans-serif;"
        "max-width:52rem;margin:2rem auto;padding:0 1rem}"
        "h1{font-size:1.6rem;margin-bottom:0.2rem}h2{font-size:1rem;margin:0 0 0.4rem}"
        ".meta,.stats,caption{color:#555;font-size:0.85rem}"
        ".legend{border:1px solid #ddd;border-radius:6px;padding:0.5rem 1rem;margin:0.8rem 0 1.5rem}"
        ".legend ul{margin:0;padding-left:1.2rem}"
        "label[for=show-rejected]{font-size:0.9rem;margin-left:0.3rem}"
        ".msg,.system-prompt{border-top:1px solid #e4e4e4;padding:1rem 0}"
        ".text{white-space:pre-wrap;overflow-wrap:anywhere}"
        ".user .text,.system-prompt .text{background:#f6f6f6;border-radius:6px;padding:0.6rem 0.8rem}"
        ".badge{background:#fff3cd;color:#6b4e00;border-radius:4px;padding:0 0.4rem;font-size:0.8rem;"
        "font-weight:normal}"
        f"{tokens}"
        "main .tok.rejected{display:none}#show-rejected:checked~main .tok.rejected{display:inline}"
        ".histogram{border-collapse:collapse;font-size:0.85rem}"
        ".histogram th,.histogram td{padding:0.1rem 0.5rem;text-align:right}"
        ".histogram td.bar{width:12rem;text-align:left}"
        f".histogram td.bar span{{display:inline-block;height:0.8em;background:{STYLES['accepted'].color}}}"
    )


def _meta(info: ConversationInfo) -> str:
    return f"Created {_when(info.created)} · updated {_when(info.updated)} · {info.message_count} messages"


def _when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def _figures(msg: StoredMessage) -> list[str]:
    """The statistics line of an answer. Stats come from JSON written by any version, so every
    value is checked before it is formatted, and what is missing is left out."""
    stats = msg.stats
    counts = Counter(t.status for t in msg.tokens)
    tokens = _number(stats.get("new_tokens"))
    if tokens is None and msg.tokens:
        tokens = sum(n for status, n in counts.items() if status != "rejected")
    seconds = _number(stats.get("seconds"))
    rounds = stats.get("rounds")
    n_rounds = len(rounds) if isinstance(rounds, list) else _number(rounds)
    alpha, gamma = _number(stats.get("alpha")), _number(stats.get("gamma"))
    out = []
    if tokens is not None:
        out.append(f"{tokens:.0f} tokens")
    if seconds is not None:
        out.append(f"{seconds:.2f} s")
        if tokens and seconds > 0:
            out.append(f"{tokens / seconds:.1f} tokens/s")
    if n_rounds:
        out.append(f"{n_rounds:.0f} rounds")
        if tokens:
            out.append(f"{tokens / n_rounds:.2f} tokens/round")
    if alpha is not None:
        out.append(f"α {alpha:.2f}")
    if gamma is not None:
        out.append(f"γ {gamma:.0f}")
    out += [f"{counts[status]} {status}" for status in STATUSES if counts[status]]
    for key in ("target", "draft"):
        if isinstance(stats.get(key), str):
            out.append(f"{key}: {stats[key]}")
    return out


def _histogram(stats: dict) -> list[int] | None:
    histogram = stats.get("histogram")
    if (
        isinstance(histogram, list)
        and histogram
        and all(_number(n) is not None and n >= 0 for n in histogram)
    ):
        return [int(n) for n in histogram]
    return None


def _number(value) -> float | None:
    return float(value) if isinstance(value, Real) and not isinstance(value, bool) else None
