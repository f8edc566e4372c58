"""A real question-answering task from a package registry: Disfl-QA (Gupta et al., 2021), as BIG-bench ships it,
written as SQuAD v2.0 JSON that `mlm-studio finetune --kind qa` reads.

Disfl-QA's 8,000 questions are SQuAD v2.0 development questions rewritten by people with the disfluencies of speech
("What part the composition of the Earth's biosphere, no sorry, the Earth's atmosphere…"), asked about 1,204
Wikipedia paragraphs; a quarter have no answer in their paragraph (v2.0's unanswerable questions). The
`bigbench==1.0.0` source distribution on PyPI holds it as `bigbench/benchmark_tasks/disfl_qa/task.json` (CC BY 4.0):
`pip download --no-deps --no-binary :all: bigbench==1.0.0` and unpack it; the text is never copied into this
repository. There each paragraph is split into words by spaces ("Earth ' s") and each answer is SQuAD's original
string ("40,000" where the paragraph says "40 , 000"), without its position: an answer is placed at its first
occurrence in the paragraph that starts and ends on a word, spaces ignored, and becomes the paragraph's own text
there; the 6 whose words are not in their paragraph at all are left out and counted.

With `--answered` only the questions that have an answer are kept (SQuAD v1.1's task): at a few hundred training
questions a small model learns to say "no answer" to every question of the v2.0 task (24.7% F1, the share of
unanswerable ones) before it learns where answers lie.

The split is by paragraph (seed 0, 80/10/10), so no paragraph is asked about in two parts: the first
`questions` questions of the training paragraphs, a quarter as many of each of the others, whole paragraphs.

Run: python benchmarks/disfl_qa.py TASK_JSON OUT_FOLDER [--questions 1000] [--answered]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path


def placed(answer: str, context: str) -> tuple[str, int] | None:
    """The answer as the context writes it and its first character, spaces ignored; None where it is not there."""
    kept = [i for i, ch in enumerate(context) if not ch.isspace()]
    squeezed = "".join(context[i] for i in kept)
    target = "".join(answer.split())
    at = squeezed.find(target) if target else -1
    while at >= 0:
        start, end = kept[at], kept[at + len(target) - 1] + 1
        if (start == 0 or context[start - 1].isspace()) and (end == len(context) or context[end].isspace()):
            return context[start:end], start
        at = squeezed.find(target, at + 1)
    return None


def read_disfl_qa(task: Path, answered: bool = False) -> tuple[dict[str, list[dict]], int]:
    """The questions of BIG-bench's disfl_qa task.json by paragraph, SQuAD's way (with `answered`, only those with
    an answer: SQuAD v1.1's layout), and how many were left out because their answer is not in the paragraph."""
    examples = json.loads(task.read_text(encoding="utf-8"))["examples"]
    by_context: dict[str, list[dict]] = {}
    left_out = 0
    for number, example in enumerate(examples):
        question, context = example["input"].split("\ncontext: ", 1)
        context, target = context.strip(), example["target"].strip()
        qa = {"id": f"disfl-qa-{number}", "question": question.strip(), "answers": [], "is_impossible": True}
        if target.lower() in ("unknown", "none", ""):
            if answered:
                continue
        else:
            found = placed(target, context)
            if found is None:
                left_out += 1
                continue
            qa |= {"answers": [{"text": found[0], "answer_start": found[1]}], "is_impossible": False}
        by_context.setdefault(context, []).append(qa)
    return by_context, left_out


def disfl_qa_split(task: Path, folder: Path, questions: int, answered: bool = False) -> tuple[Path, Path, Path]:
    """Training, validation and test files of SQuAD v2.0 JSON in `folder` (v1.1's with `answered`), split by
    paragraph."""
    by_context, left_out = read_disfl_qa(task, answered)
    contexts = sorted(by_context)
    random.Random(0).shuffle(contexts)
    cut = [0, len(contexts) * 8 // 10, len(contexts) * 9 // 10, len(contexts)]
    written = []
    for part, (name, wanted) in enumerate((("train", questions), ("valid", questions // 4), ("test", questions // 4))):
        paragraphs, count = [], 0
        for context in contexts[cut[part] : cut[part + 1]]:
            if count >= wanted:
                break
            paragraphs.append({"context": context, "qas": by_context[context]})
            count += len(by_context[context])
        if count < wanted:
            raise SystemExit(f"{task}: its {name} paragraphs hold {count:,} questions, fewer than the {wanted:,} asked")
        path = folder / f"disfl-qa{'-answered' if answered else ''}-{name}-{wanted}.json"
        version = "v1.1" if answered else "v2.0"
        document = {"version": version, "data": [{"title": "Disfl-QA", "paragraphs": paragraphs}]}
        path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
        written.append(path)
    print(f"Disfl-QA: {sum(map(len, by_context.values())):,} questions placed, {left_out:,} left out (answer not in "
          f"its paragraph); written {', '.join(p.name for p in written)}")  # fmt: skip
    return written[0], written[1], written[2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", type=Path, help="bigbench/benchmark_tasks/disfl_qa/task.json")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--questions", type=int, default=1000, help="training questions")
    parser.add_argument("--answered", action="store_true", help="only the questions with an answer (SQuAD v1.1)")
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    disfl_qa_split(args.task, args.folder, args.questions, args.answered)


if __name__ == "__main__":
    main()
