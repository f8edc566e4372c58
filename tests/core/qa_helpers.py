"""Tokenizers of every kind for the question-answering tests, each with the `transformers` fast tokenizer of the
same vocabulary (the reference), and texts that stress offsets: accents, runs of spaces, punctuation, CJK."""

from __future__ import annotations

from pathlib import Path

from hypothesis import strategies as st
from tokenizers import processors

from mlm_studio.core.data.tokenizer import MLMTokenizer
from tests.core.family_folders import save_tokenizer

DOCUMENTS = [
    "The quick brown fox jumps over the lazy dog; 3.14 + 2 = 5.14!",
    "naïve café résumé über Straße, déjà vu — «quoted» text (in brackets).",
    "東京は日本の首都です。 北京是中国的首都。 データ",
    "Who wrote it? She did, in 1999: a short, strange book.",
] * 25
KINDS = ["wordpiece", "bpe-roberta", "bpe-trimmed", "unigram"]  # bpe-trimmed: RoBERTa's own post-processor

WORDS = [
    "The", "the", "fox", "jumps", "over", "lazy", "dog", "café", "naïve", "résumé", "Straße", "déjà", "vu", "3.14",
    "1999", "東京", "は", "日本", "の", "首都", "です", "。", "北京是中国的首都", "データ", "!", ",", ";", "?", "«",
    "»", "(in", "brackets).", "Who", "wrote", "it", "zebra", "Ωmega",
]  # fmt: skip
GAPS = [" ", " ", " ", "  ", "   ", "\t", "\n", ""]
TEXT = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(GAPS)), min_size=1, max_size=60).map(
    lambda pairs: "".join(word + gap for word, gap in pairs)
)
QUESTION = st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join)


def tokenizer_pair(kind: str, folder: Path):
    """(the MLMTokenizer of `kind`, the `transformers` fast tokenizer of the same `tokenizer.json`)."""
    import transformers

    save_tokenizer("bpe-roberta" if kind == "bpe-trimmed" else kind, DOCUMENTS, folder)
    reference = transformers.PreTrainedTokenizerFast.from_pretrained(folder)
    if kind == "bpe-trimmed":
        backend = reference.backend_tokenizer
        sep, cls = (backend.token_to_id(t) for t in ("</s>", "<s>"))
        backend.post_processor = processors.RobertaProcessing(("</s>", sep), ("<s>", cls), trim_offsets=True)
        reference.save_pretrained(folder)
        reference = transformers.PreTrainedTokenizerFast.from_pretrained(folder)
    return MLMTokenizer.load(folder / "tokenizer.json"), reference
