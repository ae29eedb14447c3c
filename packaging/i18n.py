"""Translations and the CJK font, built the Qt way.

    python packaging/i18n.py update    # pyside6-lupdate: collect every tr()/translate() string of app/gui
                                       # into resources/i18n/speclens_zh_CN.ts (translations kept)
    python packaging/i18n.py release   # pyside6-lrelease: compile the .ts into the shipped .qm
    python packaging/i18n.py font [--source TTC]
                                       # subset Noto Sans CJK SC to the characters the translation uses

Translators edit the .ts (Qt Linguist: pyside6-linguist). The font source is Debian's fonts-noto-cjk
(NotoSansCJK-Regular.ttc, SIL OFL 1.1); the subset and the licence are committed in resources/fonts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LANGUAGES = ("zh_CN",)
I18N = ROOT / "resources" / "i18n"
FONTS = ROOT / "resources" / "fonts"
FONT_NAME = "NotoSansSC-SpecLens.otf"
FONT_SOURCE = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
SC_INDEX = 2  # Noto Sans CJK SC inside the collection (JP, KR, SC, TC, HK, then the Mono ones)
# Besides the translations: printable ASCII, Latin-1, Greek (α, γ), arrows, maths and UI punctuation.
EXTRA = "".join(chr(c) for c in range(0x20, 0x7F)) + "".join(chr(c) for c in range(0xA0, 0x100)) + (
    "αβγδεθλμπστ·–—‘’“”…←→↑↓⇒⏎∅≈≤≥≠−×÷√∑Σ■□▶◀●○✓✗，。：；！？（）【】《》、「」"
)


def tool(name: str) -> str:
    """pyside6-lupdate / pyside6-lrelease next to this Python (the venv), else on PATH."""
    local = Path(sys.executable).with_name(name)
    return str(local) if local.exists() else name


def sources() -> list[str]:
    # the window's texts, and the drafter titles the registry marks (QT_TRANSLATE_NOOP, context "Drafters")
    gui = (ROOT / "app" / "gui").glob("*.py")
    return sorted(str(p.relative_to(ROOT)) for p in [*gui, ROOT / "app" / "drafting" / "registry.py"])


def ts_path(language: str) -> Path:
    return I18N / f"speclens_{language}.ts"


def update() -> None:
    I18N.mkdir(parents=True, exist_ok=True)
    for language in LANGUAGES:
        subprocess.run([tool("pyside6-lupdate"), *sources(), "-no-obsolete", "-target-language", language,
                        "-ts", str(ts_path(language).relative_to(ROOT))], cwd=ROOT, check=True)


def release() -> None:
    for language in LANGUAGES:
        ts = ts_path(language)
        subprocess.run([tool("pyside6-lrelease"), str(ts), "-qm", str(ts.with_suffix(".qm"))], cwd=ROOT, check=True)


def translated_text(language: str = "zh_CN") -> str:
    """Every translation in the .ts, concatenated: the characters the font subset must cover."""
    tree = ET.parse(ts_path(language))
    parts = [t.text or "" for t in tree.iter("translation")]
    parts += [n.text or "" for n in tree.iter("numerusform")]
    return "".join(parts)


def font(source: Path) -> Path:
    from fontTools import subset
    from fontTools.ttLib import TTCollection

    if not source.is_file():
        raise SystemExit(f"font source {source} not found: install fonts-noto-cjk or pass --source")
    FONTS.mkdir(parents=True, exist_ok=True)
    out = FONTS / FONT_NAME
    chars = sorted(set(translated_text()) | set(EXTRA))
    tt = TTCollection(str(source)).fonts[SC_INDEX]
    options = subset.Options()
    options.name_IDs = ["*"]  # keep the names and the licence notice
    options.layout_features = ["*"]
    options.notdef_outline = True
    subsetter = subset.Subsetter(options)
    subsetter.populate(text="".join(chars))
    subsetter.subset(tt)
    tt.save(str(out))
    print(f"{out.relative_to(ROOT)}: {len(chars)} characters, {out.stat().st_size // 1024} KiB")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("update", "release", "font", "all"))
    parser.add_argument("--source", type=Path, default=FONT_SOURCE, help="Noto Sans CJK collection (.ttc)")
    args = parser.parse_args()
    if args.command in ("update", "all"):
        update()
    if args.command in ("release", "all"):
        release()
    if args.command in ("font", "all"):
        font(args.source)
    return 0


if __name__ == "__main__":
    sys.exit(main())
