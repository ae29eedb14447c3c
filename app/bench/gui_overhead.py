"""The GUI's cost: tokens/s through the real main window (offscreen) against headless decoding.

Both sides use the engine's own clock (FinishedEvent.elapsed: first round to the end), so the
GUI's target-only baseline steps, timed before a message, are not counted against it; what is
counted is everything the GUI thread takes from the engine thread while it renders: the GIL,
the CPU cores, signal delivery. Runs alternate headless / GUI per prompt and repeat.
"""

from __future__ import annotations

import os
import tempfile

from app.engine import DecodeParams, generate

from .prompts import BenchPrompt
from .runners import Pair


def measure_gui_overhead(pair: Pair, prompts: list[BenchPrompt], params: DecodeParams, repeats: int) -> dict:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with tempfile.TemporaryDirectory(prefix="speclens-bench-gui-") as data_dir:
        saved = os.environ.get("SPECLENS_DATA_DIR")
        os.environ["SPECLENS_DATA_DIR"] = data_dir  # the window's history and settings stay out of the user's
        try:
            return _measure(pair, prompts, params, repeats)
        finally:
            if saved is None:
                os.environ.pop("SPECLENS_DATA_DIR", None)
            else:
                os.environ["SPECLENS_DATA_DIR"] = saved


def _measure(pair: Pair, prompts: list[BenchPrompt], params: DecodeParams, repeats: int) -> dict:
    from PySide6.QtCore import QEventLoop, QTimer
    from PySide6.QtWidgets import QApplication

    from app.gui.main_window import MainWindow
    from app.gui.model_loader import LoadResult

    app = QApplication.instance() or QApplication([])
    draft_spec = "self" if pair.drafter is not None else "none"
    window = MainWindow(pair.target.spec, draft_spec, autoload=False)
    window.resize(1400, 900)
    window.show()  # offscreen, but every widget really lays out and paints
    window.model_flow.use_models(LoadResult(pair.target, pair.drafter, draft_spec, 0.0))
    c = window.controls
    c.gamma.setValue(params.gamma)
    c.temperature.setValue(params.temperature)
    c.top_k.setValue(params.top_k)
    c.top_p.setValue(params.top_p)
    c.max_new.setValue(params.max_new_tokens)
    c.seed_on.setChecked(params.seed is not None)
    c.seed.setValue(params.seed or 0)
    finished: list[object] = []  # FinishedEvents, or the errors of failed answers
    window.worker.finished.connect(finished.append)
    window.worker.failed.connect(lambda msg: finished.append(RuntimeError(msg)))

    def through_gui(text: str):
        window.history.new_chat()
        window.input.setPlainText(text)
        count = len(finished)
        loop = QEventLoop()
        poll = QTimer(interval=10, timeout=lambda: loop.quit() if len(finished) > count and not window.model.generating else None)
        poll.start()
        window.chat_flow.send()
        loop.exec()
        poll.stop()
        fin = finished[-1]
        if isinstance(fin, Exception):
            raise fin
        return fin

    t = pair.target
    runs: dict[str, list] = {"headless": [], "gui": []}
    try:
        for _ in range(repeats):
            for p in prompts:
                text = p.messages[-1]["content"]
                ids = t.encode_chat([{"role": "user", "content": text}])
                head = generate(t.model, ids, pair.drafter, params, stop_token_ids=t.stop_token_ids,
                                vocab_size=t.vocab_size, tokenizer=t.tokenizer).finished
                runs["headless"].append(head)
                runs["gui"].append(through_gui(text))
    finally:
        window.close()
        app.processEvents()

    def tps(fins) -> float:
        return sum(f.new_tokens for f in fins) / sum(f.elapsed for f in fins)

    headless, gui = tps(runs["headless"]), tps(runs["gui"])
    return {
        "headless_tps": headless, "gui_tps": gui, "overhead": 1.0 - gui / headless,
        "same_tokens": [h.token_ids == g.token_ids for h, g in zip(runs["headless"], runs["gui"], strict=True)],
        "setting": "greedy" if params.greedy else f"T={params.temperature:g}",
    }
