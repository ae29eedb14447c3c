"""Before the QApplication exists: can Qt open a window here? If not, say what to install.

Qt aborts the process (SIGABRT, "no Qt platform plugin could be initialized") when the xcb plugin's
system libraries are missing or there is no display, and Python cannot catch that. So on Linux the
libraries the xcb plugin links against are loaded by name first, and a missing one is reported with
the package that provides it on the detected distribution. Only QtCore-free code runs here.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

# soname -> package on (Debian/Ubuntu, Fedora/RHEL, Arch, openSUSE). The list is the xcb platform
# plugin's dependencies (readelf -d libqxcb.so libQt6XcbQpa.so.6 libQt6Gui.so.6 libQt6DBus.so.6,
# PySide6 6.12) minus what every Linux has (libc, libstdc++, libz) and what PySide6 bundles (ICU).
XCB_LIBRARIES: dict[str, tuple[str, str, str, str]] = {
    "libxcb.so.1": ("libxcb1", "libxcb", "libxcb", "libxcb1"),
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor", "xcb-util-cursor", "libxcb-cursor0"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm", "xcb-util-wm", "libxcb-icccm4"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms", "xcb-util-keysyms", "libxcb-keysyms1"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image", "xcb-util-image", "libxcb-image0"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util", "xcb-util", "libxcb-util1"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil", "xcb-util-renderutil",
                                "libxcb-render-util0"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb", "libxcb", "libxcb-randr0"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb", "libxcb", "libxcb-render0"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb", "libxcb", "libxcb-shape0"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb", "libxcb", "libxcb-shm0"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb", "libxcb", "libxcb-sync1"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb", "libxcb", "libxcb-xfixes0"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb", "libxcb", "libxcb-xkb1"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon", "libxkbcommon", "libxkbcommon0"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11", "libxkbcommon-x11", "libxkbcommon-x11-0"),
    "libX11.so.6": ("libx11-6", "libX11", "libx11", "libX11-6"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb", "libx11", "libX11-xcb1"),
    "libGL.so.1": ("libgl1", "libglvnd-glx", "libglvnd", "libGL1"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl", "libglvnd", "libEGL1"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig", "fontconfig", "libfontconfig1"),
    "libfreetype.so.6": ("libfreetype6", "freetype", "freetype2", "libfreetype6"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2", "glib2", "libglib-2_0-0"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2", "glib2", "libgthread-2_0-0"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs", "dbus", "libdbus-1-3"),
}
FAMILIES = ("debian", "fedora", "arch", "suse")
INSTALL = {
    "debian": "sudo apt-get install",
    "fedora": "sudo dnf install",
    "arch": "sudo pacman -S",
    "suse": "sudo zypper install",
}
OS_RELEASE = Path("/etc/os-release")


def linux_family(os_release: str) -> str | None:
    """debian, fedora, arch or suse from /etc/os-release's ID and ID_LIKE; None for anything else."""
    fields = {}
    for line in os_release.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip("\"'").lower()
    ids = [fields.get("ID", "")] + fields.get("ID_LIKE", "").split()
    aliases = {"ubuntu": "debian", "linuxmint": "debian", "pop": "debian", "rhel": "fedora", "centos": "fedora",
               "rocky": "fedora", "almalinux": "fedora", "manjaro": "arch", "endeavouros": "arch",
               "opensuse": "suse", "opensuse-leap": "suse", "opensuse-tumbleweed": "suse", "sles": "suse"}
    for name in ids:
        family = aliases.get(name, name)
        if family in FAMILIES:
            return family
    return None


def can_load(soname: str) -> bool:
    """Whether the dynamic loader finds the library (and everything it links to)."""
    candidates = [soname]
    bundle = getattr(sys, "_MEIPASS", None)  # a frozen build may carry some of them itself
    if bundle and (Path(bundle) / soname).is_file():
        candidates.insert(0, str(Path(bundle) / soname))
    for name in candidates:
        try:
            ctypes.CDLL(name)
            return True
        except OSError:
            continue
    return False


def missing_libraries(loader: Callable[[str], bool] = can_load) -> list[str]:
    return [soname for soname in XCB_LIBRARIES if not loader(soname)]


def install_hint(missing: list[str], family: str | None) -> str:
    """The exact command for a known distribution, else the library names to look for."""
    if family is None:
        return ("install the packages that provide " + ", ".join(missing)
                + " (on Debian/Ubuntu: sudo apt-get install " + " ".join(_packages(missing, "debian")) + ")")
    return f"{INSTALL[family]} {' '.join(_packages(missing, family))}"


def _packages(missing: list[str], family: str) -> list[str]:
    column = FAMILIES.index(family)
    return list(dict.fromkeys(XCB_LIBRARIES[soname][column] for soname in missing))


def platform_problem(environ: Mapping[str, str] | None = None, system: str | None = None,
                     loader: Callable[[str], bool] = can_load, os_release: str | None = None) -> str | None:
    """A message saying why Qt cannot open a window and what to do, or None when it should work."""
    environ = os.environ if environ is None else environ
    if not (system or sys.platform).startswith("linux"):
        return None
    requested = environ.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    wayland = bool(environ.get("WAYLAND_DISPLAY")) or environ.get("XDG_SESSION_TYPE") == "wayland"
    if requested not in ("", "xcb") or (not requested and wayland):
        return None  # offscreen, wayland, vnc…: Qt's own message is specific enough
    missing = missing_libraries(loader)
    if missing:
        if os_release is None:
            try:
                os_release = OS_RELEASE.read_text(encoding="utf-8")
            except OSError:
                os_release = ""
        return ("the Qt xcb platform plugin cannot load: these system libraries are missing: "
                + ", ".join(missing) + ". Install them with:\n    " + install_hint(missing, linux_family(os_release)))
    if not environ.get("DISPLAY"):
        return ("no display: DISPLAY is not set, so Qt cannot open a window. Start SpecLens from a desktop "
                "session, or use QT_QPA_PLATFORM=offscreen for headless commands (selftest, screenshot).")
    return None
