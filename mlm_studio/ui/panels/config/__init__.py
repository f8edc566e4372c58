"""The Configuration panel (panel.py), the form's words (fields.py) and its editors and columns (form.py)."""
