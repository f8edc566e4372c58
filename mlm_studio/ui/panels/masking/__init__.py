"""The Masking preview panel (panel.py), its settings (form.py) and the masked blocks it shows (masked_samples.py)."""
