"""Subject-verb agreement past attractors (Linzen et al. 2016) as a synthetic language."""

from __future__ import annotations

import numpy as np
import torch

from components.bounds import Count, Probability, Size
from components.data.errors import DataError
from components.data.split_sizes import N_TEST, N_TRAIN, N_VALID
from components.data.tasks import write_task
from components.registry import component

N_PREPS = 4  # "of", "near", "behind", "with": each intervening noun sits in a prepositional phrase


@component("data.agreement", outputs=["dataset"], bottleneck="B2")
def agreement(
    ctx,
    *,
    attractors: Count = 2,
    fillers: Count = 0,
    nouns: Size = 20,
    adjectives: Size = 8,
    train_attractor_prob: Probability = 0.5,
    test_attractor_prob: Probability = 1.0,
    n_train: Count = N_TRAIN,
    n_valid: Count = N_VALID,
    n_test: Count = N_TEST,
    seed: Count = 0,
) -> dict:
    """Generate agreement sentences: predict the number of the subject at the verb slot.

    A sentence is ``subject (prep noun){K} + fillers``; the label is the subject's number
    (0 singular, 1 plural), read out at the end where the verb would follow.

    Args:
        attractors: K, nouns between subject and verb; each is an attractor (the other number than
            the subject) with the split's attractor probability.
        fillers: adjectives inserted at random places after the subject (longer distance).
        nouns: noun stems; stem i is singular id ``i`` and plural id ``nouns + i``.
        adjectives: number of filler words.
        train_attractor_prob: attractor probability in train/valid; 0.5 makes intervening nouns
            carry no information about the label, so only remembering the subject works.
        test_attractor_prob: attractor probability in test; 1.0 gives exactly K attractors.
        n_train, n_valid, n_test: examples per split.
        seed: generator seed; each split has its own stream.

    Returns:
        ``dataset``: folder; each split also holds ``attractors (N,)``, the count per sentence.
    """
    _check(attractors, fillers, nouns, adjectives, train_attractor_prob, test_attractor_prob)

    def make(rng: np.random.Generator, n: int, split: str) -> dict[str, torch.Tensor]:
        p_attr = test_attractor_prob if split == "test" else train_attractor_prob
        return _sentences(rng, n, p_attr, attractors, fillers, nouns, adjectives)

    meta = _meta(attractors, fillers, nouns, adjectives)
    return write_task(ctx, make, meta, n_train=n_train, n_valid=n_valid, n_test=n_test, seed=seed)


def _check(attractors, fillers, nouns, adjectives, train_attractor_prob, test_attractor_prob) -> None:
    """Reject counts and probabilities out of range, before anything is generated."""
    if attractors < 0 or fillers < 0:
        raise DataError(f"attractors and fillers must be >= 0, got {attractors} and {fillers}")
    if nouns < 1 or adjectives < 1:
        raise DataError(f"nouns and adjectives must be >= 1, got {nouns} and {adjectives}")
    for name, p in (("train_attractor_prob", train_attractor_prob), ("test_attractor_prob", test_attractor_prob)):
        if not 0.0 <= p <= 1.0:
            raise DataError(f"{name} must be a probability in [0, 1], got {p}")


def _sentences(rng, n, p_attr, attractors, fillers, nouns, adjectives) -> dict[str, torch.Tensor]:
    """Draw ``n`` sentences whose intervening nouns disagree with the subject with probability ``p_attr``."""
    prep0, adj0 = 2 * nouns, 2 * nouns + N_PREPS
    seq_len = 1 + 2 * attractors + fillers
    number = rng.integers(0, 2, size=n)  # (N,) 0 singular, 1 plural
    flips = rng.random((n, attractors)) < p_attr  # (N, K) which intervening nouns disagree
    x = np.empty((n, seq_len), dtype=np.int64)
    for i in range(n):
        words = [number[i] * nouns + rng.integers(nouns)]
        for k in range(attractors):
            noun_number = number[i] ^ int(flips[i, k])
            words += [prep0 + rng.integers(N_PREPS), noun_number * nouns + rng.integers(nouns)]
        for _ in range(fillers):  # an adjective anywhere after the subject
            words.insert(int(rng.integers(1, len(words) + 1)), adj0 + rng.integers(adjectives))
        x[i] = words
    return {
        "x": torch.from_numpy(x),
        "y": torch.from_numpy(number.astype(np.int64)),
        "lengths": torch.full((n,), seq_len, dtype=torch.long),
        "attractors": torch.from_numpy(flips.sum(axis=1).astype(np.int64)),
    }


def _meta(attractors, fillers, nouns, adjectives) -> dict:
    """The sidecar: vocabulary layout (nouns singular then plural, prepositions, adjectives, pad) and sizes."""
    prep0, adj0 = 2 * nouns, 2 * nouns + N_PREPS
    pad_id = adj0 + adjectives
    seq_len = 1 + 2 * attractors + fillers
    return {
        "task": "agreement",
        "target": "classify",
        "vocab_size": pad_id + 1,
        "pad_id": pad_id,
        "num_classes": 2,
        "input_dim": 0,
        "seq_len": seq_len,
        "lag": seq_len - 1,
        "attractors": attractors,
        "chance": 0.5,
        "singular_ids": [0, nouns],
        "plural_ids": [nouns, 2 * nouns],
        "prep_ids": [prep0, adj0],
        "adjective_ids": [adj0, pad_id],
        "label_rule": "y = 1 if x[:, 0] is a plural noun (id in [nouns, 2 * nouns)) else 0",
    }
