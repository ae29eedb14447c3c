"""The statistics plots written out: each plot as PNG and SVG, and the data it draws as CSV (File ▸ Export
plots)."""

from __future__ import annotations

import csv
from pathlib import Path

import pyqtgraph as pg
import pyqtgraph.exporters as exporters
from PySide6.QtGui import QPainter
from PySide6.QtSvg import QSvgGenerator
from PySide6.QtWidgets import QWidget

from .live_stats import LiveStats


def export_plots(plots: dict[str, pg.PlotWidget], stats: LiveStats, gamma: int, folder: Path) -> list[Path]:
    """Every plot (by key: histogram, speedup, position, throughput) as PNG and SVG, and its data as CSV, into
    folder; gamma: the largest γ the histogram and position plots show."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for key, plot in plots.items():
        png, svg = folder / f"{key}.png", folder / f"{key}.svg"
        exporters.ImageExporter(plot.plotItem).export(str(png))
        write_svg(plot, svg)
        written += [png, svg]
        path = folder / f"{key}.csv"
        write_csv(key, stats, gamma, path)
        written.append(path)
    return written


def write_csv(key: str, st: LiveStats, gamma: int, path: Path) -> None:
    """One plot's data, as it draws it."""
    with path.open("w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh)
        if key == "histogram":
            counts, bonus = st.message.histogram(gamma)
            session, _ = st.session.histogram(gamma)
            out.writerow(["accepted", "message_rounds", "message_bonus_rounds", "session_rounds"])
            out.writerows(zip(range(gamma + 1), counts, bonus, session, strict=True))
        elif key == "speedup":
            out.writerow(["tokens", "measured_speedup", "predicted_speedup"])
            predicted = st.predicted()
            out.writerows((x, y, predicted) for x, y in zip(*st.speedup_series(), strict=True))
        elif key == "position":
            out.writerow(["position", "message_rate", "session_rate"])
            out.writerows(zip(range(1, gamma + 1), st.message.per_position(gamma),
                              st.session.per_position(gamma), strict=True))
        else:
            out.writerow(["tokens", "tokens_per_second", "target_only_tokens_per_second"])
            base = 1 / st.baseline_step if st.baseline_step else None
            out.writerows((x, y, base) for x, y in zip(*st.throughput_series(), strict=True))


def write_svg(widget: QWidget, path: Path) -> None:
    """Vector export through QSvgGenerator: pyqtgraph 0.14's SVGExporter cannot parse the path data
    Qt 6.12 writes ("not enough values to unpack"), so the widget is painted straight into the SVG."""
    generator = QSvgGenerator()
    generator.setFileName(str(path))
    generator.setSize(widget.size())
    generator.setViewBox(widget.rect())
    generator.setTitle("SpecLens statistics")
    painter = QPainter(generator)
    try:
        widget.render(painter)
    finally:
        painter.end()
