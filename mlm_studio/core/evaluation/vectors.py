"""A text's sentence vector: the mean of a layer's output over its tokens, as the task probe and search read
texts."""

from __future__ import annotations

import numpy as np
import torch

from mlm_studio.core.data.tokenizer import MLMTokenizer
from mlm_studio.core.models.encoder import layer_outputs
from mlm_studio.core.progress import Progress

MAX_TOKENS = 128  # each text is read up to this many tokens
MAX_TEXT_CHARS = MAX_TOKENS * 64  # and up to this many characters, ample for those tokens


@torch.no_grad()
def sentence_vectors(
    model: torch.nn.Module,
    tokenizer: MLMTokenizer,
    texts: list[str],
    layer: int | None = None,
    batch_size: int = 32,
    progress=None,
) -> np.ndarray:
    """(N, H): each text's hidden states averaged over its tokens, at the output of encoder layer `layer` (1 =
    the first), or by default as the head reads them; the model is not changed."""
    progress = progress or Progress()
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    vectors = []
    limit = min(MAX_TOKENS, model.config.max_tokens())
    for start in range(0, len(texts), batch_size):
        progress.check()
        progress.report(start, len(texts), "Reading the texts with the model")
        batch = texts[start : start + batch_size]
        encoded = [tokenizer.encode_text(t[:MAX_TEXT_CHARS])[0][:limit] for t in batch]
        length = max(len(ids) for ids in encoded)
        ids = torch.full((len(encoded), length), tokenizer.pad_id, dtype=torch.long)
        real = torch.zeros((len(encoded), length), dtype=torch.bool)
        for row, tokens in enumerate(encoded):
            ids[row, : len(tokens)] = torch.tensor(tokens)
            real[row, : len(tokens)] = True
        ids, real = ids.to(device), real.to(device)
        if layer is None:
            hidden = model.hidden(ids, real.long()).float()  # (B, L, H)
        else:
            with layer_outputs(model, layer) as captured:
                model.hidden(ids, real.long())
            hidden = captured[0].float()
        mean = (hidden * real[..., None]).sum(1) / real.sum(1, keepdim=True)
        vectors.append(mean.cpu().numpy())
    model.train(was_training)
    return np.concatenate(vectors)
