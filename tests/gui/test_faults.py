"""Fault campaign: what the user sees, what is saved, and that the app stays usable (the chat flow with its
collaborators, and the loader on its own)."""

from __future__ import annotations

import threading

import pytest
import torch
import transformers
from gui_helpers import send, start_long_answer

from app.gui.model_loader import LoadRequest, ModelLoader
from app.history import HistoryError, HistoryStore
from app.models import memory as memory_module


def stored(conv_id):
    with HistoryStore() as store:
        return store.messages(conv_id)


def failing_forward(forward, fault: str, after: int):
    """The target's forward pass, broken from call `after` on: an exception, or NaN logits."""
    calls = [0]

    def broken(*args, **kwargs):
        calls[0] += 1
        if calls[0] <= after:
            return forward(*args, **kwargs)
        if fault == "exception":
            raise RuntimeError("simulated kernel failure")
        out = forward(*args, **kwargs)
        out.logits[..., 3] = float("nan")
        return out

    return broken


@pytest.mark.parametrize("fault", ["exception", "nan"])
def test_a_fault_mid_answer_marks_it_failed_and_the_app_goes_on(qtbot, chat_rig, monkeypatch, fault):
    model = chat_rig.model.target.model
    rec = start_long_answer(chat_rig, monkeypatch, "break please", max_new=300)
    qtbot.waitUntil(lambda: len(rec.rounds) >= 2, timeout=30_000)
    monkeypatch.setattr(model, "forward", failing_forward(model.forward, fault, after=0))
    qtbot.waitUntil(lambda: not chat_rig.model.generating, timeout=30_000)
    banner = chat_rig.status.banner.text()
    assert banner.startswith("Generation failed: ")
    assert ("simulated kernel failure" if fault == "exception" else "target model produced NaN") in banner
    answer = chat_rig.conversation.messages[-1]
    assert answer.stats["finish_reason"] == "error" and answer.stats["error"] in banner
    assert "failed" in chat_rig.chat.toPlainText().splitlines()[-1]  # the footer says so
    saved = stored(chat_rig.conversation.conv_id)[-1]
    assert saved.partial and saved.stats["finish_reason"] == "error" and saved.content == answer.text
    # nothing from the broken round was emitted: what is shown came from the healthy rounds
    assert len([t for t in answer.tokens if t.status != "rejected"]) == sum(r.emitted for r in rec.rounds)
    monkeypatch.undo()  # the model is healthy again: the next message works as usual
    chat_rig.recorder.reset()
    send(qtbot, chat_rig, "again")
    assert chat_rig.recorder.finished and chat_rig.conversation.messages[-1].stats["finish_reason"] in ("eos", "length")


def test_a_full_disk_is_reported_and_the_chat_goes_on(qtbot, chat_rig):
    chat_rig.controls.max_new.setValue(12)
    send(qtbot, chat_rig, "saved first")
    conv = chat_rig.conversation.conv_id
    before = stored(conv)
    fill_the_disk(chat_rig.store)
    chat_rig.input.setPlainText("and now?")
    chat_rig.chat_flow.send()
    assert "disk" in chat_rig.status.banner.text() and "full" in chat_rig.status.banner.text()
    assert chat_rig.model.generating  # answered anyway
    qtbot.waitUntil(lambda: not chat_rig.model.generating, timeout=60_000)
    assert chat_rig.conversation.messages[-1].role == "assistant" and chat_rig.conversation.messages[-1].tokens
    assert stored(conv)[: len(before)] == before  # nothing saved earlier was lost
    chat_rig.store._conn.execute("PRAGMA max_page_count = 1073741823")  # space freed
    send(qtbot, chat_rig, "saved again")
    assert [m.content for m in stored(conv)][-2] == "saved again"


def fill_the_disk(store: HistoryStore) -> None:
    """SQLite reports ENOSPC as SQLITE_FULL; a page cap at the current size, then writes until the
    free space inside those pages is used up, gives that error on every later write."""
    pages = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count = {pages}")
    filler = store.create_conversation("filler")
    for size in (200, 20, 1):  # smaller rows still fit in what larger ones leave: fill to the last byte
        with pytest.raises(HistoryError, match="full"):
            for _ in range(10_000):
                store.add_message(filler, "user", "f" * size)


def loader_messages(qtbot, loader: ModelLoader, request: LoadRequest) -> tuple[list, list]:
    loaded, failed = [], []
    loader.loaded.connect(loaded.append)
    loader.failed.connect(failed.append)
    loader.load(request)  # in this thread: the signals are delivered directly
    return loaded, failed


def test_out_of_memory_while_loading_is_a_clear_message(qtbot, tiny_pair_dirs, monkeypatch):
    def oom(*args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", oom)
    loaded, failed = loader_messages(qtbot, ModelLoader(), LoadRequest(str(tiny_pair_dirs[0]), "none"))
    assert loaded == [] and len(failed) == 1
    assert failed[0].startswith("ran out of memory while loading target; memory was released")


def test_a_model_too_large_for_free_memory_is_refused_with_the_sizes(qtbot, tiny_pair_dirs, monkeypatch):
    monkeypatch.setattr(memory_module, "free_bytes", lambda device: 10 * 2**20)
    monkeypatch.setattr(memory_module.psutil, "virtual_memory", lambda: type("M", (), {"available": 10 * 2**20})())
    loaded, failed = loader_messages(qtbot, ModelLoader(), LoadRequest(str(tiny_pair_dirs[0]), "none"))
    assert loaded == [] and "needs about" in failed[0] and "GiB is free on cpu" in failed[0]


def test_closing_abandons_a_load_at_its_next_stage(qtbot, tiny_pair_dirs):
    cancel = threading.Event()
    loader = ModelLoader()
    stages = []

    def progress(text, fraction):
        stages.append(text)
        if len(stages) == 2:
            cancel.set()  # the window closes while the target loads

    loader.progress.connect(progress)
    loaded, failed = loader_messages(qtbot, loader, LoadRequest(str(tiny_pair_dirs[0]), str(tiny_pair_dirs[1]),
                                                                cancel=cancel))
    assert loaded == [] and failed == []  # dropped silently: nobody is waiting for it
    assert len(stages) == 2  # no stage ran after the cancel
