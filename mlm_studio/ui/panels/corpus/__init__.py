"""The Corpus panel (panel.py) and the tokenizer trained on its corpus (tokenizer_section.py)."""
