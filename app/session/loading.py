"""Loading a pair for a chat model: the target (reused when only the draft changes), then the drafter the
measured selection chooses (app.drafting.auto.select, with the token-tree mode). The window's
ModelLoader runs it in its engine thread and turns its progress into signals. No Qt."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app import startup_trace
from app.drafting.registry import NO_DRAFT
from app.errors import LoadCancelled
from app.models.progress import LoadProgress

if TYPE_CHECKING:
    from app.drafting.auto import Selection
    from app.engine.protocols import AnyDrafter
    from app.models import LoadedModel


@dataclass
class LoadRequest:
    target_spec: str
    draft_spec: str
    current: LoadedModel | None = None  # reused when target_spec names it: a draft swap loads no target
    dtype: str = "auto"  # the target's dtype: "auto" (timed on a CPU), "bfloat16", "float32"
    cancel: threading.Event | None = None  # set when the app closes: the load stops at its next stage
    anyway: Selection | None = None  # auto's target-only choice: build its fastest measured drafter instead
    tree: bool | None = None  # token trees: None lets the measurement choose, True/False force them (TREE_MODES)
    remeasure: bool = False  # the target reloads and every timing is taken anew (Models ▸ Measure this machine again)


@dataclass
class LoadResult:
    target: LoadedModel
    drafter: AnyDrafter | None
    draft_spec: str
    seconds: float
    selection: Selection | None = None  # the measured choice ("auto") and costs behind the live γ
    anyway: bool = False  # speculating although auto chose target-only ("Show speculation anyway")
    changes: tuple[str, ...] = ()  # with remeasure: what the new timings changed, one line each


def load_pair(request: LoadRequest, imports: Callable[[float], None],
              stage: Callable[[str, LoadProgress], None]) -> LoadResult:
    """The pair the request names. imports(fraction) while torch and transformers import; stage(what,
    progress) for the target's ("Target") and the draft's ("Draft") stages. Raises LoadCancelled once the
    request's cancel flag is set (checked at every stage), ModelError with a one-line message."""
    start = time.perf_counter()
    imports(0.0)
    # The first load imports them here, in the caller's thread (the window's engine thread).
    from app.session.fast_import import import_model_stack

    import_model_stack(progress=imports)
    from app.drafting.auto import select
    from app.models import load_model

    def report(what: str, p: LoadProgress) -> None:
        _check(request)
        if what == "Target":
            startup_trace.mark_load_stage(p.stage)
        stage(what, p)

    target = request.current
    if target is None or target.spec != request.target_spec or request.remeasure or \
            target.extra.get("requested_dtype", "auto") != request.dtype:
        import torch

        target = None  # released before the next copy loads
        dtype = None if request.dtype == "auto" else getattr(torch, request.dtype)
        target = load_model(request.target_spec, dtype=dtype, progress=lambda p: report("Target", p),
                            remeasure=request.remeasure)
    _check(request)
    stage("Draft", LoadProgress("draft", 0.0, request.draft_spec))
    # Times the drafters on this machine (or reads the cached timings) and builds the chosen one, a token
    # tree where the tree mode allows and the measurement says it pays; make_drafter inside runs the
    # tokenizer pre-flight (IncompatibleModels names the mismatch).
    if request.anyway is not None:  # on auto's measurements: nothing is timed again
        from app.drafting.speculate_anyway import speculate_anyway

        selection = speculate_anyway(request.anyway, target)
    else:
        selection = select(target, request.draft_spec, tree=request.tree, progress=lambda p: report("Draft", p),
                           cancel=request.cancel, remeasure=request.remeasure)
    _check(request)
    startup_trace.mark("drafter")
    changes: tuple[str, ...] = ()
    if request.remeasure and target.profile is not None:
        from app.machine.profile import changes_of

        changes = tuple(changes_of(target.replaced, target.profile))
    return LoadResult(target, selection.drafter, request.draft_spec, time.perf_counter() - start,
                      selection if request.draft_spec != NO_DRAFT else None, anyway=request.anyway is not None,
                      changes=changes)


def _check(request: LoadRequest) -> None:
    if request.cancel is not None and request.cancel.is_set():
        raise LoadCancelled("loading was cancelled")
