"""The one QApplication: created on first call, named so QSettings and the OS know it, its translations installed
before any widget reads its texts."""

from __future__ import annotations

from typing import cast

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from app import __version__
from app.paths import APP_NAME, resource_path


def application(argv: list[str] | None = None) -> QApplication:
    """The one QApplication (created on first call), named so QSettings and the OS know it."""
    running = QApplication.instance()
    if running is not None:
        return cast(QApplication, running)  # the window's process makes a QApplication, never a core one
    app = QApplication(argv or [APP_NAME])
    app.setApplicationName(APP_NAME)
    app.setApplicationVersion(__version__)
    app.setOrganizationName(APP_NAME)
    icon = resource_path("icons", "speclens.svg")
    if icon.is_file():
        app.setWindowIcon(QIcon(str(icon)))
    from . import i18n

    i18n.install(app)  # before any widget reads its texts
    return app
