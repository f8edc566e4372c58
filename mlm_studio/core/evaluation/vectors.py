"""A text's sentence vector: the mean of a layer's output over its tokens, as the task probe and search read
texts. A text longer than the model reads at once is read whole, in consecutive windows of the model's length,
up to `MAX_WINDOWS` of them; its vector is the mean over every token of every window (a document with 400 more
words is not scored as the same document without them). Past that, the text is cut, and the caller is told."""

from __future__ import annotations

import numpy as np
import torch

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.models.encoder import layer_outputs
from mlm_studio.core.progress import Progress

WINDOW_TOKENS = 128  # tokens the model reads at once (or fewer, if it reads fewer)
MAX_WINDOWS = 8  # windows of a text read at most: 1,024 tokens
MAX_TEXT_CHARS = WINDOW_TOKENS * MAX_WINDOWS * 64  # characters of a text tokenized, ample for those tokens


def tokens_read(model: torch.nn.Module) -> int:
    """How many tokens of a text are read at most: `MAX_WINDOWS` windows of the model's length."""
    return MAX_WINDOWS * min(WINDOW_TOKENS, model.config.max_tokens())


@torch.no_grad()
def sentence_vectors(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    texts: list[str],
    layer: int | None = None,
    batch_size: int = 32,
    progress=None,
    cut: list[int] | None = None,
) -> np.ndarray:
    """(N, H): each text's hidden states averaged over its tokens, at the output of encoder layer `layer` (1 =
    the first), or by default as the head reads them; the model is not changed. `cut`, when given, receives the
    indices of the texts longer than `tokens_read` (their vectors stand for their beginnings)."""
    progress = progress or Progress()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    window = min(WINDOW_TOKENS, model.config.max_tokens())
    sums = np.zeros((len(texts), 0), dtype=np.float64)
    counts = np.zeros(len(texts), dtype=np.int64)
    for start in range(0, len(texts), batch_size):
        progress.check()
        progress.report(start, len(texts), "Reading the texts with the model")
        pieces, owners = [], []
        for offset, text in enumerate(texts[start : start + batch_size]):
            ids = tokenizer.encode_text(text[:MAX_TEXT_CHARS])[0]
            if cut is not None and (len(ids) > window * MAX_WINDOWS or len(text) > MAX_TEXT_CHARS):
                cut.append(start + offset)
            ids = ids[: window * MAX_WINDOWS]
            for begin in range(0, max(len(ids), 1), window):
                pieces.append(ids[begin : begin + window])
                owners.append(start + offset)
        hidden = _window_sums(model, tokenizer, pieces, layer, device, batch_size)
        if sums.shape[1] == 0:
            sums = np.zeros((len(texts), hidden.shape[1]), dtype=np.float64)
        np.add.at(sums, owners, hidden)
        np.add.at(counts, owners, [len(p) for p in pieces])
    model.train(was_training)
    return (sums / np.maximum(counts, 1)[:, None]).astype(np.float32)


def _window_sums(model, tokenizer: MLMTokenizer, pieces: list[list[int]], layer, device, batch_size: int) -> np.ndarray:
    """(windows, H): each window's hidden states summed over its tokens."""
    out = []
    for start in range(0, len(pieces), batch_size):
        batch = pieces[start : start + batch_size]
        length = max(1, max(len(ids) for ids in batch))
        ids = torch.full((len(batch), length), tokenizer.pad_id, dtype=torch.long)
        real = torch.zeros((len(batch), length), dtype=torch.bool)
        for row, tokens in enumerate(batch):
            ids[row, : len(tokens)] = torch.tensor(tokens, dtype=torch.long)
            real[row, : len(tokens)] = True
        ids, real = ids.to(device), real.to(device)
        if layer is None:
            hidden = model.hidden(ids, real.long()).float()  # (B, L, H)
        else:
            with layer_outputs(model, layer) as captured:
                model.hidden(ids, real.long())
            hidden = captured[0].float()
        out.append(torch.where(real[..., None], hidden, 0.0).sum(1).double().cpu().numpy())
    return np.concatenate(out)
