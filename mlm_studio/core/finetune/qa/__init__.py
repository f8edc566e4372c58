"""Extractive question answering: its files, features, decoded answers and SQuAD metric."""
