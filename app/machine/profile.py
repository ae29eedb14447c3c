"""What was measured for one model on this machine, as one typed profile cached as one entry. No Qt.

The profile holds, in the order a load measures them: the CPU linear path (torch_path.py), the thread
count (threads.py), the target's step, v(n) and v_tree(n) with the real loop's target-only step
(timing.py, tree_probe.py, baseline.py), and every drafter's costs (c, α, its tree). A part measured
with another part before it depends on that part: a new kernel path or thread count drops the step
and drafter costs measured under the old one.

Each part carries the Load it was timed under (machine_load.py). A part is reused at a later load
unless:
- it was timed on a busy machine and this load finds the machine quiet (a busy timing is kept only
  until the next quiet load, which measures it again);
- live rounds disagreed with the profile (`disputed`: live_check.py), which measures every part again;
- a re-measure was asked for (`speclens calibrate`, Models ▸ Measure this machine again).

The entry lives in the cost cache (cost_cache.py) under a key of everything the timings depend on: the
machine, its cores, torch, the model's weights, device, requested dtype, the kernel paths on offer
and the thread setting. Anything else changing gives another key, so a stale entry is never read.
"""

from __future__ import annotations

import platform
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import torch

from app.engine.policy import DrafterProfile, VerifyCosts
from app.machine import cost_cache, threads, torch_path
from app.machine import load as machine_load
from app.machine.load import Load
from app.machine.threads import ThreadChoice
from app.machine.torch_path import LinearPath, PathChoice

KIND = "machine-profile"


@dataclass(frozen=True)
class VerifyTiming:
    """The target's passes at the probe context, and the real loop's target-only step there."""

    costs: VerifyCosts  # step, v(n), v_tree(n) in seconds
    loop_step: float | None  # median seconds of a target-only round of the real decoding loop (sampling included)
    context: int  # tokens of context they were timed after
    load: Load | None = None
    cached: bool = False
    # Seconds the per-round lookup (suffix decoding, gated_lookup.py) takes to find a round's match, timed in
    # the engine's rounds between target passes, as it runs (timed alone it read half of that: caches the pass
    # had just filled with weights)
    match: float = 0.0


@dataclass(frozen=True)
class DrafterTiming:
    spec: str  # the draft spec with its files' sizes and times: another file is another drafter
    profile: DrafterProfile
    load: Load | None = None


@dataclass(frozen=True)
class MachineProfile:
    key: str
    kernels: PathChoice | None = None  # None: no choice here (a GPU, a model spread over devices)
    threads: ThreadChoice | None = None
    verify: VerifyTiming | None = None
    drafters: tuple[DrafterTiming, ...] = ()
    left_out: tuple[str, ...] = ()  # draft specs (fingerprinted) that could not be built for it: not tried again
    draft_kernels: PathChoice | None = None  # the linear path of this model's reduced-precision self-draft
    disputed: str = ""  # why live rounds disagreed with it: the next load measures every part again
    target: str = field(default="", compare=False)  # the model's name, for `speclens calibrate --show`

    def drafter(self, spec: str) -> DrafterTiming | None:
        fingerprint = cost_cache.spec_fingerprint(spec)
        return next((d for d in self.drafters if d.spec == fingerprint), None)

    @property
    def loads(self) -> list[tuple[str, Load]]:
        """(part, the load it was timed under) for every timed part."""
        parts = [("kernels", self.kernels), ("threads", self.threads), ("verify", self.verify),
                 ("self-draft kernels", self.draft_kernels)]
        out = [(name, p.load) for name, p in parts if p is not None and p.load is not None]
        return out + [(d.profile.label, d.load) for d in self.drafters if d.load is not None]


def profile_key(model, device: torch.device, requested: torch.dtype | None, kernels_mode: str = "auto") -> str:
    """The cache key of a model's profile: taken from the weights as loaded, before a kernel path converts them.
    kernels_mode: load_model's `kernels` ("auto" offers the native model beside torch's paths, "torch" does not;
    "native" forces it, so its untimed choice is kept apart from auto's timed one)."""
    return key_of_fingerprint(cost_cache.model_fingerprint(model), device, requested, kernels_mode)


def key_of_fingerprint(fingerprint: str, device: torch.device, requested: torch.dtype | None,
                       kernels_mode: str = "auto", *, draft: bool = False) -> str:
    """profile_key from the model's fingerprint alone (a light native load knows it before any model exists).
    draft: the file loaded as a draft, whose digits are chosen without a quality gate: a profile of its own, so
    the same file loaded as a target never reuses them."""
    native = kernels_mode != "torch"
    offered = [torch_path.path_name(p) for p in torch_path.candidates(requested, native)] if device.type == "cpu" else []
    if torch_path.NATIVE in torch_path.candidates(requested, native) and device.type == "cpu":
        from app.native import build_id

        offered.append(build_id())  # a rebuilt kernel is another path: its timings are taken anew
    return cost_cache.key_of([
        KIND, cost_cache.CACHE_FORMAT, cost_cache.machine_id(), platform.machine(), cost_cache.cpu_count(),
        torch.__version__, fingerprint, str(device),
        str(requested) if requested is not None else "auto", offered, threads.setting(),
        *(["native forced"] if kernels_mode == "native" else []), *(["draft"] if draft else []),
    ])


class Reuse:
    """Which parts of the cached profile this load may use (the rule in the module docstring)."""

    def __init__(self, stored: MachineProfile | None, *, remeasure: bool = False,
                 spot: Callable[[], Load] | None = None) -> None:
        self.stored = None if remeasure or (stored is not None and stored.disputed) else stored
        self._spot = spot or machine_load.spot
        self._now: Load | None = None

    def usable(self, load: Load | None) -> bool:
        if self.stored is None:
            return False
        return load is None or not load.busy or self.now().busy

    def now(self) -> Load:
        """The machine at this load, read once, only when a busy timing asks whether it is quiet now."""
        if self._now is None:
            self._now = self._spot()
        return self._now

    def part(self, name: str):
        value = getattr(self.stored, name) if self.stored is not None else None
        return value if value is not None and self.usable(value.load) else None


def read(key: str) -> MachineProfile | None:
    """The profile cached under key; None when absent, damaged or of an older layout."""
    entry = cost_cache.read(key)
    if entry is None or entry.get("kind") != KIND:
        return None
    try:
        return from_json(key, entry)
    except (KeyError, TypeError, ValueError):
        return None


def stored() -> list[MachineProfile]:
    """Every model's profile cached on this machine, newest first (the recommended pairs' speedups read them)."""
    out = []
    for key, entry in cost_cache.entries().items():
        if entry.get("kind") == KIND:
            try:
                out.append(from_json(key, entry))
            except (KeyError, TypeError, ValueError):
                continue
    return out


def write(profile: MachineProfile) -> None:
    cost_cache.write(profile.key, to_json(profile))


def measured_under(stored: MachineProfile, current: MachineProfile) -> bool:
    """Whether `stored`'s step and drafter costs were timed on the kernel path and thread count that run now."""
    return (_path_of(stored.kernels) == _path_of(current.kernels)
            and _threads_of(stored.threads) == _threads_of(current.threads))


def after_loading(stored: MachineProfile | None, key: str, path: PathChoice | None, chosen: ThreadChoice | None,
                  name: str) -> MachineProfile:
    """The profile once a load has its kernel path and thread count: the rest of `stored` is kept while
    they are the ones it was measured under, and while it is not disputed."""
    current = MachineProfile(key, path, chosen, target=name)
    if stored is None or stored.disputed or not measured_under(stored, current):
        return current
    return replace(stored, kernels=path, threads=chosen, target=name)


def _path_of(choice: PathChoice | None) -> LinearPath | None:
    return choice.path if choice is not None else None


def _threads_of(choice: ThreadChoice | None) -> int | None:
    return choice.threads if choice is not None else None


# --- what changed, for people ---------------------------------------------------------------------
def describe(profile: MachineProfile) -> list[str]:
    """The profile as `speclens calibrate` prints it: one line per part, with the load it was timed under."""
    lines = [f"profile of {profile.target or 'this model'} on this machine"]
    if profile.disputed:
        lines.append(f"  disputed by live rounds: {profile.disputed}")
    if profile.kernels is not None:
        lines.append(f"  kernels: {profile.kernels.reason}{_load(profile.kernels.load)}")
    if profile.threads is not None:
        lines.append(f"  threads: {profile.threads.reason}{_load(profile.threads.load)}")
    if profile.verify is not None:
        v = profile.verify
        loop = f", {v.loop_step * 1e3:.2f} ms in the decoding loop" if v.loop_step else ""
        sizes = (2, 5, 9, 17, 33)
        chain = ", ".join(f"v({n}) {v.costs.v(n):.2f}" for n in sizes if n <= len(v.costs.seconds))
        tree = ", ".join(f"v_tree({n}) {v.costs.v_tree(n):.2f}" for n in sizes[1:]
                         if v.costs.tree_seconds and n <= len(v.costs.tree_seconds))
        lines.append(f"  target step: {v.costs.step * 1e3:.2f} ms{loop} at {v.context} tokens of context"
                     f"{_load(v.load)}")
        lines.append(f"  verify, in target steps: {chain}" + (f"; {tree}" if tree else ""))
    if profile.draft_kernels is not None:
        lines.append(f"  self-draft kernels: {profile.draft_kernels.reason}{_load(profile.draft_kernels.load)}")
    for d in profile.drafters:
        p = d.profile
        tree = f", tree c {p.tree_c:.2f}" if p.tree_accepted else ""
        first = f" (+{p.c_round:.3f} a round)" if p.c_round else ""
        lines.append(f"  drafter {p.label}: c {p.c:.3f} target steps{first}, α {p.alpha:.2f}, coverage {p.coverage:.2f}"
                     f"{tree}{_load(d.load)}")
    return lines


def _load(load: Load | None) -> str:
    return f" [{load.text}]" if load is not None else ""


def changes_of(before: MachineProfile | None, after: MachineProfile) -> list[str]:
    """What a re-measure changed, one line each ("threads: 2 -> 1", "step: 25.1 -> 20.3 ms (-19%)")."""
    if before is None:
        return ["nothing was cached before: everything was measured"]
    out: list[str] = []
    if _path_of(before.kernels) != _path_of(after.kernels):
        out.append(f"kernels: {_label(before.kernels)} -> {_label(after.kernels)}")
    if _threads_of(before.threads) != _threads_of(after.threads):
        out.append(f"threads: {_threads_of(before.threads)} -> {_threads_of(after.threads)}")
    if before.verify is not None and after.verify is not None:
        out.append(_moved("target step", before.verify.costs.step, after.verify.costs.step))
        n = min(len(before.verify.costs.seconds), len(after.verify.costs.seconds))
        out.append(_moved(f"v({n})", before.verify.costs.v(n), after.verify.costs.v(n), "target steps"))
    for d in after.drafters:
        old = next((b for b in before.drafters if b.spec == d.spec), None)
        if old is not None:
            out.append(_moved(f"{d.profile.label} c", old.profile.c, d.profile.c, "target steps"))
    return out or ["nothing that was measured before changed"]


def _label(choice: PathChoice | None) -> str:
    return torch_path.path_name(choice.path) if choice is not None else "none"


def _moved(what: str, old: float, new: float, unit: str = "ms") -> str:
    scale = 1e3 if unit == "ms" else 1.0
    pct = (new - old) / old * 100 if old else 0.0
    return f"{what}: {old * scale:.3g} -> {new * scale:.3g} {unit} ({pct:+.0f}%)"


# --- the cache entry ------------------------------------------------------------------------------
def to_json(p: MachineProfile) -> dict:
    return {
        "kind": KIND, "target": p.target, "disputed": p.disputed,
        "kernels": _path_json(p.kernels), "draft_kernels": _path_json(p.draft_kernels),
        "threads": None if p.threads is None else {
            "threads": p.threads.threads, "timings": {str(n): ms for n, ms in p.threads.timings.items()},
            "reason": p.threads.reason, "load": _load_json(p.threads.load)},
        "verify": None if p.verify is None else {
            "seconds": list(p.verify.costs.seconds), "head": p.verify.costs.head,
            "tree_seconds": list(p.verify.costs.tree_seconds), "loop_step": p.verify.loop_step,
            "by_context": [[n, list(s)] for n, s in p.verify.costs.by_context],
            "costs_context": p.verify.costs.context, "round": p.verify.costs.round,
            "match": p.verify.match,
            "context": p.verify.context, "load": _load_json(p.verify.load)},
        "drafters": [{"spec": d.spec, "load": _load_json(d.load), "name": d.profile.name, "label": d.profile.label,
                      "c": d.profile.c, "alpha": d.profile.alpha, "per_position": list(d.profile.per_position),
                      "coverage": d.profile.coverage, "tree_accepted": list(d.profile.tree_accepted),
                      "tree_c": d.profile.tree_c, "c_round": d.profile.c_round} for d in p.drafters],
        "left_out": list(p.left_out),
    }


def from_json(key: str, e: dict) -> MachineProfile:
    t, v = e["threads"], e["verify"]
    return MachineProfile(
        key=key,
        kernels=_path_from(e["kernels"]),
        threads=None if t is None else ThreadChoice(int(t["threads"]), {int(n): ms for n, ms in t["timings"].items()},
                                                    True, t["reason"], _load_from(t["load"])),
        verify=None if v is None else VerifyTiming(
            VerifyCosts(tuple(v["seconds"]), v["head"], tuple(v["tree_seconds"]),
                        tuple((int(n), tuple(s)) for n, s in v.get("by_context", ())), int(v.get("costs_context", 0)),
                        float(v.get("round", 0.0))),
            v["loop_step"], int(v["context"]),
            _load_from(v["load"]), cached=True, match=float(v.get("match", 0.0))),
        drafters=tuple(DrafterTiming(d["spec"], DrafterProfile(
            d["name"], d["label"], d["c"], d["alpha"], tuple(d["per_position"]), d["coverage"],
            tuple(d["tree_accepted"]), d["tree_c"], d["c_round"]), _load_from(d["load"])) for d in e["drafters"]),
        left_out=tuple(e["left_out"]),
        draft_kernels=_path_from(e["draft_kernels"]),
        disputed=e.get("disputed", ""),
        target=e.get("target", ""),
    )


def _path_json(c: PathChoice | None) -> dict | None:
    if c is None:
        return None
    return {"path": vars(c.path), "timings": c.timings, "reason": c.reason, "load": _load_json(c.load)}


def _path_from(d: dict | None) -> PathChoice | None:
    if d is None:
        return None
    return PathChoice(LinearPath(**d["path"]), d["timings"], True, d["reason"], _load_from(d["load"]))


def _load_json(load: Load | None) -> dict | None:
    return load.to_json() if load is not None else None


def _load_from(d: dict | None) -> Load | None:
    return Load.from_json(d) if d is not None else None
