"""Trained feature drafts (made by `speclens distill`): find, list, load and save them. No Qt here.

A draft is a folder holding
- `feature_draft.json`: the network's shape, the target fingerprint, a display name;
- `model.safetensors`: the draft's own weights (the embedding and head rows are the target's);
- `report.json`: the evaluation written by distill (per-position acceptance, α, c), optional;
- `command.txt`: the command line that made it, optional.

API (used by the CLI and the GUI's draft picker):
- `list_trained_drafts(target=None, dirs=None) -> list[TrainedDraftInfo]`: every draft found in the
  search folders (the bundled `resources/drafts/` and the user's `<data dir>/drafts/`), each with
  path, name, α at T = 0 and T = 0.7 and c from its report; with a loaded target, only those made
  for it (fingerprint match). Damaged folders are skipped, never raised.
- `load_trained_draft(path, target) -> FeatureDrafter`: refuses a draft made for another target
  (IncompatibleModels) and reports a damaged folder (CorruptModel), each in one sentence.
- `find_trained_draft(target) -> Path`: the best-α draft for this target, else ModelNotFound.
- `is_trained_draft(path)`, `default_output_dir(target_name)`, `save_trained_draft(...)`.
`make_drafter("trained", target)` and `make_drafter(DIR, target)` go through these.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import torch

from app.drafting.registry import TRAINED_CONFIG, TRAINED_DRAFT, is_trained_folder
from app.engine.feature_drafter import FeatureDrafter
from app.engine.feature_format import FeatureDraftConfig, fingerprint, fingerprint_mismatch
from app.engine.feature_net import FeatureDraftModel
from app.errors import CorruptModel, IncompatibleModels, ModelNotFound
from app.machine.packed import hint_of, pack_linear, pack_linears
from app.models.rows import output_rows
from app.native.draft import native_feature_drafter
from app.native.model import is_native
from app.paths import resource_path, user_data_dir

CONFIG_NAME = TRAINED_CONFIG
WEIGHTS_NAME = "model.safetensors"
REPORT_NAME = "report.json"
COMMAND_NAME = "command.txt"
TRAINED = TRAINED_DRAFT


@dataclass(frozen=True)
class TrainedDraftInfo:
    path: Path
    name: str
    target_name: str
    alpha_greedy: float | None  # α at T = 0 on held-out prompts, from report.json
    alpha_sampled: float | None  # α at T = 0.7
    c: float | None  # draft step ÷ target step, measured by distill on the machine that trained it
    fingerprint: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)

    def describe(self) -> str:
        def fmt(x):
            return "?" if x is None else f"{x:.2f}"

        return f"{self.name}: α {fmt(self.alpha_greedy)} (T=0), {fmt(self.alpha_sampled)} (T=0.7), c {fmt(self.c)}"


def search_dirs() -> list[Path]:
    return [resource_path("drafts"), user_data_dir() / "drafts"]


def default_output_dir(target_name: str) -> Path:
    """Where distill writes by default: <data dir>/drafts/<target slug>[-N]."""
    slug = re.sub(r"[^a-z0-9]+", "-", target_name.lower()).strip("-") or "draft"
    base = user_data_dir() / "drafts" / slug
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{slug}-{n}")
    return path


def is_trained_draft(path: str | Path) -> bool:
    return is_trained_folder(str(path))


def read_info(path: Path) -> TrainedDraftInfo:
    """Metadata of one draft folder without loading weights; CorruptModel when the config is unreadable."""
    config = _read_config(path)
    report = {}
    report_path = path / REPORT_NAME
    if report_path.is_file():
        try:
            report = json.loads(report_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            report = {}
    summary = report.get("summary", {}) if isinstance(report, dict) else {}
    return TrainedDraftInfo(
        path=path, name=config.get("name") or path.name, target_name=config.get("target_name", "?"),
        alpha_greedy=summary.get("alpha_greedy"), alpha_sampled=summary.get("alpha_sampled"), c=summary.get("c"),
        fingerprint=config.get("fingerprint", {}), report=report,
    )


def list_trained_drafts(target=None, dirs: list[Path] | None = None) -> list[TrainedDraftInfo]:
    """Drafts in the search folders (or `dirs`), best greedy α first; only the target's when one is given."""
    found: list[TrainedDraftInfo] = []
    for root in dirs if dirs is not None else search_dirs():
        candidates = [root] if is_trained_draft(root) else sorted(p for p in Path(root).glob("*") if p.is_dir())
        for path in candidates:
            if not is_trained_draft(path):
                continue
            try:
                info = read_info(path)
            except CorruptModel:
                continue
            # the target's fingerprint only once a draft is found: hashing its weights took 0.13 s per launch
            if target is None or fingerprint_mismatch(info.fingerprint, target_fingerprint(target)) is None:
                found.append(info)
    return sorted(found, key=lambda i: -(i.alpha_greedy or 0.0))


def find_trained_draft(target, dirs: list[Path] | None = None) -> Path:
    drafts = list_trained_drafts(target, dirs)
    if not drafts:
        raise ModelNotFound(
            f"no trained draft for {target.name}; make one with: speclens distill --target {target.spec} "
            "(or pick another --draft)"
        )
    return drafts[0].path


def trained_candidates(target) -> list[str]:
    """Auto's candidates of this kind (the registry's AutoRule): the folders of the drafts made for the
    target, best α first."""
    return [str(info.path) for info in list_trained_drafts(target)]


def target_fingerprint(target) -> dict:
    """Fingerprint of a LoadedModel (cached on it) or of a bare transformers model."""
    extra = getattr(target, "extra", None)
    model = getattr(target, "model", target)
    if extra is None:
        return fingerprint(model)
    if "fingerprint" not in extra:
        extra["fingerprint"] = fingerprint(model)
    return extra["fingerprint"]


def best_trained_draft(spec: str, target, **load_kwargs) -> FeatureDrafter:
    """The registry's factory for "trained": the best trained feature draft for this target."""
    return load_trained_draft(find_trained_draft(target), target)


def trained_draft(spec: str, target, **load_kwargs) -> FeatureDrafter:
    """The registry's factory for a folder written by `speclens distill`."""
    return load_trained_draft(spec, target)


def load_trained_draft(path: str | Path, target, min_confidence: float | None = None) -> FeatureDrafter:
    """A FeatureDrafter on the target's device; IncompatibleModels / CorruptModel with a one-line reason."""
    path = Path(path).expanduser()
    data = _read_config(path)
    try:
        cfg = FeatureDraftConfig.from_json(data)
    except (TypeError, ValueError) as exc:
        raise CorruptModel(f"the draft in {path} is damaged ({exc})") from exc
    model = getattr(target, "model", target)
    reason = fingerprint_mismatch(cfg.fingerprint, target_fingerprint(target))
    if reason is not None:
        name = getattr(target, "name", type(model).__name__)
        raise IncompatibleModels(f"the draft in {path} cannot be used with {name}: {reason}")
    draft = FeatureDraftModel(cfg)
    state = _read_weights(path / WEIGHTS_NAME)
    try:
        draft.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise CorruptModel(f"the draft weights in {path} do not match its config ({_first_line(exc)})") from exc
    ids = draft.vocab_ids
    vocab_rows = output_rows(model)
    if ids.numel() == 0 or int(ids.min()) < 0 or int(ids.max()) >= vocab_rows:
        raise CorruptModel(f"the draft in {path} is damaged (token ids outside the vocabulary)")
    head = model.get_output_embeddings().weight
    draft = draft.to(device=head.device, dtype=head.dtype)
    name = data.get("name") or path.name
    drafter = FeatureDrafter(draft, model, name=f"{name} (trained feature draft)", min_confidence=min_confidence)
    if is_native(model):
        return native_feature_drafter(drafter)
    hint = hint_of(model)
    return drafter if hint is None else pack_feature_drafter(drafter, hint)


def pack_feature_drafter(drafter: FeatureDrafter, hint: int) -> FeatureDrafter:
    """A feature draft on a packed bf16 target: its fc, layers and head rows packed the same way."""
    pack_linears(drafter.model, hint)
    drafter.reduced_head = pack_linear(drafter.reduced_head, hint)  # type: ignore[assignment]  # same call as a Linear
    return drafter


def save_trained_draft(path: str | Path, draft: FeatureDraftModel, *, name: str, target_name: str,
                       extra: dict | None = None) -> None:
    """Write config and weights (via temporary files, so an interrupted save never leaves a half draft). A disk
    that refuses (full, over a quota) raises OSError: safetensors' own error type would read as a damaged draft."""
    from safetensors import SafetensorError
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu").contiguous() for k, v in draft.state_dict().items()}
    state = {k: (v.float() if v.is_floating_point() else v) for k, v in state.items()}
    tmp = path / (WEIGHTS_NAME + ".tmp")
    try:
        save_file(state, str(tmp), metadata={"format": "speclens-feature-draft"})
    except SafetensorError as exc:
        tmp.unlink(missing_ok=True)
        raise OSError(f"could not write the draft to {path} ({exc})") from exc
    tmp.replace(path / WEIGHTS_NAME)
    config = draft.cfg.to_json() | {"name": name, "target_name": target_name} | (extra or {})
    tmp = path / (CONFIG_NAME + ".tmp")
    tmp.write_text(json.dumps(config, indent=1), encoding="utf-8")
    tmp.replace(path / CONFIG_NAME)


def _read_config(path: Path) -> dict:
    file = path / CONFIG_NAME
    if not file.is_file():
        raise ModelNotFound(f"{path} holds no trained draft ({CONFIG_NAME} is missing)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CorruptModel(f"the draft in {path} is damaged ({CONFIG_NAME}: {_first_line(exc)})") from exc
    if not isinstance(data, dict):
        raise CorruptModel(f"the draft in {path} is damaged ({CONFIG_NAME} is not a JSON object)")
    return data


def _read_weights(file: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    if not file.is_file():
        raise CorruptModel(f"the draft in {file.parent} is damaged ({file.name} is missing)")
    try:
        return load_file(str(file))
    except Exception as exc:  # safetensors raises its own error types for truncated/garbled files
        raise CorruptModel(f"the draft in {file.parent} is damaged ({file.name}: {_first_line(exc)})") from exc


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0]
