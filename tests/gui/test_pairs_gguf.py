"""Models → Recommended pairs…, the GGUF pairs for CPUs: sizes, memory and the speedup shown as a prediction
until this machine's profile holds the pair, then as measured; the number is the policy's formula on the
costs; a download goes through the fetch seam (no network here), can be cancelled, and then loads the pair."""

from __future__ import annotations

import threading

import pytest
import torch

from app.drafting import recommended
from app.drafting.recommended import ALPHA_ASSUMED, GGUF_PAIRS, fetch_gguf, gguf_files, speedup_here
from app.engine.policy import DrafterProfile, VerifyCosts
from app.engine.policy.cost import best_gamma
from app.errors import LoadCancelled
from app.gui.pairs_dialog import PairsDialog
from app.machine import cost_cache
from app.machine import profile as machine_profile
from app.models import real_pair

CPU = torch.device("cpu")
# v(n) in target steps rising steeply (a compute-bound pass): a formula that ignored it would show far more
RISING = VerifyCosts(tuple(0.02 * (1 + 0.3 * n) for n in range(9)))


@pytest.fixture
def here(tmp_path, monkeypatch):
    """An empty cost cache and real-pair folder, an empty offline hub cache: nothing measured or downloaded."""
    import huggingface_hub.constants as hub

    monkeypatch.setenv("SPECLENS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hub, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(real_pair, "default_dir", lambda: tmp_path / "real-pair")
    return tmp_path


def plant_qwen(folder):
    """The Qwen pair's files on disk at their sizes (sparse: what `gguf_files` checks without hashing)."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in real_pair.PAIR:
        with (folder / f.filename).open("wb") as out:
            out.truncate(f.size)
    return folder / real_pair.TARGET.filename, str(folder / real_pair.DRAFT.filename)


def plant_profile(target_stem: str, draft: str, costs: VerifyCosts, c: float, alpha: float) -> DrafterProfile:
    drafter = DrafterProfile(draft, "Qwen 0.5B", c, alpha)
    machine_profile.write(machine_profile.MachineProfile(
        "planted", verify=machine_profile.VerifyTiming(costs, None, 256),
        drafters=(machine_profile.DrafterTiming(cost_cache.spec_fingerprint(draft), drafter),), target=target_stem))
    return drafter


def by_hand(c: float, alpha: float, costs: VerifyCosts) -> float:
    """Leviathan's E[N] / (γc + v(γ+1)), best γ in 1..8, written out here rather than taken from the policy."""
    return max((1 - alpha ** (g + 1)) / (1 - alpha) / (g * c + costs.seconds[g] / costs.seconds[0]) for g in range(1, 9))


def test_both_gguf_pairs_show_size_memory_and_a_prediction(qtbot, here):
    dialog = PairsDialog(CPU)
    qtbot.addWidget(dialog)
    t = dialog.gguf_table
    rows = {t.item(r, 0).text().splitlines()[0]: [t.item(r, c).text() for c in range(1, 5)] for r in range(t.rowCount())}
    assert set(rows) == {"Qwen2.5-Coder-1.5B-Instruct Q4_K_M", "SmolLM2-1.7B-Instruct Q4_K_M"}
    qwen, smol = rows["Qwen2.5-Coder-1.5B-Instruct Q4_K_M"], rows["SmolLM2-1.7B-Instruct Q4_K_M"]
    assert qwen[0] == "1.61 GB" and smol[0] == "1.06 GB"
    assert "drafted by embedded SmolLM2-135M" in t.item(1, 0).text()
    assert qwen[1] == f"{GGUF_PAIRS[0].memory_bytes(CPU) / 2**30:.1f} GiB"
    for label in (qwen[2], smol[2]):
        assert label.startswith("predicted ") and label.endswith("× here (not measured yet)")
    assert "α 0.7 assumed" in t.item(0, 3).toolTip() and "v(n) assumed" in t.item(0, 3).toolTip()
    assert [t.item(r, 4).text() for r in range(2)] == ["not downloaded"] * 2
    assert [b.text() for b in dialog.gguf_buttons] == ["Download and use"] * 2


def test_the_prediction_is_the_policy_formula_on_bytes_and_this_machines_verify_costs(qtbot, here):
    pair = GGUF_PAIRS[1]
    measured_elsewhere = machine_profile.MachineProfile(
        "other", verify=machine_profile.VerifyTiming(RISING, None, 256), target="some other model")
    s = speedup_here(pair, [measured_elsewhere])
    c = pair.draft_bytes / pair.target_bytes
    assert not s.measured and s.value == pytest.approx(by_hand(c, ALPHA_ASSUMED, RISING))
    assert s.value == best_gamma(DrafterProfile("", "", c, ALPHA_ASSUMED), RISING)[1]
    ignoring_v = by_hand(c, ALPHA_ASSUMED, VerifyCosts((1.0,) * 9))
    assert f"{ignoring_v:.2f}" != f"{s.value:.2f}"  # a formula without v(n) would show another figure
    machine_profile.write(measured_elsewhere)
    dialog = PairsDialog(CPU, gguf_pairs=[pair])
    qtbot.addWidget(dialog)
    assert dialog.gguf_table.item(0, 3).text() == f"predicted {s.value:.2f}× here (not measured yet)"
    assert "as measured here for some other model" in dialog.gguf_table.item(0, 3).toolTip()


def test_a_pair_measured_here_shows_measured(qtbot, here):
    target, draft = plant_qwen(here / "real-pair")
    drafter = plant_profile(target.stem, draft, RISING, c=0.3, alpha=0.8)
    gamma, value = best_gamma(drafter, RISING)
    assert value == pytest.approx(by_hand(0.3, 0.8, RISING))
    dialog = PairsDialog(CPU)
    qtbot.addWidget(dialog)
    assert dialog.gguf_table.item(0, 3).text() == f"measured {value:.2f}× here (γ {gamma})"
    assert dialog.gguf_table.item(0, 4).text() == "downloaded" and dialog.gguf_buttons[0].text() == "Use this pair"
    assert dialog.gguf_table.item(1, 3).text().startswith("predicted")  # the SmolLM2 pair was not measured


def test_download_goes_through_the_fetch_seam_then_loads_the_pair(qtbot, model_rig, here):
    requested = []
    model_rig.model_flow.load_models = lambda target, draft: requested.append((target, draft))
    seen = []

    def fetch(pair, progress, cancelled):
        seen.append(pair.key)
        progress("part", 1, 2)
        return plant_qwen(here / "fetched")

    dialog = model_rig.model_flow.show_recommended_pairs(gguf_pairs=GGUF_PAIRS, fetch=fetch)
    qtbot.addWidget(dialog)
    dialog.gguf_buttons[0].click()
    qtbot.waitUntil(lambda: bool(requested), timeout=10_000)
    target = here / "fetched" / real_pair.TARGET.filename
    assert seen == ["qwen-coder"] and requested == [(str(target), str(here / "fetched" / real_pair.DRAFT.filename))]
    assert not dialog.isVisible()


def test_a_download_can_be_cancelled(qtbot, here):
    started = threading.Event()

    def fetch(pair, progress, cancelled):
        started.set()
        while not cancelled():
            progress("part", 1, 4)
            threading.Event().wait(0.01)
        raise LoadCancelled("cancelled")

    dialog = PairsDialog(CPU, fetch=fetch)
    qtbot.addWidget(dialog)
    chosen = []
    dialog.chosen.connect(lambda *a: chosen.append(a))
    dialog.gguf_buttons[1].click()
    assert started.wait(5) and dialog.cancel_button.isVisibleTo(dialog)
    assert not any(b.isEnabled() for b in dialog.gguf_buttons)
    dialog.cancel_button.click()
    qtbot.waitUntil(lambda: dialog.gguf_buttons[1].isEnabled(), timeout=5_000)
    assert dialog.download_note.text() == "Cancelled: nothing was loaded." and not chosen
    assert not dialog.download_bar.isVisibleTo(dialog)


def test_fetch_gguf_reports_one_progress_over_both_files_and_stops_when_cancelled(here, monkeypatch):
    def fetch_pair(progress):
        for f in real_pair.PAIR:
            progress(f, f.size, f.size)
        return tuple(here / f.filename for f in real_pair.PAIR)

    monkeypatch.setattr(real_pair, "fetch_pair", fetch_pair)
    seen = []
    target, draft = fetch_gguf(GGUF_PAIRS[0], lambda *a: seen.append(a), lambda: False)
    assert target == here / real_pair.TARGET.filename and draft == str(here / real_pair.DRAFT.filename)
    total = GGUF_PAIRS[0].download_bytes
    assert [s[1:] for s in seen] == [(real_pair.TARGET.size, total), (total, total)]
    with pytest.raises(LoadCancelled):
        fetch_gguf(GGUF_PAIRS[0], lambda *a: None, lambda: True)


def test_the_smollm2_gguf_comes_from_the_hub_file_seam_with_the_embedded_draft(here, monkeypatch):
    from app.models import hub

    asked = []
    monkeypatch.setattr(hub, "download_file", lambda repo, name, progress: asked.append((repo, name)) or here / name)
    target, draft = fetch_gguf(GGUF_PAIRS[1], lambda *a: None, lambda: False)
    assert asked == [("HuggingFaceTB/SmolLM2-1.7B-Instruct-GGUF", "smollm2-1.7b-instruct-q4_k_m.gguf")]
    assert target == here / "smollm2-1.7b-instruct-q4_k_m.gguf" and draft == "default"
    assert gguf_files(GGUF_PAIRS[1]) is None and recommended.SMOLLM2_GGUF_BYTES > 10**9
