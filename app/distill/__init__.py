"""`speclens distill`: train a feature draft for a target from the target's own answers. No Qt here.

API (a GUI worker thread calls it as is):

    from app.distill import DistillConfig, DistillProgress, run_distill
    report = run_distill(DistillConfig(target="default", minutes=15), progress=callback, cancel=event)

- `DistillConfig`: target spec, out folder (default `<data dir>/drafts/<target>`), prompts_file, text_dir,
  minutes (whole budget, data included), device, vocab_k, seed, and the recipe knobs (layers, unroll, lr...).
- `progress(DistillProgress)`: called often from the calling thread with phase ("load", "data", "train",
  "eval", "done"), fraction of the phase, a one-line message, the phase's ETA in seconds and metrics.
- `cancel`: a threading.Event; setting it stops the current phase cleanly. During training the best
  checkpoint so far is kept (it is written whenever validation improves, so even a killed run leaves it).
- Returns the report dict (also in `<out>/report.json`, with `report.md` beside it); `report["summary"]`
  holds alpha_greedy, alpha_sampled (T = 0.7), c, v and predicted speedups. `report["cancelled"]` is True
  when stopped early. Bad input raises ValueError or app.models.ModelError with a one-line message.
- `run_distill(..., target=loaded)` reuses an already loaded LoadedModel.
The result is listed by `app.models.list_trained_drafts` and loaded with `--draft trained` or `--draft DIR`.
"""

from .config import DistillConfig
from .run import DistillProgress, run_distill

__all__ = ["DistillConfig", "DistillProgress", "run_distill"]
