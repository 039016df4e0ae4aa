"""A copy-like synthetic translation task and briefly trained encoder-decoders, shared by the
BLEU and B3 probe tests."""

import torch

from components import Context, get


def train_toy(root, models, *, steps: int, n_test: int):
    """(data folder, {model: checkpoint}) for ``models`` trained ``steps`` steps on one thread."""
    torch.set_num_threads(1)
    data = get("data.synthetic_translation")(
        Context(root / "data"), vocab=6, min_len=2, max_len=12, reorder="none", n_train=800, n_valid=40, n_test=n_test
    )["dataset"]
    ckpts = {
        m: get("train.model")(Context(root / m), data=data, model=m, steps=steps, max_tokens=600, lr=1e-2)["checkpoint"]
        for m in models
    }
    return data, ckpts
