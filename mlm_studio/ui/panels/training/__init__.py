"""The Training panel (panel.py), a thin view over its Qt-free model (model.py), and its parts."""
