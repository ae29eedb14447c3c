"""Start-up on a machine where Qt cannot open a window: the exact packages to install, exit code 1."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from app.gui.platform_check import XCB_LIBRARIES, linux_family, platform_problem

ROOT = Path(__file__).resolve().parents[2]
X11 = {"DISPLAY": ":0"}
BOOKWORM = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nID=debian\n'
UBUNTU = "ID=ubuntu\nID_LIKE=debian\n"
FEDORA = 'ID=fedora\nVERSION_ID=40\n'
ROCKY = 'ID="rocky"\nID_LIKE="rhel centos fedora"\n'
ARCH = "ID=arch\n"
TUMBLEWEED = 'ID="opensuse-tumbleweed"\nID_LIKE="opensuse suse"\n'


def without(*missing: str):
    return lambda soname: soname not in missing


def problem(os_release: str, *missing: str, environ=X11) -> str | None:
    return platform_problem(environ, "linux", without(*missing), os_release)


@pytest.mark.parametrize(("os_release", "family"), [
    (BOOKWORM, "debian"), (UBUNTU, "debian"), (FEDORA, "fedora"), (ROCKY, "fedora"), (ARCH, "arch"),
    (TUMBLEWEED, "suse"), ("ID=nixos\n", None), ("", None),
])
def test_distribution_family(os_release, family):
    assert linux_family(os_release) == family


def test_the_fresh_debian_case_names_the_three_apt_packages():
    message = problem(BOOKWORM, "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1")
    assert message.endswith("\n    sudo apt-get install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1")
    assert "libxcb-icccm.so.4" in message


@pytest.mark.parametrize(("os_release", "command"), [
    (FEDORA, "sudo dnf install xcb-util-cursor xcb-util-wm xcb-util-keysyms"),
    (ARCH, "sudo pacman -S xcb-util-cursor xcb-util-wm xcb-util-keysyms"),
    (TUMBLEWEED, "sudo zypper install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1"),
])
def test_other_distributions_get_their_own_package_names(os_release, command):
    message = problem(os_release, "libxcb-cursor.so.0", "libxcb-icccm.so.4", "libxcb-keysyms.so.1")
    assert message.splitlines()[-1].strip() == command


def test_a_package_holding_several_missing_libraries_is_named_once():
    message = problem(FEDORA, "libxcb-randr.so.0", "libxcb-shape.so.0", "libxcb.so.1")
    assert message.splitlines()[-1].strip() == "sudo dnf install libxcb"


def test_an_unknown_distribution_gets_the_library_names():
    message = problem("ID=nixos\n", "libxcb-icccm.so.4")
    assert "libxcb-icccm.so.4" in message.splitlines()[-1]


def test_every_library_has_a_package_for_every_family():
    assert all(len(packages) == 4 and all(packages) for packages in XCB_LIBRARIES.values())


def test_no_display_is_reported_when_the_libraries_are_there():
    assert "DISPLAY is not set" in problem(BOOKWORM, environ={})
    assert problem(BOOKWORM) is None


@pytest.mark.parametrize("environ", [
    {"QT_QPA_PLATFORM": "offscreen"}, {"QT_QPA_PLATFORM": "wayland"}, {"WAYLAND_DISPLAY": "wayland-0"},
])
def test_other_platforms_are_left_to_qt(environ):
    assert problem(BOOKWORM, "libxcb.so.1", environ=environ) is None


def test_not_linux_is_not_checked():
    assert platform_problem({}, "darwin", without(*XCB_LIBRARIES), BOOKWORM) is None


def test_the_app_exits_with_the_message_instead_of_aborting(tmp_path):
    """A real start with the xcb platform and no display: whichever check trips on this machine
    (missing libraries or no display), Qt is never asked, so no abort and no traceback."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "XDG_SESSION_TYPE")}
    env.update(QT_QPA_PLATFORM="xcb", SPECLENS_DATA_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "app"], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.startswith("speclens: error: ")
    assert "Install them with" in proc.stderr or "DISPLAY is not set" in proc.stderr
    assert "Traceback" not in proc.stderr and "could not be initialized" not in proc.stderr
    assert not (tmp_path / "history.sqlite3").exists()  # nothing started
