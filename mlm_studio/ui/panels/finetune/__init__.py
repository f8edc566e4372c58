"""The Fine-tune panel (panel.py) and what a fine-tuning ends with (results.py)."""
