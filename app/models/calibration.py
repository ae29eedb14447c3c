"""Measure every available drafter for a loaded target on this machine, cache the result, and choose.

What is timed: the target's verify pass over n = 1..γmax+1 tokens after a cached prompt (v(n)), one
head row, and a short greedy probe of each drafter through the real decoding loop (c and α). Other
processes only ever add time, so every cost is the minimum over repetitions (the uncontended cost),
and v(n) is made non-decreasing in n. The result is cached per machine, pair, device and dtype in a
small JSON file in the user cache folder; any change of those gives a new key. No Qt here.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import platform
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from app.engine import DecodeParams, Drafter, generate
from app.engine.kv import context_limit, forward, new_cache, rollback
from app.engine.policy import AUTO_GAMMA_MAX, AutoGamma, Choice, DrafterProfile, TreeSize, VerifyCosts, choose
from app.paths import user_cache_dir

from .drafts import NO_DRAFT, PROMPT_LOOKUP, SELF_DRAFT, make_drafter, tree_form
from .embedded import DEFAULT_SPEC
from .errors import LoadCancelled, ModelError
from .loading import LoadedModel
from .progress import LoadProgress, ProgressCallback, ignore_progress
from .specs import AUTO
from .tree_probe import verify_tokens, with_tree

CACHE_NAME = "drafter-costs.json"
CACHE_FORMAT = 5  # 2: minimum timings; 3: head charged at every verified position; 4: a longer probe context; 5: trees
CACHE_ENTRIES = 32  # oldest entries beyond this are dropped
PROBE = [{"role": "user", "content": "In a few sentences, explain how a bicycle stays upright."}]
# A chat a few turns in: drafter costs are timed at this context, not at an empty one. The bf16 self-draft
# measured 1.08x target-only after 60 tokens of context and 0.49x after 400 (its attention slows with
# context far faster than the float32 target's), so a short probe chose a drafter that lost in real chats.
_EARLIER = (
    "Bicycles, trains and boats each solve the same problem in a different way: keeping a load moving with "
    "as little effort as possible. A bicycle uses the rider's legs, a chain and two wheels; a train uses steel "
    "wheels on steel rails, where rolling resistance is tiny; a boat pushes water aside and pays for it in "
    "drag that grows quickly with speed. Which one is best depends on the distance, the load and the route. "
) * 3
PROBE_LONG = [
    {"role": "user", "content": "Compare bicycles, trains and boats as ways to move people and goods."},
    {"role": "assistant", "content": _EARLIER},
    *PROBE,
]
PROBE_TOKENS = 16
PROBE_GAMMA = 4
VERIFY_REPS = 3
TIMED_SIZES = (1, 2, 3, 5, 9, 17)  # verify lengths timed; v(n) between them is interpolated (it is ~linear)
SELF_DRAFT_MAX_PARAMS = 600_000_000  # a reduced copy of a larger target costs too much memory to try


class MeasurementCancelled(LoadCancelled):
    """The cancel flag was set while drafters were being timed (the app is closing)."""


@dataclass(frozen=True)
class Calibration:
    verify: VerifyCosts
    profiles: tuple[DrafterProfile, ...]
    cached: bool  # read from the cache file, nothing timed
    seconds: float  # time spent measuring (0 when cached)
    device: str  # "CPU", "CUDA", "MPS": for the reasons shown to people


@dataclass
class Selection:
    """The drafter chosen for a target (None: target-only), with the measurements behind it."""

    drafter: Drafter | None
    spec: str  # the chosen draft spec; "none" for target-only
    choice: Choice
    calibration: Calibration

    def profile(self) -> DrafterProfile | None:
        return next((p for p in self.calibration.profiles if p.name == self.spec), None)

    def auto_gamma(self, gamma_max: int = AUTO_GAMMA_MAX) -> AutoGamma | TreeSize | None:
        """A live γ controller for the chosen drafter (a chosen tree keeps its measured size); None for target-only."""
        profile = self.profile()
        if self.drafter is None or profile is None:
            return None
        if self.choice.tree:
            return TreeSize(profile, self.calibration.verify, self.choice.nodes, self.choice.gamma)
        return AutoGamma(profile, self.calibration.verify, gamma_max)


def device_label(device: torch.device) -> str:
    return {"cpu": "CPU", "cuda": "GPU", "mps": "Mac GPU"}.get(device.type, device.type)


def candidate_specs(target: LoadedModel) -> list[str]:
    """Drafters worth timing for this target: its trained drafts, the embedded model for a larger
    target of the same family, a reduced self-draft for small targets, and prompt lookup."""
    specs = [str(info.path) for info in trained_drafts(target)]
    if target.spec != DEFAULT_SPEC and _embedded_fits(target):
        specs.append(DEFAULT_SPEC)
    if sum(p.numel() for p in target.model.parameters()) <= SELF_DRAFT_MAX_PARAMS:
        specs.append(SELF_DRAFT)
    specs.append(PROMPT_LOOKUP)
    return specs


def select(
    target: LoadedModel, spec: str = AUTO, *, gamma_max: int = AUTO_GAMMA_MAX, progress: ProgressCallback | None = None,
    use_cache: bool = True, cancel=None, tree: bool | None = None, **load_kwargs,
) -> Selection:
    """spec "auto": time every candidate and keep the fastest (or none); any other spec: time that one
    drafter (for the live γ) and keep it even when it is predicted slower, saying so in the choice.
    tree: None lets the prediction choose a chain or a sized token tree, True/False force one."""
    report = progress or ignore_progress
    if spec == NO_DRAFT:
        cal = Calibration(VerifyCosts((1.0,)), (), True, 0.0, device_label(target.device))
        return Selection(None, NO_DRAFT, Choice(None, 1, 1.0, "target-only (chosen by hand)"), cal)
    specs = candidate_specs(target) if spec == AUTO else [spec]
    cal, built = calibrate(target, specs, gamma_max=gamma_max, progress=report, use_cache=use_cache,
                           skip_failures=spec == AUTO, cancel=cancel, **load_kwargs)
    choice = choose(cal.profiles, cal.verify, gamma_max, device=cal.device, tree=tree)
    if spec != AUTO:  # chosen by hand: keep it, but the choice still says whether it pays
        option = choice.options[0] if choice.options else None
        gamma = option.gamma if option else 1
        predicted = option.predicted if option else 1.0
        reason = choice.reason if not choice.target_only else (
            f"{option.label} is predicted at {predicted:.2f}× target-only because {option.why}")
        choice = Choice(spec, gamma, predicted, reason, choice.options, option.nodes if option else 0)
    chosen = choice.drafter or NO_DRAFT
    drafter = built.pop(chosen, None)
    built.clear()
    gc.collect()
    if drafter is None and chosen != NO_DRAFT:
        report(LoadProgress("draft", 0.95, f"loading the chosen draft {chosen}"))
        drafter = make_drafter(chosen, target, progress=report, **load_kwargs)
    if choice.tree:
        drafter = tree_form(drafter, choice.nodes, choice.gamma)
    return Selection(drafter, chosen, choice, cal)


def calibrate(
    target: LoadedModel, specs: list[str], *, gamma_max: int = AUTO_GAMMA_MAX, progress: ProgressCallback | None = None,
    use_cache: bool = True, skip_failures: bool = False, cancel=None, **load_kwargs,
) -> tuple[Calibration, dict[str, Drafter]]:
    """(calibration, the drafters built while measuring, by spec). A cached result builds none.
    skip_failures: a candidate that cannot be built (damaged, made for another target) is left out."""
    report = progress or ignore_progress
    key = cache_key(target, specs, gamma_max)
    label = device_label(target.device)
    if use_cache and (hit := _read_cache(key)) is not None:
        return Calibration(hit[0], hit[1], True, 0.0, label), {}
    start = time.perf_counter()
    ids = probe_ids(target, gamma_max)
    report(LoadProgress("measure", 0.0, "timing the target's verify pass"))
    verify = measure_verify(target.model, ids, verify_tokens(gamma_max))
    profiles, built = [], {}
    for i, spec in enumerate(specs):
        if cancel is not None and cancel.is_set():
            raise MeasurementCancelled
        report(LoadProgress("measure", (i + 0.5) / (len(specs) + 1), f"timing drafter {spec}"))
        try:
            drafter = make_drafter(spec, target, progress=report, **load_kwargs)
        except ModelError:
            if not skip_failures:
                raise
            continue
        if drafter is None:
            continue
        built[spec] = drafter
        profiles.append(with_tree(target, drafter, ids, probe(target, drafter, spec, ids, verify), verify))
    cal = Calibration(verify, tuple(profiles), False, time.perf_counter() - start, label)
    if use_cache:
        _write_cache(key, cal, target)
    report(LoadProgress("measure", 1.0, f"measured {len(profiles)} drafters in {cal.seconds:.1f} s"))
    return cal, built


def probe_ids(target: LoadedModel, gamma_max: int) -> torch.Tensor:
    """The probe chat a few turns in, or the one-question chat where the model's context is too short."""
    ids = target.encode_chat(PROBE_LONG)
    limit = context_limit(target.model)
    if limit is not None and len(ids) + gamma_max + 1 + PROBE_TOKENS + PROBE_GAMMA + 1 > limit:
        return target.encode_chat(PROBE)
    return ids


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


@torch.inference_mode()
def measure_verify(model, ids: torch.Tensor, n_max: int, reps: int = VERIFY_REPS) -> VerifyCosts:
    """v(n) for n = 1..n_max in seconds (head on every row), timed at TIMED_SIZES and n_max, interleaved
    over reps, interpolated between; and one head row's seconds from the n_max pass with one row
    against all rows."""
    device = next(model.parameters()).device
    ids = ids.to(device)
    cache = new_cache(model)
    forward(model, cache, ids[:-1], keep=1)
    held = cache.get_seq_length()
    timed = sorted({n for n in TIMED_SIZES if n < n_max} | {n_max})
    sizes = [(n, n) for n in timed] + [(n_max, 1)]
    times: dict[tuple[int, int], list[float]] = {s: [] for s in sizes}
    for rep in range(reps + 1):  # the first pass warms kernels and the allocator, and is not kept
        for n, keep in sizes:
            fresh = ids[-1:].repeat(n)
            _sync(device)
            t0 = time.perf_counter()
            forward(model, cache, fresh, keep=keep)
            _sync(device)
            if rep:
                times[n, keep].append(time.perf_counter() - t0)
            rollback(cache, held)
    points, floor = [], 0.0
    for n in timed:  # more tokens never cost less: what looks cheaper is noise
        floor = max(floor, min(times[n, n]))
        points.append((n, floor))
    seconds = tuple(_interpolate(points, n) for n in range(1, n_max + 1))
    head = max(0.0, (min(times[n_max, n_max]) - min(times[n_max, 1])) / max(n_max - 1, 1))
    return VerifyCosts(seconds, head)


def _interpolate(points: list[tuple[int, float]], n: int) -> float:
    for (n0, s0), (n1, s1) in zip(points, points[1:], strict=False):
        if n0 <= n <= n1:
            return s0 + (s1 - s0) * (n - n0) / (n1 - n0)
    return points[0][1]


def probe(target: LoadedModel, drafter: Drafter, spec: str, ids: torch.Tensor, verify: VerifyCosts) -> DrafterProfile:
    """c, α and coverage of one drafter from a short greedy run of the real loop (prefill round excluded)."""
    params = DecodeParams(gamma=PROBE_GAMMA, temperature=0.0, max_new_tokens=PROBE_TOKENS, seed=0)
    rounds = generate(target.model, ids, drafter, params, vocab_size=target.vocab_size).rounds[1:]
    drafted = [r for r in rounds if r.drafted]
    tested = sum(min(r.drafted, r.accepted + 1) for r in drafted)
    accepted = sum(r.accepted for r in drafted)
    # Uncontended costs on both sides: the fastest drafted token against the fastest target step.
    c = min(r.draft_time / r.drafted for r in drafted) / verify.step if drafted else 0.0
    alpha = accepted / tested if tested else 0.0
    per_position: tuple[float, ...] = ()
    label = getattr(drafter, "name", spec)
    info = _trained_info(target, spec)
    if info is not None:  # the report measured α on held-out prompts: far more tokens than this probe
        label = info.name
        alpha = info.alpha_greedy if info.alpha_greedy is not None else alpha
        greedy = (info.report.get("evaluation", info.report).get("by_temperature", {}) or {}).get("greedy", {})
        per_position = tuple(a for a in greedy.get("per_position_acceptance", []) if a is not None)
    coverage = len(drafted) / len(rounds) if rounds else 0.0
    return DrafterProfile(spec, label, c, alpha, per_position, coverage)


# --- the cache ---------------------------------------------------------------------------------
def machine_id() -> str:
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = Path(path).read_text().strip()
        except OSError:
            continue
        if text:
            return text
    return platform.node()


def model_fingerprint(model) -> str:
    """Config, parameter count and a sample of the embedding rows: changes when the weights change."""
    h = hashlib.sha256(model.config.to_json_string(use_diff=False).encode())
    h.update(str(sum(p.numel() for p in model.parameters())).encode())
    rows = model.get_input_embeddings().weight
    h.update(rows[:: max(1, rows.shape[0] // 64), :64].detach().float().cpu().numpy().tobytes())
    return h.hexdigest()[:24]


def _spec_fingerprint(spec: str) -> str:
    path = Path(spec).expanduser()
    if path.exists():
        files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
        return spec + ":" + ",".join(f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files)
    return spec


def cache_key(target: LoadedModel, specs: list[str], gamma_max: int) -> str:
    parts = [
        CACHE_FORMAT, machine_id(), platform.machine(), os.cpu_count(), torch.__version__, torch.get_num_threads(),
        model_fingerprint(target.model), str(target.device), str(target.dtype), gamma_max,
        sorted(_spec_fingerprint(s) for s in specs),
    ]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:32]


def cache_file() -> Path:
    return user_cache_dir() / CACHE_NAME


def _read_cache(key: str) -> tuple[VerifyCosts, tuple[DrafterProfile, ...]] | None:
    try:
        entry = json.loads(cache_file().read_text(encoding="utf-8"))["entries"][key]
        verify = VerifyCosts(tuple(entry["verify"]["seconds"]), entry["verify"]["head"])
        profiles = tuple(
            DrafterProfile(p["name"], p["label"], p["c"], p["alpha"], tuple(p["per_position"]), p["coverage"],
                           tuple(p["tree_accepted"]), p["tree_c"])
            for p in entry["profiles"]
        )
        return verify, profiles
    except (OSError, ValueError, KeyError, TypeError):  # absent, damaged or older: measure again
        return None


def _write_cache(key: str, cal: Calibration, target: LoadedModel) -> None:
    path = cache_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        entries = data["entries"] if isinstance(data.get("entries"), dict) else {}
    except (OSError, ValueError, AttributeError):
        entries = {}
    entries[key] = {
        "target": target.name, "device": str(target.device), "dtype": str(target.dtype),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "seconds": cal.seconds,
        "verify": asdict(cal.verify) | {"seconds": list(cal.verify.seconds)},
        "profiles": [asdict(p) | {"per_position": list(p.per_position), "tree_accepted": list(p.tree_accepted)}
                     for p in cal.profiles],
    }
    entries = dict(sorted(entries.items(), key=lambda kv: kv[1].get("measured_at", ""))[-CACHE_ENTRIES:])
    tmp = path.with_suffix(".tmp")
    try:
        tmp.write_text(json.dumps({"format": CACHE_FORMAT, "entries": entries}, indent=1), encoding="utf-8")
        tmp.replace(path)
    except OSError:
        pass  # a read-only cache folder only means measuring again next time


# --- optional sources --------------------------------------------------------------------------
def trained_drafts(target: LoadedModel) -> list:
    """The trained feature drafts made for this target (app.models.trained_drafts), best α first."""
    try:
        from .trained_drafts import list_trained_drafts
    except ImportError:  # an install without trained-draft support
        return []
    return list_trained_drafts(target)


def _trained_info(target: LoadedModel, spec: str):
    return next((i for i in trained_drafts(target) if str(i.path) == spec), None)


def _embedded_fits(target: LoadedModel) -> bool:
    """The embedded SmolLM2-135M drafts for a larger target that shares its tokenizer."""
    from .catalog import _tokenizer
    from .compat import check_tokenizers

    if sum(p.numel() for p in target.model.parameters()) <= 2 * 135_000_000:
        return False  # not larger: the embedded model would cost about a target step
    mine = _tokenizer(DEFAULT_SPEC)
    if mine is None:
        return False
    rows = target.model.get_output_embeddings().weight.shape[0]
    return check_tokenizers(target.tokenizer, mine[0], target_rows=rows, draft_rows=mine[1]).compatible
