"""The recipe search: which learning rate and epochs fine-tune a model best on a task (search.py runs one,
result.py reads one back)."""
