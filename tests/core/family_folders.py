"""Tiny random models of every family, made and saved by `transformers` itself with a tokenizer of the family's
kind: WordPiece (BERT, DistilBERT), byte-level BPE (RoBERTa with `<s> </s> <mask>`, ModernBERT with BERT's
special tokens), SentencePiece Unigram (XLM-RoBERTa)."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

BERT_SPECIALS = {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}
ROBERTA_SPECIALS = {"pad": "<pad>", "unk": "<unk>", "cls": "<s>", "sep": "</s>", "mask": "<mask>"}


def _wordpiece(documents: list[str]) -> Tokenizer:
    from mlm_studio.core.config.sections import TokenizerConfig
    from mlm_studio.core.data.tokenizer import train_tokenizer

    return train_tokenizer(documents, TokenizerConfig(vocab_size=400, lowercase=False)).backend


def _byte_level_bpe(documents: list[str], specials: dict[str, str]) -> Tokenizer:
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    order = [specials[r] for r in ("cls", "pad", "sep", "unk", "mask")]
    trainer = trainers.BpeTrainer(
        vocab_size=500,
        special_tokens=order,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(documents, trainer)
    return backend


def _unigram(documents: list[str], specials: dict[str, str]) -> Tokenizer:
    backend = Tokenizer(models.Unigram())
    backend.pre_tokenizer = pre_tokenizers.Metaspace()
    backend.decoder = decoders.Metaspace()
    order = [specials[r] for r in ("cls", "pad", "sep", "unk", "mask")]
    trainer = trainers.UnigramTrainer(vocab_size=500, special_tokens=order, unk_token="<unk>", show_progress=False)
    backend.train_from_iterator(documents, trainer)
    return backend


KINDS = {
    "wordpiece": (lambda docs: _wordpiece(docs), BERT_SPECIALS),
    "bpe-roberta": (lambda docs: _byte_level_bpe(docs, ROBERTA_SPECIALS), ROBERTA_SPECIALS),
    "bpe-bert-tokens": (lambda docs: _byte_level_bpe(docs, BERT_SPECIALS), BERT_SPECIALS),
    "unigram": (lambda docs: _unigram(docs, ROBERTA_SPECIALS), ROBERTA_SPECIALS),
}


def save_tokenizer(kind: str, documents: list[str], folder: Path):
    """A tokenizer of `kind`, saved by `transformers` into `folder`; returns its `transformers` tokenizer."""
    import transformers

    build, specials = KINDS[kind]
    backend = build(documents)
    cls, sep = specials["cls"], specials["sep"]
    roberta_style = cls == "<s>"  # RoBERTa's pairs: <s> A </s></s> B </s>, one segment; BERT's: two
    backend.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}",
        pair=f"{cls} $A {sep} {sep} $B {sep}" if roberta_style else f"{cls} $A {sep} $B:1 {sep}:1",
        special_tokens=[(cls, backend.token_to_id(cls)), (sep, backend.token_to_id(sep))],
    )
    lstrip = specials["mask"] == "<mask>"  # RoBERTa's mask takes the space before it
    backend.add_special_tokens([AddedToken(specials["mask"], lstrip=lstrip, special=True)])
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=backend, **{f"{role}_token": token for role, token in specials.items()}
    )
    tokenizer.save_pretrained(folder)
    return tokenizer


# family: (transformers config class, its model class, tokenizer kind, config values)
SHAPE = {"hidden_size": 48, "num_hidden_layers": 3, "num_attention_heads": 4, "intermediate_size": 96}
CASES = {
    "bert": ("BertConfig", "BertForMaskedLM", "wordpiece", {**SHAPE, "max_position_embeddings": 64}),
    "roberta": (
        "RobertaConfig",
        "RobertaForMaskedLM",
        "bpe-roberta",
        {**SHAPE, "max_position_embeddings": 66, "type_vocab_size": 1, "layer_norm_eps": 1e-5},
    ),
    "xlm-roberta": (
        "XLMRobertaConfig",
        "XLMRobertaForMaskedLM",
        "unigram",
        {**SHAPE, "max_position_embeddings": 66, "type_vocab_size": 1},
    ),
    "distilbert": (
        "DistilBertConfig",
        "DistilBertForMaskedLM",
        "wordpiece",
        {"dim": 48, "n_layers": 3, "n_heads": 4, "hidden_dim": 96, "max_position_embeddings": 64},
    ),
    "modernbert": (
        "ModernBertConfig",
        "ModernBertForMaskedLM",
        "bpe-bert-tokens",
        {**SHAPE, "max_position_embeddings": 64, "local_attention": 8, "global_attn_every_n_layers": 2},
    ),
}


def make_folder(name: str, documents: list[str], folder: Path) -> Path:
    """A random `name` masked-LM with weights spread wide enough that top-k orders are not decided by
    rounding, saved by `transformers` with its tokenizer."""
    import transformers

    config_class, model_class, kind, values = CASES[name]
    tokenizer = save_tokenizer(kind, documents, folder)
    pad, cls, sep = (
        tokenizer.convert_tokens_to_ids(tokenizer.special_tokens_map[f"{r}_token"]) for r in ("pad", "cls", "sep")
    )
    ids = {"pad_token_id": pad, "bos_token_id": cls, "eos_token_id": sep, "cls_token_id": cls, "sep_token_id": sep}
    config = getattr(transformers, config_class)(vocab_size=len(tokenizer), initializer_range=0.3, **values, **ids)
    torch.manual_seed(1)
    getattr(transformers, model_class)(config).eval().save_pretrained(folder)
    return folder
