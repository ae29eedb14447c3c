"""The load's route, chosen once from the request and the source (plan.choose_route), and what a route that
declines hands on to (loading.follow). No model loads here: the cache's record and profile are planted."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from app.machine import profile as machine_profile
from app.machine import torch_path
from app.machine.threads import ThreadChoice
from app.models import loading, plan
from app.models.locate import Source
from app.models.plan import Loaded, LoadRequest, Route, RouteKind, Said, choose_route
from app.native import active_build, conversion_cache, record

pytestmark = pytest.mark.skipif(active_build() is None, reason="the native kernel is not built here")

NATIVE_CHOICE = torch_path.PathChoice(torch_path.NATIVE, {}, True, "native: cached")
TORCH_CHOICE = torch_path.PathChoice(torch_path.LinearPath("float32"), {}, True, "fp32: cached")
THREADS = ThreadChoice(2, {}, True, "cached")


def request(**change) -> LoadRequest:
    fields = {"spec": "m.gguf", "device": torch.device("cpu"), "requested": None, "dtype": torch.float32,
              "kernels": "auto", "use_cache": True, "remeasure": False, "trust_remote_code": False,
              "allow_pickle": False, "offline": None, "progress": lambda _: None}
    return LoadRequest(**{**fields, **change})


def gguf(tmp_path: Path) -> Source:
    return Source("gguf", tmp_path / "m.gguf", "m")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A conversion-cache folder for the GGUF; set(record=..., kernels=...) plants its record and profile."""
    folder = tmp_path / "cached"
    folder.mkdir()
    looked = []
    monkeypatch.setattr(conversion_cache, "lookup", lambda path: looked.append(path) or folder)

    def plant(*, has_record=True, kernels=NATIVE_CHOICE, threads=THREADS, unreadable=False):
        if unreadable:
            (folder / record.RECORD).write_text("{not json")
        rec = record.Record("f" * 24, 1000, "LlamaForCausalLM") if has_record else None
        monkeypatch.setattr(record, "read_record", lambda _folder: rec)
        monkeypatch.setattr(machine_profile, "read",
                            lambda key: machine_profile.MachineProfile(key, kernels=kernels, threads=threads))

    plant.looked = looked
    return plant


def test_an_embedded_gguf_with_its_record_and_a_native_profile_loads_light(tmp_path, cache):
    cache()
    route = choose_route(request(), Source("embedded", tmp_path / "m.gguf", "SmolLM2"))
    assert route.kind is RouteKind.LIGHT and route.light is not None
    assert route.light.kernels == NATIVE_CHOICE and route.light.threads == THREADS


def test_a_gguf_without_a_record_is_read_from_its_blocks(tmp_path, cache):
    cache(has_record=False)
    route = choose_route(request(), gguf(tmp_path))
    assert route.kind is RouteKind.DIRECT and route.notes == ()  # a first load: nothing to say


def test_an_unreadable_record_is_said_and_the_file_read_in_full(tmp_path, cache):
    cache(has_record=False, unreadable=True)
    route = choose_route(request(), gguf(tmp_path))
    assert route.kind is RouteKind.DIRECT and "native record was unreadable" in route.notes[0]


@pytest.mark.parametrize("kernels,threads", [(TORCH_CHOICE, THREADS), (NATIVE_CHOICE, None)])
def test_a_profile_that_chose_torch_or_has_no_threads_is_no_light_load(tmp_path, cache, kernels, threads):
    cache(kernels=kernels, threads=threads)
    assert choose_route(request(), gguf(tmp_path)).kind is RouteKind.DIRECT


@pytest.mark.parametrize("change", [{"remeasure": True}, {"use_cache": False}])
def test_remeasure_or_no_cache_reads_the_blocks_without_looking_at_the_cache(tmp_path, cache, change):
    cache()
    assert choose_route(request(**change), gguf(tmp_path)).kind is RouteKind.DIRECT
    assert cache.looked == []


@pytest.mark.parametrize("change,why", [
    ({"kernels": "torch"}, "--kernels torch"),
    ({"device": torch.device("cuda")}, "runs on a CPU"),
    ({"requested": torch.bfloat16}, "a dtype was asked for"),
])
def test_what_rules_the_native_kernel_out_loads_transformers_model(tmp_path, cache, change, why):
    cache()
    route = choose_route(request(**change), gguf(tmp_path))
    assert route.kind is RouteKind.TORCH and why in route.reason and route.native_left_out is None
    assert cache.looked == []


def test_a_folder_loads_transformers_model_without_reading_any_cache(tmp_path, cache):
    cache()
    route = choose_route(request(), Source("folder", tmp_path, "tiny"))
    assert route.kind is RouteKind.TORCH and cache.looked == []


def test_a_declining_route_hands_on_light_to_direct_to_torch_on_torch_paths_only(tmp_path, monkeypatch):
    seen: list[Route] = []
    done = Loaded("model", "tokenizer", None, None)

    def light(_request, _source, route, _said):
        seen.append(route)
        return Route(RouteKind.DIRECT, "the cached copy could not be read")

    def direct(_request, _source, route, _said):
        seen.append(route)
        return Route(RouteKind.TORCH, "native left out: quality", native_left_out="quality")

    def torch_route(_request, _source, route, _said):
        seen.append(route)
        return done

    monkeypatch.setattr(loading, "ROUTES", {RouteKind.LIGHT: light, RouteKind.DIRECT: direct,
                                           RouteKind.TORCH: torch_route})
    start = Route(RouteKind.LIGHT, "planted")
    assert loading.follow(start, request(), gguf(tmp_path), Said()) is done
    assert [r.kind for r in seen] == [RouteKind.LIGHT, RouteKind.DIRECT, RouteKind.TORCH]
    assert seen[-1].native_left_out == "quality"


def test_said_is_what_the_user_reads(tmp_path):
    said = Said(warnings=["w"], converted_cache="hit", light=True)
    extra = said.extra(gguf(tmp_path), torch.bfloat16)
    assert extra == {"source": "gguf", "path": str(tmp_path / "m.gguf"), "warnings": ["w"],
                     "requested_dtype": "bfloat16", "converted_cache": "hit", "light": True}
    assert "notes" not in Said().extra(gguf(tmp_path), None) and plan.KERNELS == ("auto", "native", "torch")
