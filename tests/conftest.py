import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
if os.environ.get("PYTEST_XDIST_WORKER"):  # one worker per core: more torch threads only oversubscribe
    os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # tests never reach the network
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# The suite's timings (taken under its own load, read as quiet by `quiet_machine`) and conversions stay out
# of the user's cache; this one is shared by the workers and kept between runs of this checkout.
os.environ.setdefault("SPECLENS_CACHE_DIR", str(Path(__file__).resolve().parent.parent / "build" / "test-cache"))
sys.path.insert(0, str(Path(__file__).parent))

import pytest  # noqa: E402
from tiny_models import save_tiny_pair  # noqa: E402


@pytest.fixture(autouse=True)
def quiet_machine():
    """Every timing reads a quiet machine (this one is shared, so its real load would decide at random
    whether a cached timing is kept); tests of the busy-machine rule plant their own readings."""
    from machine_readings import quiet

    from app.machine import load as machine_load

    with machine_load.use_reader(quiet):
        yield


@pytest.fixture(scope="session")
def tiny_pair_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """(target_dir, draft_dir): tiny Llama models with a character tokenizer and chat template."""
    return save_tiny_pair(tmp_path_factory.mktemp("tiny-pair"))


@pytest.fixture(scope="session")
def default_target():
    """The embedded default model (SmolLM2-135M-Instruct), loaded once per test session on the CPU."""
    from app.models import load_model

    return load_model("default", device="cpu")


@pytest.fixture(scope="session")
def torch_default_target():
    """The embedded model on torch's fastest path (--kernels torch: bf16 oneDNN-packed where this CPU has native
    bf16), for what runs transformers' modules: static caches, the packed path's own exactness checks. Where
    auto chose torch anyway, the default model itself."""
    from app.models import load_model

    return load_model("default", device="cpu", kernels="torch")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`-n 2 --dist loadgroup`), the frozen build (module fixture) stays in one worker, built
    once, and starts first: it is the longest single piece of work, so it must not end the run alone. The
    embedded model (a session fixture) loads once in each worker that needs it, a few seconds from its cache,
    so its tests spread over the workers instead of queueing in one."""
    # Where the README's test command is building it in the background (frozen_cache.py), last instead, and
    # not as a group: xdist hands out groups first, largest first, so a group would sit waiting for the build
    # at the start. Each test alone is queued in this order, and the cache's lock and key keep it one build.
    last = bool(os.environ.get("SPECLENS_FROZEN_PREBUILD"))
    for item in items:
        if item.path.name == "test_frozen_build.py" and not last:
            item.add_marker(pytest.mark.xdist_group("frozen-build"))
    items.sort(key=lambda item: (item.path.name == "test_frozen_build.py") == last)


def pytest_sessionfinish(session, exitstatus):
    session.config.speclens_exitstatus = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Leave without interpreter finalisation once pytest has reported everything.

    Qt (offscreen), pyqtgraph and torch threads outlive the session, and tearing their C objects down
    at interpreter exit only costs time and risk once the verdict is in. (The abort once seen here,
    "none_dealloc", was PySide6 6.12.0's reference bug, now excluded and tested for.) The status
    pytest decided is kept.
    """
    status = getattr(config, "speclens_exitstatus", None)
    if status is None or hasattr(config, "workerinput"):  # an xdist worker: the controller reports and exits
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
