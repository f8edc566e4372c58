"""The Playground panel (panel.py), one model's candidates (results_view.py), how they are predicted
(prediction.py) and the sentence as the user edits it (masked_text.py), the last two without Qt."""
