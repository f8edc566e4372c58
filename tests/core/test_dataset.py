import numpy as np
import pytest

from mlm_studio.core.config.sections import DataConfig, TokenizerConfig
from mlm_studio.core.data.corpus import CorpusError, load_corpus
from mlm_studio.core.data.dataset import TokenizedCorpus, cache_key, split_blocks, split_documents, tokenize_corpus
from mlm_studio.core.data.tokenizer import MLMTokenizer, train_tokenizer
from mlm_studio.core.data.wordpiece import BERT_SPECIAL_TOKENS


@pytest.fixture(scope="module")
def tokenized(builtin_corpus, tokenizer, tmp_path_factory):
    return tokenize_corpus(builtin_corpus, tokenizer, root=tmp_path_factory.mktemp("datasets"))


def test_ids_are_memory_mapped_and_match_the_tokenizer(tokenized, builtin_corpus, tokenizer):
    assert isinstance(tokenized.ids, np.memmap) and tokenized.ids.dtype == np.uint16
    assert tokenized.documents == builtin_corpus.documents
    docs = list(builtin_corpus.iter_documents())
    for index in (0, 17, len(docs) - 1):
        start, end = tokenized.offsets[index], tokenized.offsets[index + 1]
        encoded = tokenizer.encode_batch([docs[index]])[0]
        assert tokenized.ids[start:end].tolist() == encoded.ids.tolist()
        assert tokenized.word_starts[start:end].tolist() == encoded.word_starts.tolist()


def test_the_cache_is_reused(tokenized, builtin_corpus, tokenizer, monkeypatch):
    def must_not_tokenize(*args, **kwargs):
        raise AssertionError("tokenized again")

    monkeypatch.setattr(type(tokenizer), "encode_batch", must_not_tokenize)
    again = tokenize_corpus(builtin_corpus, tokenizer, root=tokenized.folder.parent)
    assert again.folder == tokenized.folder


def test_the_cache_key_changes_with_the_sources_and_the_tokenizer(tmp_path, tokenizer, builtin_corpus):
    f = tmp_path / "a.txt"
    f.write_text("first version")
    before = cache_key(load_corpus([f]), tokenizer)
    f.write_text("second, longer version")
    assert cache_key(load_corpus([f]), tokenizer) != before
    same = MLMTokenizer.load(tokenizer.save(tmp_path / "vocab.txt"))
    assert cache_key(builtin_corpus, same) == cache_key(builtin_corpus, tokenizer)
    other = train_tokenizer(builtin_corpus.iter_documents(), TokenizerConfig(vocab_size=500))
    assert cache_key(builtin_corpus, other) != cache_key(builtin_corpus, tokenizer)


def test_wide_vocabularies_use_uint32(tmp_path):
    pieces = [*BERT_SPECIAL_TOKENS, *(f"w{i}" for i in range(70_000))]
    (tmp_path / "vocab.txt").write_text("\n".join(pieces) + "\n")
    wide = MLMTokenizer.load(tmp_path / "vocab.txt")
    (tmp_path / "c.txt").write_text("w69999 w3")
    data = tokenize_corpus(load_corpus([tmp_path / "c.txt"]), wide, root=tmp_path / "cache")
    assert data.ids.dtype == np.uint32 and data.ids.tolist() == [70_004, 8]


def test_packed_blocks_are_full_and_reproduce_the_stream(tokenized, tokenizer):
    config = DataConfig(max_seq_len=64)
    train, _ = split_blocks(tokenized, config, tokenizer)
    batch = train.batch(np.arange(len(train)))
    assert batch.input_ids.shape == (len(train), 64) and batch.attention_mask.all()
    assert (batch.input_ids[:, 0] == tokenizer.cls_id).all() and (batch.input_ids[:, -1] == tokenizer.sep_id).all()
    stream = []
    for start, length in zip(train.doc_starts, train.doc_lengths):
        stream.extend([*tokenized.ids[start : start + length].tolist(), tokenizer.sep_id])
    content = batch.input_ids[:, 1:-1].ravel().tolist()
    assert content == stream[: len(content)] and len(stream) - len(content) < 62


def test_per_document_blocks_are_padded_and_lose_nothing(tokenized, tokenizer):
    config = DataConfig(max_seq_len=32, packing=False)
    train, _ = split_blocks(tokenized, config, tokenizer)
    batch = train.batch(np.arange(len(train)))
    pad = tokenizer.pad_id
    assert np.array_equal(batch.attention_mask, batch.input_ids != pad)
    rebuilt: dict[int, list[int]] = {}
    for row, doc in enumerate(train.chunk_doc):
        ids = batch.input_ids[row][batch.attention_mask[row]]
        assert ids[0] == tokenizer.cls_id and ids[-1] == tokenizer.sep_id
        rebuilt.setdefault(int(doc), []).extend(ids[1:-1].tolist())
    for doc in (0, 5, train.documents - 1):
        start, length = train.doc_starts[doc], train.doc_lengths[doc]
        assert rebuilt[doc] == tokenized.ids[start : start + length].tolist()


@pytest.mark.parametrize("packing", [True, False])
def test_word_ids_group_the_pieces_of_each_word(tokenized, tokenizer, packing):
    train, _ = split_blocks(tokenized, DataConfig(max_seq_len=48, packing=packing), tokenizer)
    batch = train.batch(np.arange(0, len(train), 37))
    special = tokenizer.special_mask()[batch.input_ids]
    assert (batch.word_ids[special] == -1).all() and (batch.word_ids[~special] >= 0).all()
    for row in range(len(batch.input_ids)):
        pieces = tokenizer.convert_ids(batch.input_ids[row])
        words = batch.word_ids[row]
        for position in range(2, len(pieces)):
            if pieces[position].startswith("##") and words[position - 1] >= 0:
                assert words[position] == words[position - 1]
        real = words[words >= 0]
        assert (np.diff(real) >= 0).all()


def test_split_is_deterministic_disjoint_and_never_empty(tokenized, tokenizer):
    config = DataConfig()
    train_docs, val_docs = split_documents(tokenized.documents, config)
    again = split_documents(tokenized.documents, config)
    assert np.array_equal(train_docs, again[0]) and np.array_equal(val_docs, again[1])
    assert len(np.intersect1d(train_docs, val_docs)) == 0
    assert len(train_docs) + len(val_docs) == tokenized.documents
    assert len(val_docs) / tokenized.documents == pytest.approx(0.05, abs=0.01)
    assert not np.array_equal(val_docs, split_documents(tokenized.documents, DataConfig(split_seed=1))[1])
    tiny_train, tiny_val = split_documents(2, config)
    assert len(tiny_train) == 1 and len(tiny_val) == 1
    _, validation = split_blocks(tokenized, DataConfig(validation_fraction=0.0001), tokenizer)
    assert len(validation) >= 1


def test_a_corpus_without_tokens_is_refused(tmp_path, tokenizer):
    f = tmp_path / "controls.txt"
    f.write_text("\x07\x07\n\n\x08")
    with pytest.raises(CorpusError, match=r"gave no tokens"):
        tokenize_corpus(load_corpus([f]), tokenizer, root=tmp_path / "cache")
    assert not any((tmp_path / "cache").iterdir())  # no half-written cache entry is left behind


def test_reopening_the_cache_folder(tokenized):
    reopened = TokenizedCorpus(tokenized.folder)
    assert reopened.tokens == tokenized.tokens and np.array_equal(reopened.lengths, tokenized.lengths)


def test_config_is_validated():
    with pytest.raises(ValueError, match=r"data.max_seq_len must be between 8 and 8,192"):
        DataConfig(max_seq_len=4)
    with pytest.raises(ValueError, match=r"data.validation_fraction must be between 0.0 and 0.5"):
        DataConfig(validation_fraction=0.9)
