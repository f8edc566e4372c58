"""The Evaluation panel (panel.py), a view of its results and their rules (results.py, no Qt), with its choosers,
its background work and two of its tabs."""
