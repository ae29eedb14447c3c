"""The fixed prompt suites under resources/prompts/."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.paths import resource_path


@dataclass(frozen=True, slots=True)
class BenchPrompt:
    id: str
    kind: str
    messages: tuple[dict[str, str], ...]


def load_suite(spec: str) -> list[BenchPrompt]:
    """A suite name under resources/prompts/ ("bench") or a path to a JSON file of that shape."""
    path = Path(spec).expanduser()
    if not path.suffix:
        path = resource_path("prompts", f"{spec}.json")
    if not path.is_file():
        raise ValueError(f"prompt suite not found: {spec} (looked for {path})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        prompts = [
            BenchPrompt(str(p["id"]), str(p.get("kind", "")), tuple(dict(m) for m in p["messages"]))
            for p in data["prompts"]
        ]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a prompt suite ({exc.__class__.__name__}: {exc})") from exc
    if not prompts:
        raise ValueError(f"{path} holds no prompts")
    return prompts
