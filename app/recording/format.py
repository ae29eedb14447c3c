"""Reading and writing recordings: gzip-compressed JSON lines, described in docs/recording-format.md.

Events are written generically from their dataclass fields and rebuilt from the dataclass's type
hints, so a field added to TokenEvent or RoundEvent is carried without touching this file, and a
field this version does not know (from a newer minor version) is ignored."""

from __future__ import annotations

import gzip
import json
import math
import os
import types
import zlib
from dataclasses import dataclass, field, fields, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Union, get_args, get_origin, get_type_hints

from app.engine.events import FinishedEvent, RoundEvent, TokenEvent

FORMAT_NAME = "speclens-recording"
FORMAT_VERSION = (1, 1)  # major changes break old readers; minor ones only add fields or line types
# 1.1: token trees (RoundEvent.tree_*, TokenEvent.node); a 1.0 file reads with those at their defaults
SUFFIX = ".speclens"
EVENT_TYPES = {"token": TokenEvent, "round": RoundEvent, "finished": FinishedEvent}
TYPE_OF = {cls: name for name, cls in EVENT_TYPES.items()}


class RecordingError(ValueError):
    """A recording that cannot be played, with a one-line message for the user."""


@dataclass(frozen=True)
class Step:
    """One round as the worker delivered it: its TokenEvents, then the RoundEvent closing it."""

    t: float  # seconds from the start of the run to the moment the round reached the window
    events: tuple

    @property
    def round(self) -> RoundEvent:
        return self.events[-1]


@dataclass
class Run:
    """One decode: what was asked and with what, and everything the engine reported."""

    info: dict  # label, prompt (chat turns), target and draft (name, spec, fingerprint), params, device
    baseline: float | None = None  # target-only seconds per step measured before the run, if any
    baseline_t: float = 0.0
    steps: list[Step] = field(default_factory=list)
    finished: FinishedEvent | None = None
    finished_t: float | None = None

    @property
    def label(self) -> str:
        return str(self.info.get("label", ""))

    @property
    def duration(self) -> float:
        if self.finished_t is not None:
            return self.finished_t
        return self.steps[-1].t if self.steps else 0.0


@dataclass
class Recording:
    header: dict
    runs: list[Run]
    warning: str | None = None  # set when the file ends early: it plays up to where it ends

    @property
    def kind(self) -> str:
        return str(self.header.get("kind", "answer"))


# --- events as JSON ----------------------------------------------------------------------------
def _plain(value):
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "item"):  # a numpy or torch scalar that slipped into an event
        return _plain(value.item())
    return value


def dumps_event(event) -> dict:
    return _plain(event)


def _build(hint, value):
    if value is None:
        return None
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(hint) if a is not type(None)]
        return _build(options[0], value) if len(options) == 1 else value
    if origin is tuple:
        args = get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_build(args[0], v) for v in value)
        return tuple(_build(a, v) for a, v in zip(args, value, strict=True))
    if isinstance(hint, type):
        if issubclass(hint, Enum):
            return hint(value)
        if is_dataclass(hint):
            return _from_dict(hint, value)
        if hint is bool:
            return bool(value)
        if hint in (int, float, str):
            return hint(value)
    return value


_HINTS: dict[type, dict] = {}


def _from_dict(cls, data: dict):
    hints = _HINTS.get(cls) or _HINTS.setdefault(cls, get_type_hints(cls))
    kwargs = {f.name: _build(hints[f.name], data[f.name]) for f in fields(cls) if f.name in data}
    return cls(**kwargs)  # unknown keys are ignored; a missing required field raises TypeError


def loads_event(kind: str, data: dict):
    return _from_dict(EVENT_TYPES[kind], data)


# --- files -------------------------------------------------------------------------------------
def lines_of(recording: Recording) -> list[dict]:
    out = [{"type": "header", **recording.header, "format": FORMAT_NAME, "version": list(FORMAT_VERSION)}]
    for i, run in enumerate(recording.runs):
        out.append({"type": "run", "run": i, **run.info})
        if run.baseline is not None:
            out.append({"type": "baseline", "run": i, "t": run.baseline_t, "seconds_per_step": run.baseline})
        for step in run.steps:
            out += [{"type": TYPE_OF[type(e)], "run": i, "t": step.t, "e": dumps_event(e)} for e in step.events]
        if run.finished is not None:
            out.append({"type": "finished", "run": i, "t": run.finished_t, "e": dumps_event(run.finished)})
    out.append({"type": "end", "runs": len(recording.runs)})
    return out


def write(path: Path, recording: Recording) -> None:
    """Written to a temporary file first: a crash mid-write never leaves half a recording."""
    path = Path(path)
    tmp = path.with_name(path.name + ".part")
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for line in lines_of(recording):
            f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n")
    os.replace(tmp, path)


def read(path: Path) -> Recording:
    """Raises RecordingError for a missing, foreign, damaged or too new file; a truncated one is
    returned with `warning` set."""
    path = Path(path)
    name = path.name
    if not path.is_file():
        raise RecordingError(f"No recording at {path}.")
    raw, truncated = _read_lines(path)
    if not raw:
        raise RecordingError(f"{name} is empty or not a SpecLens recording.")
    try:
        header = json.loads(raw[0])
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT_NAME:
        raise RecordingError(f"{name} is not a SpecLens recording.")
    version = header.get("version") or [0, 0]
    if int(version[0]) > FORMAT_VERSION[0]:
        raise RecordingError(
            f"{name} uses recording format {version[0]}.{version[1]}, newer than this SpecLens reads "
            f"({FORMAT_VERSION[0]}.x): update SpecLens to play it."
        )
    recording = Recording({k: v for k, v in header.items() if k != "type"}, [])
    ended = False
    pending: dict[int, list] = {}
    for number, text in enumerate(raw[1:], start=2):
        last = number == len(raw)
        try:
            line = json.loads(text)
            ended = _apply(recording, pending, line) or ended
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            if last and truncated:
                break  # the cut went through this line
            raise RecordingError(f"{name} is damaged at line {number} ({type(exc).__name__}: {exc}).") from None
    if truncated or not ended:
        rounds = sum(len(r.steps) for r in recording.runs)
        recording.warning = f"{name} ends early (the recording was cut off): playing the {rounds} rounds it holds."
    if not recording.runs:
        raise RecordingError(f"{name} holds no run to play.")
    return recording


def _read_lines(path: Path) -> tuple[list[str], bool]:
    lines: list[str] = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                lines.append(line)
    except EOFError:  # the compressed stream stops early: a truncated file
        return lines, True
    except (gzip.BadGzipFile, zlib.error, UnicodeDecodeError, OSError) as exc:
        if not lines:
            raise RecordingError(f"{path.name} is not a SpecLens recording (not gzip-compressed JSON lines).") from None
        raise RecordingError(f"{path.name} is damaged after line {len(lines)} ({exc}).") from None
    truncated = bool(lines) and not lines[-1].endswith("\n")
    return lines, truncated


def _apply(recording: Recording, pending: dict[int, list], line: dict) -> bool:
    """Add one line to the recording; True for the closing line. Unknown line types are skipped."""
    kind = line["type"]
    if kind == "end":
        return True
    if kind == "run":
        recording.runs.append(Run({k: v for k, v in line.items() if k not in ("type", "run")}))
        return False
    if kind not in ("baseline", *EVENT_TYPES):
        return False
    run = recording.runs[int(line["run"])]
    t = float(line["t"])
    if kind == "baseline":
        run.baseline, run.baseline_t = float(line["seconds_per_step"]), t
    elif kind == "finished":
        run.finished, run.finished_t = loads_event(kind, line["e"]), t
    else:
        events = pending.setdefault(int(line["run"]), [])
        events.append(loads_event(kind, line["e"]))
        if kind == "round":
            run.steps.append(Step(t, tuple(events)))
            events.clear()
    return False
