"""PNG of a γ sweep through pyqtgraph's ImageExporter, offscreen; Qt is imported only here."""

from __future__ import annotations

import os
from pathlib import Path


def plot_sweep(sweep: dict, path: Path) -> Path:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg
    from pyqtgraph.exporters import ImageExporter
    from PySide6.QtWidgets import QApplication

    _app = QApplication.instance() or QApplication([])
    pg.setConfigOptions(antialias=True, background="w", foreground="k")
    gammas = [p["gamma"] for p in sweep["points"]]
    widget = pg.PlotWidget()
    widget.resize(800, 500)
    plot = widget.getPlotItem()
    plot.addLegend(offset=(10, 10))
    plot.setLabel("bottom", "γ (draft length)")
    plot.setLabel("left", "speedup over target-only")
    plot.setTitle(f"speedup over target-only ({sweep['setting']}, α = {sweep['alpha']:.3f}, c = {sweep['c']:.2f})")
    plot.showGrid(x=True, y=True, alpha=0.3)
    plot.getAxis("bottom").setTicks([[(g, str(g)) for g in gammas]])
    plot.plot(gammas, [p["speedup"] for p in sweep["points"]], pen=pg.mkPen("#1f77b4", width=2),
              symbol="o", symbolBrush="#1f77b4", name="measured")
    plot.plot(gammas, [p["predicted_speedup"] for p in sweep["points"]],
              pen=pg.mkPen("#ff7f0e", width=2, style=pg.QtCore.Qt.PenStyle.DashLine),
              symbol="s", symbolBrush="#ff7f0e", name="predicted (α, c, verify cost)")
    plot.addLine(y=1.0, pen=pg.mkPen("#888888", width=1))
    widget.show()  # offscreen: lays out title, axes and legend at the widget's size before export
    _app.processEvents()
    ImageExporter(widget.scene()).export(str(path))
    widget.close()
    return path
