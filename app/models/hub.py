"""Hugging Face hub ids: download with progress when online, the local cache when offline; never hang."""

from __future__ import annotations

import os
import re
from pathlib import Path

from app.errors import LoadCancelled, ModelNotFound, NotCached
from app.models.progress import LoadProgress, ProgressCallback

REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# Weights other than these are never downloaded: pickle files only when explicitly allowed.
PATTERNS = ["*.json", "*.safetensors", "*.model", "*.txt", "*.tiktoken", "*.jinja", "*.py"]
PICKLE_PATTERNS = ["*.bin", "*.pt"]
ETAG_TIMEOUT_S = 5.0


def looks_like_repo_id(spec: str) -> bool:
    return bool(REPO_ID.match(spec)) and ".." not in spec


def offline_mode() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE")


def resolve_repo(repo_id: str, *, offline: bool | None, allow_pickle: bool, progress: ProgressCallback) -> Path:
    """Local snapshot folder for repo_id. Online: download what is missing; offline: cache only."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError

    offline = offline_mode() if offline is None else offline
    patterns = PATTERNS + (PICKLE_PATTERNS if allow_pickle else [])
    if not offline:
        try:
            return Path(snapshot_download(
                repo_id, allow_patterns=patterns, etag_timeout=ETAG_TIMEOUT_S, tqdm_class=_progress_tqdm(progress),
            ))
        except (RepositoryNotFoundError, RevisionNotFoundError) as exc:
            raise ModelNotFound(
                f"{repo_id!r} is neither a local path nor a model on the Hugging Face hub"
            ) from exc
        except GatedRepoError as exc:
            raise ModelNotFound(
                f"{repo_id!r} is gated on the hub: accept its licence on huggingface.co and log in "
                "(`hf auth login`), then try again"
            ) from exc
        except Exception:  # no network, DNS failure, timeout: fall back to whatever the cache holds
            pass
    try:
        return Path(snapshot_download(repo_id, allow_patterns=patterns, local_files_only=True))
    except Exception as exc:
        why = "offline mode (HF_HUB_OFFLINE=1)" if offline else "the hub could not be reached"
        raise NotCached(
            f"{repo_id!r} is not in the local Hugging Face cache and {why}; download it once while online "
            f"(e.g. `hf download {repo_id}`), or give a local folder or .gguf file instead"
        ) from exc


def download_file(repo_id: str, filename: str, progress) -> Path:
    """One file of a hub repo (a GGUF), downloaded into the Hugging Face cache or found there; progress(what,
    bytes done, bytes total) as it arrives, and whatever it raises (a cancel) ends the download."""
    from huggingface_hub import hf_hub_download
    from tqdm.auto import tqdm

    class Reporter(tqdm):
        def __init__(self, *args, **kwargs):
            kwargs["disable"] = True
            super().__init__(*args, **kwargs)
            self.done = 0

        def update(self, n=1):
            self.done += n or 0
            if self.total:
                progress(filename, self.done, int(self.total))

    try:
        return Path(hf_hub_download(repo_id, filename, etag_timeout=ETAG_TIMEOUT_S, tqdm_class=Reporter))
    except LoadCancelled:
        raise
    except Exception as exc:
        raise NotCached(f"{filename} could not be downloaded from {repo_id} ({type(exc).__name__}: {exc}); "
                        "check the network and try again") from exc


def _progress_tqdm(progress: ProgressCallback):
    """A tqdm class whose byte counts go to the progress callback instead of the terminal."""
    from tqdm.auto import tqdm

    class Reporter(tqdm):
        def __init__(self, *args, **kwargs):
            self.bytes = kwargs.get("unit") == "B"
            kwargs["disable"] = True  # keep the terminal clean; the callback renders progress
            super().__init__(*args, **kwargs)
            self.done = 0

        def update(self, n=1):
            self.done += n or 0
            if self.bytes and self.total:
                share = min(1.0, self.done / self.total)
                progress(LoadProgress("download", 0.05 + 0.25 * share, "downloading", self.done, int(self.total)))

    return Reporter
