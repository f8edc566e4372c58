"""A family's encoder with a classification head, laid out and named as `transformers`' own
`…ForSequenceClassification` / `…ForTokenClassification` / `…ForQuestionAnswering` of that family, so that
export is a copy.

Each family module names its heads' layout (`SEQUENCE_HEAD`, and `TOKEN_HEAD` and `QA_HEAD` when not the usual
one); the layouts are defined here once:
  pooler          BERT: the encoder's pooler (dense + tanh on [CLS]), dropout, `classifier`
  tanh_projection RoBERTa: `classifier.dense` + tanh + `classifier.out_proj` on [CLS]
  gelu_projection ELECTRA: the same with GELU
  pre_classifier  DistilBERT: `pre_classifier` + ReLU, dropout, `classifier` on [CLS]
  prediction_head ModernBERT: `head` (dense, GELU, norm) on [CLS] or the mean of the tokens, `drop`, `classifier`
  linear          every token: dropout, `classifier`
  span            every token: `qa_outputs`, start and end logits (BERT, RoBERTa, ELECTRA: no dropout)
  dropout_span    DistilBERT: the same after dropout
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from mlm_studio.core.config.families import FAMILIES, SEGMENT_TYPES
from mlm_studio.core.config.sections import ModelConfig
from mlm_studio.core.data.labelled import TaskError
from mlm_studio.core.models.build import build_model
from mlm_studio.core.models.encoder import Dropout, init_like_bert
from mlm_studio.core.models.modernbert import ModernBertPredictionHead

CLASS_NAMES = {
    "classification": "ForSequenceClassification",
    "tokens": "ForTokenClassification",
    "qa": "ForQuestionAnswering",
}
SPAN_LAYOUTS = ("span", "dropout_span")
QA_LABELS = ("start", "end")  # a question-answering head's two outputs per token


def head_layout(family: str, task: str) -> str:
    """The layout of `family`'s head for `task`, as its module names it."""
    module = FAMILIES[family].implementation()
    if task == "qa":
        return getattr(module, "QA_HEAD", "span")
    layout = (
        getattr(module, "SEQUENCE_HEAD", "") if task == "classification" else getattr(module, "TOKEN_HEAD", "linear")
    )
    if not layout:
        raise TaskError(f"MLM Studio has no classification head for {FAMILIES[family].title} models")
    return layout


def architecture(family: str, task: str) -> str:
    """`transformers`' class of `family`'s model for `task` (BertForSequenceClassification)."""
    return FAMILIES[family].architecture.replace("ForMaskedLM", CLASS_NAMES[task])


def reads_segments(family: str) -> bool:
    """Whether `family`'s encoder takes segment ids (token_type_ids): whether it has segment embeddings."""
    return SEGMENT_TYPES in FAMILIES[family].fields


class Pooler(nn.Module):
    def __init__(self, size: int) -> None:
        super().__init__()
        self.dense = nn.Linear(size, size)


class Projection(nn.Module):
    def __init__(self, size: int, labels: int, dropout: float) -> None:
        super().__init__()
        self.dense = nn.Linear(size, size)
        self.dropout = Dropout(dropout)
        self.out_proj = nn.Linear(size, labels)


class TaskModel(nn.Module):
    """An encoder and the head of its family's layout: logits (B, labels) per text or (B, L, labels) per token
    (question answering: (B, L, 2), each token's start and end logits)."""

    def __init__(self, config: ModelConfig, task: str, labels: int, pooling: str = "cls") -> None:
        super().__init__()
        self.config, self.task, self.num_labels = config, task, labels
        self.layout = head_layout(config.family, task)
        if pooling != "cls" and self.layout != "prediction_head":
            raise TaskError(f"{FAMILIES[config.family].title}'s classifier reads the first token; pooling 'cls' only")
        self.pooling = pooling
        self.segments = reads_segments(config.family)
        self.prefix = FAMILIES[config.family].prefix
        self.add_module(self.prefix, getattr(build_model(config), self.prefix))
        size, p = config.hidden_size, config.hidden_dropout_prob
        if self.layout == "prediction_head":
            self.head = ModernBertPredictionHead(config)
            self.drop = Dropout(0.0)
        elif self.layout in ("tanh_projection", "gelu_projection"):
            self.classifier = Projection(size, labels, p)
        elif self.layout in SPAN_LAYOUTS:
            self.dropout = Dropout(p if self.layout == "dropout_span" else 0.0)
            self.qa_outputs = nn.Linear(size, labels)
        else:
            self.dropout = Dropout(p)
        if self.layout == "pooler":
            self.encoder_module.add_module("pooler", Pooler(size))
        if self.layout == "pre_classifier":
            self.pre_classifier = nn.Linear(size, size)
        if self.layout not in SPAN_LAYOUTS and not isinstance(getattr(self, "classifier", None), Projection):
            self.classifier = nn.Linear(size, labels)
        for name, module in self.named_modules():
            if not name.startswith(f"{self.prefix}.") or name.startswith(f"{self.prefix}.pooler"):
                init_like_bert(module, config.initializer_range)

    @property
    def encoder_module(self) -> nn.Module:
        return getattr(self, self.prefix)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        token_type_ids: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Logits; segment ids are read by the families that have segment embeddings, ignored by the others."""
        if self.segments and token_type_ids is not None:
            hidden = self.encoder_module(input_ids, attention_mask, token_type_ids=token_type_ids)  # (B, L, H)
        else:
            hidden = self.encoder_module(input_ids, attention_mask)
        layout = self.layout
        if layout in SPAN_LAYOUTS:
            return self.qa_outputs(self.dropout(hidden))
        if layout == "linear":
            return self.classifier(self.dropout(hidden))
        if layout == "prediction_head":
            if self.task == "classification":
                hidden = _mean(hidden, attention_mask) if self.pooling == "mean" else hidden[:, 0]
            return self.classifier(self.drop(self.head(hidden)))
        first = hidden[:, 0]
        if layout == "pooler":
            pooled = torch.tanh(self.encoder_module.pooler.dense(first))
            return self.classifier(self.dropout(pooled))
        if layout == "pre_classifier":
            return self.classifier(self.dropout(F.relu(self.pre_classifier(first))))
        head = self.classifier
        x = head.dense(head.dropout(first))
        x = torch.tanh(x) if layout == "tanh_projection" else F.gelu(x)
        return head.out_proj(head.dropout(x))


def _mean(hidden: torch.Tensor, attention_mask: torch.Tensor | None) -> torch.Tensor:
    if attention_mask is None:
        return hidden.mean(1)
    mask = attention_mask[..., None].to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1)
