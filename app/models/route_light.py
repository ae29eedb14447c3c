"""The LIGHT route: the native model (native/light.py) from the conversion cache, where this GGUF's record and
its cached profile chose the native path (plan.cached_light). No transformers model classes load: the second
launch's seconds are saved here."""

from __future__ import annotations

from app.machine import profile as machine_profile
from app.machine import threads
from app.models.locate import Source
from app.models.plan import Loaded, LoadRequest, Route, RouteKind, Said
from app.models.progress import LoadProgress
from app.models.transformers_load import discard, first_line, tokenizer_of


def load_light(request: LoadRequest, source: Source, route: Route, said: Said) -> Loaded | Route:
    """The light model, or the DIRECT route where the cached copy cannot be read (it is discarded, and said:
    the direct load writes it anew)."""
    from app.native import light
    from app.native.descriptor import Digits

    cached = route.light
    assert cached is not None  # choose_route gives LIGHT only with what the cache holds
    report = request.progress
    report(LoadProgress("cache", 0.3, "using the converted-weights cache"))
    try:
        config = light.config_of(cached.folder)
        report(LoadProgress("tokenizer", 0.35, "loading the tokenizer"))
        tokenizer = tokenizer_of(cached.folder, source.name, trust_remote_code=False, config=config)
        report(LoadProgress("weights", 0.4, f"reading {source.path.name}'s 4-bit blocks"))
        model = light.load(cached.folder, source.path, cached.record, config, said.notes,
                           Digits.of_code(cached.kernels.path.digits))
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001  a light load only saves time: anything wrong means a full load
        why = first_line(exc)
        discard(cached.folder, source.path, why, said)
        return Route(RouteKind.DIRECT, f"the cached copy could not be read: {why}")
    said.converted_cache, said.light = "hit", True
    chosen = threads.choose_threads(model, known=cached.threads)
    profile = machine_profile.after_loading(cached.reuse.stored, cached.key, cached.kernels, chosen, source.name)
    return Loaded(model, tokenizer, profile, cached.reuse.stored)
