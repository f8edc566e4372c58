"""Small made-up SQuAD files a tiny model learns in seconds: each context states a few things ("the colour is
red") among filler sentences, each question asks for one of them ("what is the colour?"); SQuAD v2.0 files also
ask for things their context does not state."""

from __future__ import annotations

import json
import random
from pathlib import Path

NAMES = ("colour", "size", "port", "code", "name", "value")
VALUES = ("red", "blue", "list", "file", "error", "path", "return", "type", "string", "number")
FILLER = ("the list of a file is long", "a value to return", "this is an error", "and the path of the type")


def context_facts(rng: random.Random, facts: int, filler: int) -> tuple[str, dict[str, tuple[str, int]]]:
    """A context and, for each thing it states, its value and the value's first character."""
    sentences = [(rng.choice(FILLER), None) for _ in range(filler)]
    for name in rng.sample(NAMES, facts):
        sentences.insert(rng.randint(0, len(sentences)), (f"the {name} is {rng.choice(VALUES)}", name))
    text, found = "", {}
    for sentence, name in sentences:
        if name is not None:
            found[name] = (sentence.rsplit(" ", 1)[1], len(text) + sentence.rindex(" ") + 1)
        text += sentence + " . "
    return text.strip(), found


def squad_document(contexts: int = 60, seed: int = 0, impossible: bool = False, facts: int = 2, filler: int = 3):
    """A SQuAD document: one article per ten contexts, a question per thing stated (and, with `impossible`, one
    about a thing not stated, unanswerable)."""
    rng = random.Random(seed)
    articles = []
    for c in range(contexts):
        context, found = context_facts(rng, facts, filler)
        qas = [
            {"id": f"q{c}-{name}", "question": f"what is the {name} ?", "answers": [{"text": t, "answer_start": s}]}
            | ({"is_impossible": False} if impossible else {})
            for name, (t, s) in found.items()
        ]
        if impossible:
            name = rng.choice([n for n in NAMES if n not in found])
            qas.append({"id": f"q{c}-none", "question": f"what is the {name} ?", "answers": [], "is_impossible": True})
        if c % 10 == 0:
            articles.append({"title": f"article {c // 10}", "paragraphs": []})
        articles[-1]["paragraphs"].append({"context": context, "qas": qas})
    return {"version": "v2.0" if impossible else "1.1", "data": articles}


def write_squad(path: Path, **options) -> Path:
    path.write_text(json.dumps(squad_document(**options)), encoding="utf-8")
    return path
