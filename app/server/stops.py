"""Stop sequences over streamed text: text that may be the start of a stop sequence is held back until the
next piece decides, so no client ever sees part of a stop sequence, and the answer ends before it."""

from __future__ import annotations


class StopText:
    def __init__(self, stops: tuple[str, ...]) -> None:
        self.stops = stops
        self.held = ""  # text not yet released: it ends with a prefix of some stop sequence
        self.matched = False

    def push(self, piece: str) -> str:
        """Add a piece of the answer; return the text now safe to show ("" once a stop sequence matched)."""
        if self.matched:
            return ""
        text = self.held + piece
        cut = min((i for i in (text.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.matched, self.held = True, ""
            return text[:cut]
        keep = max((_overlap(text, s) for s in self.stops), default=0)
        self.held = text[len(text) - keep :] if keep else ""
        return text[: len(text) - keep]

    def flush(self) -> str:
        """The held-back text, at the end of an answer that never completed a stop sequence."""
        text, self.held = ("" if self.matched else self.held), ""
        return text


def _overlap(text: str, stop: str) -> int:
    """Length of the longest proper prefix of `stop` that `text` ends with."""
    for n in range(min(len(stop) - 1, len(text)), 0, -1):
        if text.endswith(stop[:n]):
            return n
    return 0
