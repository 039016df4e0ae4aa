"""probe.position_similarity (ViT): do learned position embeddings recover the 2D patch grid?"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from components import Context, component
from components.bounds import Count
from components.probes import common as P


def neighbour_vs_far(sim: np.ndarray, grid: tuple[int, int], far: int = 0) -> tuple[float, float]:
    """Return mean cosine of 4-neighbour pairs and of far pairs, interior patches only.

    Border patches are left out: they are blank in most digit images, so their embeddings end up
    alike and would inflate the far group. Far pairs are at Manhattan distance >= ``far`` (0: half
    the largest interior distance, at least 2).
    """
    gh, gw = grid
    interior = [(r, c) for r in range(1, gh - 1) for c in range(1, gw - 1)]
    if len(interior) < 2:
        raise P.ProbeError(f"a {gh}x{gw} patch grid has fewer than 2 interior patches; use smaller patches")
    dist = lambda a, b: abs(a[0] - b[0]) + abs(a[1] - b[1])  # noqa: E731
    max_d = max(dist(a, b) for a in interior for b in interior)
    far = far or max(2, (max_d + 1) // 2)
    near_s, far_s = [], []
    for i, a in enumerate(interior):
        for b in interior[i + 1 :]:
            s = sim[a[0] * gw + a[1], b[0] * gw + b[1]]
            d = dist(a, b)
            if d == 1:
                near_s.append(s)
            elif d >= far:
                far_s.append(s)
    return float(np.mean(near_s)), float(np.mean(far_s)) if far_s else float("nan")


def _cosine(emb: np.ndarray) -> np.ndarray:
    """Cosine similarity matrix (N, N) of the rows of ``emb`` (N, d)."""
    emb = np.asarray(emb, dtype=np.float64)
    unit = emb / np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T


def _grid_pairs(grid: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, -distance)`` over all pairs i < j of a row-major grid; distance is Euclidean in cells."""
    gh, gw = int(grid[0]), int(grid[1])
    rc = np.array([(r, c) for r in range(gh) for c in range(gw)], dtype=np.float64)
    i, j = np.triu_indices(gh * gw, k=1)
    return i, j, -np.linalg.norm(rc[i] - rc[j], axis=1)


def _check_grid(emb: np.ndarray, grid: tuple[int, int]) -> None:
    gh, gw = int(grid[0]), int(grid[1])
    if emb.ndim != 2 or emb.shape[0] != gh * gw:
        raise P.ProbeError(f"expected {gh * gw} embeddings (N, d) for a {gh}x{gw} grid, got shape {emb.shape}")
    if gh * gw < 3:
        raise P.ProbeError(f"a {gh}x{gw} patch grid has fewer than 3 patches: no rank correlation over pairs")


def grid_rank_correlation(emb: np.ndarray, grid: tuple[int, int]) -> float:
    """Spearman correlation, over all patch pairs i < j, of cosine(emb_i, emb_j) with -grid distance.

    ``emb`` is (gh * gw, d) in row-major patch order. Positive when nearby patches have more similar
    embeddings (the whole-grid reading of Dosovitskiy et al. 2021, Fig. 7); about 0 without structure.
    """
    from scipy.stats import spearmanr

    emb = np.asarray(emb, dtype=np.float64)
    _check_grid(emb, grid)
    i, j, neg_dist = _grid_pairs(grid)
    return float(spearmanr(_cosine(emb)[i, j], neg_dist)[0])


def permutation_null(
    emb: np.ndarray, grid: tuple[int, int], permutations: int = 999, seed: int = 0
) -> tuple[float, np.ndarray]:
    """``(observed, null)``: ``grid_rank_correlation`` and its ``permutations`` values with the cells shuffled.

    A Mantel test: the pairs share patches and are not independent, so the null permutes which
    embedding sits at which grid cell (a seeded ``numpy`` Generator) rather than the pairs. A cell
    permutation only reorders the pairs' similarities, so their ranks are computed once and each
    shuffle is a Pearson correlation of reordered ranks (equal to ``spearmanr`` on the shuffled grid).
    """
    from scipy.stats import rankdata

    emb = np.asarray(emb, dtype=np.float64)
    _check_grid(emb, grid)
    i, j, neg_dist = _grid_pairs(grid)
    n = len(emb)
    sim_rank = rankdata(_cosine(emb)[i, j])
    sim_rank -= sim_rank.mean()
    dist_rank = rankdata(neg_dist)
    dist_rank -= dist_rank.mean()
    scale = np.sqrt((sim_rank**2).sum() * (dist_rank**2).sum())
    pair = np.zeros((n, n), dtype=np.int64)  # cells (a, b) -> index of the pair {a, b}
    pair[i, j] = pair[j, i] = np.arange(len(i))
    rng = np.random.default_rng(seed)
    null = np.empty(permutations)
    for start in range(0, permutations, 256):  # chunks bound memory on large grids
        k = min(256, permutations - start)
        perms = rng.permuted(np.tile(np.arange(n), (k, 1)), axis=1)
        null[start : start + k] = sim_rank[pair[perms[:, i], perms[:, j]]] @ dist_rank / scale
    return grid_rank_correlation(emb, grid), null


def permutation_p(observed: float, null: np.ndarray) -> float:
    """One-sided (greater) permutation p-value with the +1 correction: (1 + #{null >= obs}) / (1 + n)."""
    null = np.asarray(null)
    return float((1 + np.sum(null >= observed - 1e-12)) / (1 + len(null)))


@component(
    "probe.position_similarity",
    outputs=["summary", "plot"],
    bottleneck="B4",
    logged_before=["neighbour_cos", "neighbour_minus_far"],
    summary=[
        "distance_rank_corr",
        "distance_rank_corr_null_sd",
        "distance_rank_corr_p",
        "neighbour_cos",
        "far_cos",
        "neighbour_minus_far",
        "grid_h",
        "grid_w",
        "converged",  # the training behind the checkpoint (probes/common.py trainings)
        "late_gain",
    ],
)
def position_similarity(
    ctx: Context,
    *,
    model: str,
    overrides: dict[str, Any] | None = None,
    far: Count = 0,  # Manhattan distance of "far" pairs; 0 picks half the interior span
    seed: Count = 0,
    permutations: Count = 999,  # cell shuffles for distance_rank_corr's null (seeded by ``seed``)
) -> dict:
    """Cosine similarity between a ViT's position embeddings, drawn per patch on the patch grid.

    Args:
        model: a ViT checkpoint (or variant name, to see the random init).

    Returns:
        ``summary``: ``distance_rank_corr``, the Spearman correlation over all patch pairs of the
        grid between embedding cosine and negative grid distance (0 without structure), with
        ``distance_rank_corr_null_sd`` and the one-sided ``distance_rank_corr_p`` from
        ``permutations`` shuffles of this embedding over the grid cells; ``neighbour_cos``,
        ``far_cos``, ``neighbour_minus_far`` (interior 2x2 patches only, kept for reference);
        ``grid_h``, ``grid_w``. ``plot``: one map per patch of its similarity to every other patch.
    """
    net, _ = P.resolve(model, overrides, seed)
    pos = getattr(net, "pos_embedding", None)
    grid = getattr(net, "grid", None)
    if pos is None or grid is None:
        raise P.ProbeError(f"{type(net).__name__} has no pos_embedding / grid: position similarity needs a ViT")
    gh, gw = int(grid[0]), int(grid[1])
    raw = pos.detach()[0, -gh * gw :]  # (N, d): drop the class token
    emb = torch.nn.functional.normalize(raw, dim=-1)
    sim = (emb @ emb.T).numpy()  # (N, N)
    near, far_cos = neighbour_vs_far(sim, (gh, gw), far)
    rank_corr, null = permutation_null(raw.double().numpy(), (gh, gw), permutations, seed)
    summary = P.flat(
        {
            "distance_rank_corr": rank_corr,
            "distance_rank_corr_null_sd": float(np.std(null, ddof=1)) if len(null) > 1 else float("nan"),
            "distance_rank_corr_p": permutation_p(rank_corr, null) if len(null) else float("nan"),
            "neighbour_cos": near,
            "far_cos": far_cos,
            "neighbour_minus_far": near - far_cos,
            "grid_h": gh,
            "grid_w": gw,
        }
    )
    P.log_summary(ctx, summary)
    summary |= P.trainings(model)  # for the scorecard, not a metric
    plt = P.pyplot()
    fig, axes = plt.subplots(gh, gw, figsize=(1.2 * gw + 1, 1.2 * gh), squeeze=False)
    for i in range(gh * gw):
        ax = axes[i // gw][i % gw]
        im = ax.imshow(sim[i].reshape(gh, gw), cmap="viridis", vmin=-1, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes, shrink=0.6)
    fig.suptitle(
        "position embedding similarity\n"
        f"all pairs: rank corr. with -distance = {summary['distance_rank_corr']} "
        f"(p = {summary['distance_rank_corr_p']})\n"
        f"interior only: neighbour - far = {summary['neighbour_minus_far']}",
        fontsize=8,
    )
    path = ctx.path("position_similarity.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    ctx.log_artifact(path)
    return {"summary": summary, "plot": str(path)}
