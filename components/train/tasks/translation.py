"""The translation task kind (meta.json kind ``translation``): teacher-forced encoder-decoders on
length-bucketed token batches, scored on the real target tokens, with BLEU on its curves."""

from __future__ import annotations

import numpy as np
from torch import nn

from components.train.errors import TrainError
from components.train.tasks.base import Task, logits
from components.train.tasks.registry import register
from components.train.tasks.translation_batches import TranslationBatches, collate_rows, max_id, merge_translation


@register
class Translation(Task):
    """Source and target id sequences (src, src_lengths, tgt_in, tgt_out with -100 after EOS)."""

    kind = reads = "translation"
    keys = ("src_vocab_size", "tgt_vocab_size", "pad_id")
    merges_passes = True  # padded token batches: several micro-batches make one wider pass
    pads_when_compiled = True  # lengths vary by batch: compiled graphs are kept per length bucket

    def open(self) -> None:
        from components.data.io import load_translation

        self.dataset, _ = load_translation(self.path)
        self.pad_id = int(self.meta["pad_id"])

    def load(self, name: str):
        """Memory-mapped id arrays when the folder has them; else lists from the Arrow columns (older folders)."""
        from components.data.token_arrays import TokenArrays

        arrays = self.path / "arrays"
        if (arrays / f"{name}.src.ids.npy").exists():
            return TokenArrays.load(arrays, f"{name}.src"), TokenArrays.load(arrays, f"{name}.tgt")
        ds = self.dataset[name]
        return list(ds["src_ids"]), list(ds["tgt_ids"])

    def train_batches(self, seed, batch_size, max_tokens, shift=0):
        return TranslationBatches(*self.split("train"), self.pad_id, seed, batch_size, max_tokens)

    def eval_batches(self, split, batch_size):
        src, tgt = self.split(split)
        for start in range(0, len(src), batch_size):
            yield collate_rows(src, tgt, range(start, min(start + batch_size, len(src))), self.pad_id)

    def passes(self, micro_batches, passes):
        """Merge the micro-batches into ``passes`` padded batches (consecutive ones together)."""
        if passes >= len(micro_batches):
            return micro_batches
        groups = np.array_split(np.arange(len(micro_batches)), passes)
        return [merge_translation([micro_batches[i] for i in g], self.pad_id) for g in groups]

    def targets(self, batch):
        return int((batch["tgt_out"] != -100).sum())  # the real target tokens

    def tokens(self, batch):
        return int(batch["src_lengths"].sum())

    def check_ids(self, model: nn.Module) -> None:
        """Check every token id of the splits against the model's vocabularies."""
        cfg = getattr(model, "config", None)
        for side in ("src", "tgt"):
            vocab = getattr(cfg, f"{side}_vocab_size", None)
            if vocab is None:
                continue
            for name in ("train", "valid", "test"):
                top = max_id(self.split(name)[0 if side == "src" else 1])
                if top >= vocab:
                    raise TrainError(
                        f"{name} split: {side} id {top} is out of range for the model's "
                        f"{side}_vocab_size {vocab}; drop the vocab-size override or re-prepare the data"
                    )

    def outputs(self, model, batch):
        b = self.on_device(batch)
        if getattr(model, "projects_kept", False):
            # only scored positions reach the output layer; the indices come from the CPU copy (no sync)
            keep = (batch["tgt_out"].reshape(-1) != -100).nonzero().squeeze(1)
            y = b["tgt_out"].reshape(-1).index_select(0, keep.to(self.device, non_blocking=True))
            return logits(model(b["src"], b["src_lengths"], b["tgt_in"], keep=keep)), y
        return logits(model(b["src"], b["src_lengths"], b["tgt_in"])), b["tgt_out"]

    def curve_points(self, net, n, device):
        """``valid/bleu``: sacreBLEU (13a) of greedy translations of the first ``n`` valid sentences,
        decoded and detokenised as ``eval.bleu`` does; none for models that do not decode."""
        if n <= 0 or not hasattr(net, "greedy"):
            return {}
        from sacrebleu.metrics import BLEU

        from components.data.io import detokenize
        from components.models.decoding import translate

        part = self.dataset["valid"]
        n = min(n, len(part))
        if n == 0:
            return {}
        ids = translate(net, list(part["src_ids"][:n]), self.meta, device=device)  # restores train mode
        hyps = detokenize(self.path, ids)
        return {"valid/bleu": BLEU(tokenize="13a").corpus_score(hyps, [list(part["tgt"][:n])]).score}
