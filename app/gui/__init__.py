"""The SpecLens desktop app (PySide6 + pyqtgraph). Engine work runs in a worker thread; widgets only render."""
