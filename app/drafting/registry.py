"""Draft specs, and the one registry that maps each to the drafter it names. Torch-free: the catalog and the
pickers list the registry before torch loads, and a kind's factory is imported only when it builds.

A spec is what `--draft` and the draft picker take: "auto" (a choice by measurement, app.drafting.auto),
"none", "prompt-lookup", "self", "trained", a folder written by `speclens distill`, "vocab:<K>:<spec>" (the draft
model <spec> with a head over the target's K most frequent tokens), or a model (a folder, a
.gguf file, a hub id). Each kind of drafter is one `DraftKind` line in KINDS: the spec it answers (or, for
specs that name a path, how it knows one), its factory, the title the pickers list it under, and whether
auto weighs it (an `AutoRule`: the specs of the kind worth timing for a target, and where they stand among
the candidates). The drafter a factory builds describes itself (app/engine/protocols.py: its tree, chain
and static forms and its live controller), so adding a drafter is its own file plus one line here
(docs/drafters.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

PROMPT_LOOKUP = "prompt-lookup"
SUFFIX = "suffix"  # prompt lookup over the context and an index of other text (suffix decoding)
SELF_DRAFT = "self"
NO_DRAFT = "none"
TRAINED_DRAFT = "trained"  # the best trained feature draft found for the target
AUTO = "auto"  # the drafter and γ measured fastest on this machine, or none
VOCAB_PREFIX = "vocab:"  # vocab:<K>:<draft spec>, a draft model's head cut to the target's K most frequent tokens
TRAINED_CONFIG = "feature_draft.json"  # the file a trained feature draft's folder is known by

# (spec, target: app.models.LoadedModel, **load options) -> the drafter (app.engine.protocols.AnyDrafter),
# or None for target-only; a one-line ModelError (or ValueError) where it cannot be built for this target.
Factory = Callable[..., Any]
# (target: app.models.LoadedModel) -> the specs of a kind that auto times for this target, in order ([]: none)
Candidates = Callable[[Any], list[str]]


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:  # noqa: N802 - the name pyside6-lupdate collects
    """Marks a title for translation (packaging/i18n.py reads this file too); the window translates it."""
    return text


def _function(ref: str | Callable[..., Any]) -> Callable[..., Any]:
    """A "module:function" reference imported now (torch may load then), or the function itself."""
    if isinstance(ref, str):
        module, name = ref.split(":")
        return getattr(import_module(module), name)
    return ref


@dataclass(frozen=True, slots=True)
class AutoRule:
    """Auto (app.drafting.auto) weighs this kind: it times the specs `specs` names for the target, and the
    candidates of every kind go in `rank` order (lower first; of two drafters predicted equally fast, the one
    timed first is kept)."""

    rank: int
    specs: str | Candidates | None = None  # "module:function" or the function; None: the kind's own spec, always

    def candidates(self, kind: DraftKind, target: Any) -> list[str]:
        return [kind.spec] if self.specs is None else list(_function(self.specs)(target))


@dataclass(frozen=True, slots=True)
class DraftKind:
    """One kind of drafter as a spec names it."""

    spec: str  # the spec it answers; "" for a kind that `claims` specs (paths)
    factory: str | Factory  # "module:function", imported when it builds (torch loads then), or the function
    title: str = ""  # listed in the draft picker under this title (translated in context "Drafters"); "" not listed
    claims: Callable[[str], bool] | None = None  # for spec "": whether a spec names one of this kind
    auto: AutoRule | None = None  # whether (and which of its specs) auto times for a target; None: never

    def answers(self, spec: str) -> bool:
        return spec == self.spec if self.spec else self.claims is not None and self.claims(spec)

    def build(self, spec: str, target: Any, **load_kwargs: Any) -> Any:
        return _function(self.factory)(spec, target, **load_kwargs)


def is_trained_folder(spec: str) -> bool:
    """A folder written by `speclens distill` (app.drafting.trained_drafts)."""
    return (Path(spec).expanduser() / TRAINED_CONFIG).is_file()


def is_vocab_spec(spec: str) -> bool:
    """A draft model over the target's K most frequent tokens: "vocab:<K>:<draft spec>" (app.drafting.vocab_draft)."""
    return spec.startswith(VOCAB_PREFIX)


def _any_model(spec: str) -> bool:
    return True


# Auto's candidates, by rank: the target's trained drafts (best α first), the embedded model for a larger target
# of its family and the compatible draft models the user has (app.drafting.local_drafts), the self-draft of a
# small target, prompt lookup. Suffix decoding is not timed on its own: auto
# runs lookup per round over the suffix index where lookup pays (app.drafting.auto).
KINDS: list[DraftKind] = [
    DraftKind(NO_DRAFT, "app.drafting.drafts:target_only"),
    DraftKind(AUTO, "app.drafting.drafts:by_measurement"),
    DraftKind(PROMPT_LOOKUP, "app.drafting.drafts:prompt_lookup",
              QT_TRANSLATE_NOOP("Drafters", "prompt lookup (n-grams from the prompt)"), auto=AutoRule(40)),
    DraftKind(SUFFIX, "app.drafting.suffix_corpus:suffix_drafter",
              QT_TRANSLATE_NOOP("Drafters", "suffix decoding (your chats and the model's own answers)")),
    DraftKind(SELF_DRAFT, "app.drafting.drafts:self_draft_of",
              QT_TRANSLATE_NOOP("Drafters", "reduced-precision copy of the target"),
              auto=AutoRule(30, "app.drafting.drafts:self_draft_candidates")),
    DraftKind(TRAINED_DRAFT, "app.drafting.trained_drafts:best_trained_draft"),
    DraftKind("", "app.drafting.vocab_draft:vocab_draft", claims=is_vocab_spec),  # vocab:<K>:<draft spec>
    DraftKind("", "app.drafting.trained_drafts:trained_draft", claims=is_trained_folder,
              auto=AutoRule(10, "app.drafting.trained_drafts:trained_candidates")),
    DraftKind("", "app.drafting.drafts:model_draft", claims=_any_model,  # last: any other spec names a model
              auto=AutoRule(20, "app.drafting.drafts:model_candidates")),
]


def kind_of(spec: str) -> DraftKind:
    """The kind a spec names (a model, when no other kind answers it)."""
    return next(kind for kind in KINDS if kind.answers(spec))


def register(kind: DraftKind) -> DraftKind:
    """Add a kind at run time (a plugin, a test), answered before the model kind that takes every spec."""
    KINDS.insert(len(KINDS) - 1, kind)
    return kind


def unregister(kind: DraftKind) -> None:
    KINDS.remove(kind)


def auto_candidates(target: Any) -> list[str]:
    """The specs auto times for a loaded target: each kind with an AutoRule names its own, kinds in rank order
    (registry order within a rank)."""
    weighed = sorted((kind for kind in KINDS if kind.auto is not None), key=_rank)
    return [spec for kind in weighed if kind.auto is not None for spec in kind.auto.candidates(kind, target)]


def _rank(kind: DraftKind) -> int:
    return kind.auto.rank if kind.auto is not None else 0


def listed() -> list[DraftKind]:
    """The kinds the draft picker offers by name, in registry order."""
    return [kind for kind in KINDS if kind.title]


def spec_title(spec: str) -> str:
    """A drafter spec as a person reads it: a folder or file by its name, a trained feature draft's folder as
    "feature draft (<folder>)"; a spec that names no path ("self", "prompt-lookup") as it is."""
    if "/" not in spec and "\\" not in spec:
        return spec
    path = Path(spec).expanduser()
    if (path / TRAINED_CONFIG).is_file():
        return f"feature draft ({path.name})"
    return path.name or spec
