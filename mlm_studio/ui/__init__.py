"""The PySide6 + pyqtgraph workbench. Imports the core; the core never imports this."""
