"""The worker on its own, as the benchmark drives it: no window, a QThread and signals."""

from __future__ import annotations

from PySide6.QtCore import QObject, QThread, Signal

from app.drafting.drafts import make_drafter
from app.engine import DecodeParams, FinishedEvent, RoundEvent, TokenEvent, generate
from app.engine.policy import AutoGamma, DrafterProfile, VerifyCosts
from app.gui.worker import GenerationRequest, GenerationWorker
from app.models import load_model
from app.session.answer_loop import AnswerLoop


class Driver(QObject):
    start = Signal(object)


def test_worker_streams_the_engines_events_from_its_thread(qtbot, tiny_pair_dirs):
    target_dir, draft_dir = tiny_pair_dirs
    target = load_model(str(target_dir), device="cpu")
    params = DecodeParams(gamma=3, temperature=1.0, seed=11, max_new_tokens=40)
    thread, worker, driver = QThread(), GenerationWorker(), Driver()
    worker.moveToThread(thread)
    driver.start.connect(worker.start)
    batches, baseline, finished = [], [], []
    worker.events.connect(batches.append)
    worker.baseline.connect(baseline.append)
    worker.finished.connect(finished.append)
    thread.start()
    try:
        ids = target.encode_chat([{"role": "user", "content": "hi"}])
        auto = AutoGamma(DrafterProfile("d", "d", 0.1, 0.5), VerifyCosts((0.05,) * 6))
        answer = AnswerLoop(target=target, drafter=make_drafter(str(draft_dir), target), params=lambda: params,
                            controller=auto, gamma_auto=False)  # γ by hand: the same rounds as `expected`
        driver.start.emit(GenerationRequest(answer, ids, baseline_steps=3))
        qtbot.waitUntil(lambda: bool(finished), timeout=30_000)
    finally:
        thread.quit()
        thread.wait()
    assert len(baseline) == 1 and baseline[0] > 0
    assert auto.live.step == baseline[0]  # the live controller hears the same timed step as the window
    assert auto.rounds == len(batches) - 1  # and every round but the prefill one, which it leaves out
    assert all(isinstance(b[-1], RoundEvent) for b in batches)  # one batch per round
    events = [e for b in batches for e in b]
    assert isinstance(finished[0], FinishedEvent)
    # Same seed, same models: the worker's stream is exactly the blocking engine's.
    expected = generate(target.model, ids, make_drafter(str(draft_dir), target), params,
                        stop_token_ids=target.stop_token_ids, vocab_size=target.vocab_size)
    got = [e for e in events if isinstance(e, TokenEvent) and e.emitted]
    assert [(t.token_id, t.status) for t in got] == [(t.token_id, t.status) for t in expected.tokens]
