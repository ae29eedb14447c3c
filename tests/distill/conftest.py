import pytest

from app.distill import run_distill
from distill.helpers import tiny_config


@pytest.fixture(scope="session")
def tiny_distilled(tiny_pair_dirs, tmp_path_factory):
    """(target_dir, draft_dir, report): one distill run on the tiny target, shared by the tests."""
    out = tmp_path_factory.mktemp("distilled") / "drafts" / "tiny"
    events = []
    report = run_distill(tiny_config(tiny_pair_dirs[0], out), progress=events.append)
    report["_events"] = events
    return tiny_pair_dirs[0], out, report
