import json
import re
from dataclasses import astuple

import numpy as np
import pytest

from mlm_studio.core.config.sections import TokenizerConfig
from mlm_studio.core.data.tokenizer import BERT_STYLE, MLMTokenizer, TokenizerError, train_tokenizer
from mlm_studio.core.progress import Cancelled, Progress

TEXTS = ["The Interpreter evaluates expressions.", "Ünïcode façade, naïve café!", "unseen ✓ glyph 3.14"]


def test_trained_vocabulary_has_the_special_tokens_first(tokenizer):
    assert tokenizer.vocab_size == 4000
    assert tokenizer.convert_ids(range(5)) == list(astuple(BERT_STYLE))
    assert tokenizer.special_ids == (0, 1, 2, 3, 4)
    assert tokenizer.special_mask().sum() == 5 and tokenizer.special_mask()[:5].all()


def test_lowercase_and_word_pieces(tokenizer):
    pieces = tokenizer.tokens("Iterators unexpectedly")
    assert all(p == p.lower() for p in pieces)
    assert any(p.startswith("##") for p in tokenizer.tokens("unexpectedly superfluousness"))


def test_word_starts_follow_the_pre_tokenizer(tokenizer):
    encoded = tokenizer.encode_batch(["superfluousness is, indeed"])[0]
    pieces = tokenizer.convert_ids(encoded.ids)
    expected = [not p.startswith("##") for p in pieces]
    assert encoded.word_starts.tolist() == expected
    assert encoded.ids.dtype == np.int64


HOSTILE = [
    "## ##a #x ##",
    "a[MASK][MASK] b [UNK] [UNK]",
    "naïve café \u211d 中文 😀😀",
    "x" * 300,
    "well-known e.g. U.S.A.",
]


def test_wordpiece_word_starts_equal_the_pre_tokenizers_word_ids(tokenizer, builtin_corpus):
    """WordPiece's word starts come from the pieces (no `##`), not from the encoder's word ids: the two agree."""
    texts = [*list(builtin_corpus.iter_documents())[:3000], *HOSTILE]
    for encoded, reference in zip(tokenizer.encode_batch(texts), tokenizer.backend.encode_batch(texts, False, False)):
        words = np.array([-1 if w is None else w for w in reference.word_ids])
        starts = np.concatenate([[True], words[1:] != words[:-1]]) if len(words) else np.zeros(0, bool)
        assert encoded.ids.tolist() == reference.ids and encoded.word_starts.tolist() == starts.tolist()


@pytest.mark.parametrize("name", ["tokenizer.json", "vocab.txt"])
def test_save_and_load_round_trip_ids_and_special_tokens(tokenizer, tmp_path, name):
    path = tokenizer.save(tmp_path / name)
    loaded = MLMTokenizer.load(path)
    assert loaded.special_ids == tokenizer.special_ids and loaded.vocab_size == tokenizer.vocab_size
    for text in TEXTS:
        assert loaded.backend.encode(text).ids == tokenizer.backend.encode(text).ids
    if name == "tokenizer.json":
        assert loaded.fingerprint() == tokenizer.fingerprint()


def test_load_from_a_folder(tokenizer, tmp_path):
    tokenizer.save(tmp_path)
    assert MLMTokenizer.load(tmp_path).fingerprint() == tokenizer.fingerprint()


def test_cased_vocab_txt_stays_cased(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join([*astuple(BERT_STYLE), "Hello", "hello", "world", "##s"]) + "\n")
    loaded = MLMTokenizer.load(tmp_path / "vocab.txt")
    assert loaded.tokens("Hello hellos World") == ["Hello", "hello", "##s", "[UNK]"]


def test_stats_measure_unknowns_and_pieces_per_word(tokenizer):
    stats = tokenizer.stats(["return the value", "✓✓✓"])
    assert stats.words == 4 and stats.unknown == 1
    assert stats.tokens >= 4 and stats.unknown_rate == pytest.approx(1 / stats.tokens)
    assert stats.pieces_per_word == pytest.approx(stats.tokens / 4)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("tokenizer.json", "{not json", "is not a valid tokenizer.json"),
        ("tokenizer.json", json.dumps({"hello": 1}), "is not a valid tokenizer.json"),
        ("vocab.txt", "hello\nworld\n", "lacks the special token(s) [PAD], [UNK], [CLS], [SEP], [MASK]"),
        ("vocab.txt", "[PAD]\n[PAD]\n", "line 2: '[PAD]' appears twice"),
    ],
)
def test_bad_tokenizer_files_are_refused_clearly(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(TokenizerError, match=re.escape(message)):
        MLMTokenizer.load(path)


def test_tokenizer_json_without_special_tokens_is_refused(tmp_path):
    from tokenizers import Tokenizer, models

    (tmp_path / "tokenizer.json").write_text(
        Tokenizer(models.WordPiece({"a": 0, "[UNK]": 1}, unk_token="[UNK]")).to_str()
    )
    with pytest.raises(
        TokenizerError,
        match=r"tokenizer.json: the tokenizer lacks the special token\(s\) \[PAD\].*or, RoBERTa.s way, <pad>",
    ):
        MLMTokenizer.load(tmp_path / "tokenizer.json")


def test_missing_and_binary_files(tmp_path):
    with pytest.raises(TokenizerError, match=r"does not exist"):
        MLMTokenizer.load(tmp_path / "nope.json")
    with pytest.raises(TokenizerError, match=r"neither tokenizer.json nor vocab.txt"):
        MLMTokenizer.load(tmp_path)
    (tmp_path / "vocab.txt").write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(TokenizerError, match=r"cannot be read as UTF-8"):
        MLMTokenizer.load(tmp_path / "vocab.txt")


def test_training_reports_progress_and_can_be_cancelled(builtin_corpus):
    seen = []

    class Recorder(Progress):
        def report(self, done, total, message=""):
            seen.append((done, total))

    train_tokenizer(
        builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=500), builtin_corpus.documents, Recorder()
    )
    assert seen[0] == (0, builtin_corpus.documents) and seen[-1] == (builtin_corpus.documents,) * 2

    class CancelEarly(Progress):
        def report(self, done, total, message=""):
            if done >= 1000:
                self.cancel()

    with pytest.raises(Cancelled):
        train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(), builtin_corpus.documents, CancelEarly())


def test_config_is_validated():
    with pytest.raises(ValueError, match=r"tokenizer.vocab_size must be between"):
        TokenizerConfig(vocab_size=10)
    with pytest.raises(ValueError, match=r"tokenizer.min_frequency must be at least 1"):
        TokenizerConfig(min_frequency=0)


def test_a_document_longer_than_a_chunk_encodes_as_if_whole(tokenizer, monkeypatch):
    from mlm_studio.core.data import tokenizer as tokenizer_module

    text = "The interpreter raises an exception when the iterator is exhausted. " * 40
    joined = "iterator.exhausted,interpreter;" * 40 + " " + "x" * 5000  # no white space; an overlong word
    whole = tokenizer.encode_batch([text, joined])
    monkeypatch.setattr(tokenizer_module, "CHUNK_CHARS", 100)  # every piece a chunk of about 100 characters
    chunked = tokenizer.encode_batch(["short one", text, joined])
    for mine, expected in zip(chunked[1:], whole):
        assert (mine.ids == expected.ids).all() and (mine.word_starts == expected.word_starts).all()
    assert (chunked[0].ids == tokenizer.encode_batch(["short one"])[0].ids).all()
