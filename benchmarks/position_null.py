"""Null distributions of probe.position_similarity's statistics, and the values of ViT checkpoints.

    python benchmarks/position_null.py                          # 2,000 draws per initialisation
    python benchmarks/position_null.py --draws 500 --checkpoints RUN/vit-*.pt

For random position embeddings at the quick profile's geometry (a 4x4 grid of 2x2 patches on 8x8
digits, d_model 64), drawn as ``components/models/vit.py`` initialises ``pos_embedding`` (N(0, 0.02^2))
and as N(0, 1), prints the mean and sd of ``distance_rank_corr`` (Spearman over all 120 patch pairs
of cosine against -grid distance) and of the old ``neighbour_minus_far`` (4 side-by-side minus 2
diagonal pairs of the interior 2x2 patches). Both statistics use cosines, so the two scales give the
same null up to float rounding; both are printed to show it. With ``--checkpoints``, prints each
ViT checkpoint's two statistics (loaded as ``components/probes/common.py``'s ``resolve`` loads
one), each with its own permutation null: the sd over shuffles of that embedding over the cells and
the one-sided p-value (999 shuffles, +1 correction), and its mean cosine at each grid distance.

Needs torch, numpy, scipy and the project's ``components`` package (pydantic; no Prefect, MLflow or
GPU). Seeded (``--seed``): the same arguments print the same figures.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from components.models.vit import ViTConfig  # noqa: E402
from components.probes.common import resolve  # noqa: E402
from components.probes.position_similarity import (  # noqa: E402
    grid_rank_correlation,
    neighbour_vs_far,
    permutation_null,
    permutation_p,
)

GRID = (4, 4)  # 8x8 digits cut into 2x2 patches (four_bottlenecks.yaml's vit: vit-small, patch 2)
D_MODEL = 64


def neighbour_minus_far(emb: np.ndarray, grid: tuple[int, int]) -> float:
    """The old statistic, as the probe computes it (interior patches only, default ``far``)."""
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    near, far = neighbour_vs_far(unit @ unit.T, grid)
    return near - far


def null_figures(std: float, draws: int, seed: int) -> dict[str, tuple[float, float, float]]:
    """Statistic -> (mean, sd, Monte Carlo standard error of the mean) over ``draws`` random embeddings."""
    gen = torch.Generator().manual_seed(seed)
    n = GRID[0] * GRID[1]
    rank, old = np.empty(draws), np.empty(draws)
    for k in range(draws):
        emb = (torch.randn(n, D_MODEL, generator=gen) * std).double().numpy()  # as vit.py: randn * pos_init_std
        rank[k] = grid_rank_correlation(emb, GRID)
        old[k] = neighbour_minus_far(emb, GRID)
    return {
        name: (float(v.mean()), float(v.std(ddof=1)), float(v.std(ddof=1) / math.sqrt(draws)))
        for name, v in (("distance_rank_corr", rank), ("neighbour_minus_far", old))
    }


def old_permutation_null(emb: np.ndarray, grid: tuple[int, int], permutations: int, seed: int) -> np.ndarray:
    """``neighbour_minus_far`` with the embeddings shuffled over the cells (same shuffles as the new null)."""
    rng = np.random.default_rng(seed)
    n = len(emb)
    perms = rng.permuted(np.tile(np.arange(n), (permutations, 1)), axis=1)
    return np.array([neighbour_minus_far(emb[p], grid) for p in perms])


def cosine_by_distance(emb: np.ndarray, grid: tuple[int, int]) -> str:
    """``distance:mean cosine`` of all pairs at each grid distance (the curve the rank correlation reads)."""
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    rc = np.array([(r, c) for r in range(grid[0]) for c in range(grid[1])], dtype=float)
    i, j = np.triu_indices(len(rc), k=1)
    dist = np.round(np.linalg.norm(rc[i] - rc[j], axis=1), 6)
    cos = np.einsum("kd,kd->k", unit[i], unit[j])
    return " ".join(f"{d:.2f}:{cos[dist == d].mean():+.2f}" for d in np.unique(dist))


def checkpoint_rows(paths: list[str], permutations: int, seed: int) -> list[str]:
    rows = []
    for path in paths:
        net, _ = resolve(path)
        pos, grid = getattr(net, "pos_embedding", None), getattr(net, "grid", None)
        if pos is None or grid is None:
            rows.append(f"{path}: {type(net).__name__} has no pos_embedding / grid (not a ViT)")
            continue
        gh, gw = int(grid[0]), int(grid[1])
        emb = pos.detach()[0, -gh * gw :].double().numpy()
        rank, null = permutation_null(emb, (gh, gw), permutations, seed)
        old = neighbour_minus_far(emb, (gh, gw))
        old_null = old_permutation_null(emb, (gh, gw), permutations, seed)
        rows.append(
            f"{path} ({gh}x{gw}, d {emb.shape[1]}): distance_rank_corr {rank:+.3f} "
            f"(null sd {null.std(ddof=1):.3f}, z {rank / null.std(ddof=1):+.1f}, p {permutation_p(rank, null):.3g}); "
            f"neighbour_minus_far {old:+.3f} (null sd {old_null.std(ddof=1):.3f}, "
            f"z {old / old_null.std(ddof=1):+.1f}, p {permutation_p(old, old_null):.3g})"
        )
        rows.append("    mean cosine by grid distance: " + cosine_by_distance(emb, (gh, gw)))
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=2000, help="random embeddings per initialisation (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--permutations", type=int, default=999, help="cell shuffles per checkpoint (default 999)")
    ap.add_argument("--checkpoints", nargs="*", default=[], metavar="PATH", help="ViT checkpoints (train.model's)")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    init_std = ViTConfig().pos_init_std
    print(
        f"geometry: {GRID[0]}x{GRID[1]} grid (2x2 patches of 8x8 digits), d_model {D_MODEL}; "
        f"{args.draws} draws, seed {args.seed}; {GRID[0] * GRID[1] * (GRID[0] * GRID[1] - 1) // 2} pairs for "
        "distance_rank_corr, 4 neighbour + 2 far interior pairs for neighbour_minus_far"
    )
    print(f"{'initialisation':<28} {'statistic':<22} {'mean':>8} {'sd':>7} {'mc se':>7}")
    start = time.perf_counter()
    for label, std in ((f"ViT init N(0, {init_std}^2)", init_std), ("N(0, 1)", 1.0)):
        for name, (mean, sd, se) in null_figures(std, args.draws, args.seed).items():
            print(f"{label:<28} {name:<22} {mean:>+8.4f} {sd:>7.4f} {se:>7.4f}")
    print(f"({time.perf_counter() - start:.1f} s)")
    for row in checkpoint_rows(args.checkpoints, args.permutations, args.seed):
        print(row)


if __name__ == "__main__":
    main()
