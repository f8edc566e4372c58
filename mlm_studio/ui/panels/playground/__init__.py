"""The Playground panel (panel.py), one model's candidates (results_view.py) and how they are predicted
(prediction.py, no Qt)."""
