"""Render resources/icons/speclens.svg to the .png (Linux), .ico (Windows) and .icns (macOS) icons.

Run after editing the SVG: QT_QPA_PLATFORM=offscreen python packaging/make_icons.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication, QImage, QPainter
from PySide6.QtSvg import QSvgRenderer

ICONS = Path(__file__).resolve().parent.parent / "resources" / "icons"
SIZES = {".png": 256, ".ico": 256, ".icns": 512}  # .ico tops out at 256 px


def render(renderer: QSvgRenderer, size: int) -> QImage:
    image = QImage(size, size, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    renderer.render(painter)
    painter.end()
    return image


def main() -> int:
    _app = QGuiApplication(sys.argv[:1])  # Qt's image plugins need an application object
    renderer = QSvgRenderer(str(ICONS / "speclens.svg"))
    if not renderer.isValid():
        print(f"cannot read {ICONS / 'speclens.svg'}", file=sys.stderr)
        return 1
    for suffix, size in SIZES.items():
        target = ICONS / f"speclens{suffix}"
        if not render(renderer, size).save(str(target)):
            print(f"Qt could not write {target}", file=sys.stderr)
            return 1
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
