"""probe.position_similarity's whole-grid statistic: Spearman of embedding cosine with -grid distance.

The null (no structure) is checked against the permutation null, a planted smooth (row, col) code
must come out strongly positive and significant, an embedding whose similarity grows with distance
negative, and the component must report exactly the free function's value for a real ViT.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from components import Context, get
from components.probes.common import ProbeError, resolve
from components.probes.position_similarity import grid_rank_correlation, permutation_null, permutation_p
from components.train.checkpoint import save_model

GRID = (4, 4)  # the quick profile's geometry: 2x2 patches of 8x8 digits
D = 64


@pytest.fixture(autouse=True)
def one_thread():
    torch.set_num_threads(1)


def _cells(grid=GRID) -> np.ndarray:
    return np.array([(r, c) for r in range(grid[0]) for c in range(grid[1])], dtype=float)


def smooth_code(grid=GRID, d: int = D, noise: float = 0.05, seed: int = 0) -> np.ndarray:
    """sin/cos of row and column at d/4 low frequencies (nearby cells -> similar vectors), plus noise."""
    rc = _cells(grid)
    freqs = np.linspace(0.2, 0.6, d // 4)  # radians per cell: at most 1.8 rad across a 4-cell side
    parts = [f(w * rc[:, k]) for w in freqs for k in (0, 1) for f in (np.sin, np.cos)]
    return np.stack(parts, 1) + noise * np.random.default_rng(seed).normal(size=(len(rc), d))


def anti_code(grid=GRID) -> np.ndarray:
    """Embeddings whose Gram matrix is grid distance + lambda * I: off the diagonal, cosine = distance / lambda."""
    rc = _cells(grid)
    dist = np.linalg.norm(rc[:, None] - rc[None], axis=-1)
    lam = 1e-3 - np.linalg.eigvalsh(dist).min()  # a Euclidean distance matrix has one positive eigenvalue
    vals, vecs = np.linalg.eigh(dist + lam * np.eye(len(rc)))
    return vecs * np.sqrt(np.clip(vals, 0, None))


def test_the_statistic_is_spearman_over_all_pairs_including_the_border():
    emb = np.random.default_rng(5).normal(size=(16, 8))
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    rc = _cells()
    pairs = [(a, b) for a in range(16) for b in range(a + 1, 16)]
    assert len(pairs) == 120  # all pairs of the 4x4 grid, the 12 border cells included
    cos = [unit[a] @ unit[b] for a, b in pairs]
    neg = [-np.hypot(*(rc[a] - rc[b])) for a, b in pairs]
    assert grid_rank_correlation(emb, GRID) == pytest.approx(spearmanr(cos, neg)[0], abs=1e-12)
    assert grid_rank_correlation(3.0 * emb, GRID) == pytest.approx(grid_rank_correlation(emb, GRID), abs=1e-12)
    with pytest.raises(ProbeError, match="16 embeddings"):
        grid_rank_correlation(emb[:15], GRID)


def test_the_permutation_null_shuffles_cells_and_equals_spearman_on_the_shuffled_grid():
    emb = np.random.default_rng(6).normal(size=(16, D))
    observed, null = permutation_null(emb, GRID, permutations=300, seed=11)
    assert observed == grid_rank_correlation(emb, GRID) and null.shape == (300,)
    perms = np.random.default_rng(11).permuted(np.tile(np.arange(16), (300, 1)), axis=1)
    for k in (0, 1, 150, 299):
        assert null[k] == pytest.approx(grid_rank_correlation(emb[perms[k]], GRID), abs=1e-12)
    again = permutation_null(emb, GRID, permutations=300, seed=11)[1]
    assert np.array_equal(null, again)  # seeded
    assert permutation_p(0.5, np.array([0.1, 0.5, 0.7, -0.2])) == pytest.approx(3 / 5)  # (1 + #{>= obs}) / (1 + n)
    assert permutation_p(1.0, np.zeros(999)) == pytest.approx(1 / 1000)


def test_random_embeddings_give_a_null_centred_at_zero_with_the_permutation_nulls_spread():
    rng = np.random.default_rng(2021)
    draws = 1500
    values = np.array([grid_rank_correlation(rng.normal(size=(16, D)), GRID) for _ in range(draws)])
    mean, sd = values.mean(), values.std(ddof=1)
    assert abs(mean) < 3 * sd / np.sqrt(draws)  # within 3 Monte Carlo standard errors of 0 (about 0.0075)
    # the permutation null of one embedding, pooled over 30 embeddings: for exchangeable draws its
    # variance is the statistic's variance (the cells are a random order of i.i.d. vectors)
    null_var = [permutation_null(rng.normal(size=(16, D)), GRID, 999, seed=k)[1].var(ddof=1) for k in range(30)]
    null_sd = float(np.sqrt(np.mean(null_var)))
    assert sd == pytest.approx(null_sd, rel=0.08)  # sd of a sd from 1,500 draws: 1.8 %; of the pooled null: ~1 %
    assert 0.07 < sd < 0.12  # measured 0.094 at this geometry


def test_a_planted_smooth_grid_code_is_strongly_positive_and_significant():
    emb = smooth_code()
    observed, null = permutation_null(emb, GRID, 999, seed=0)
    assert observed > 0.9  # the cosine falls monotonically with distance but for the noise and the row/col split
    assert permutation_p(observed, null) == pytest.approx(1 / 1000)  # no shuffle of the cells does as well
    assert abs(null.mean()) < 0.02


def test_similarity_that_grows_with_distance_gives_a_negative_value():
    emb = anti_code()
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    assert unit[0] @ unit[15] > unit[0] @ unit[1]  # opposite corners more alike than neighbours
    observed, null = permutation_null(emb, GRID, 999, seed=0)
    # cosine is an increasing function of distance: -1 but for rounding, which splits the tied distances' cosines
    assert observed == pytest.approx(-1.0, abs=0.02)
    assert permutation_p(observed, null) == pytest.approx(1.0)
    noisy = emb + 0.05 * np.random.default_rng(0).normal(size=emb.shape)
    assert grid_rank_correlation(noisy, GRID) < -0.8


VIT = {"image_size": 8, "patch": 2, "num_layers": 1}  # vit-small at the quick profile's geometry (d_model 64)


def _pos(net) -> np.ndarray:
    return net.pos_embedding.detach()[0, 1:].double().numpy()


def test_the_component_reports_the_free_functions_value_for_a_vit_at_init(tmp_path):
    ctx = Context(tmp_path)
    s = get("probe.position_similarity")(ctx, model="vit-small", overrides=VIT, seed=3, permutations=199)["summary"]
    net, _ = resolve("vit-small", VIT, seed=3)
    assert net.grid == GRID and net.pos_embedding.shape == (1, 17, D)
    emb = _pos(net)
    observed, null = permutation_null(emb, GRID, 199, seed=3)
    assert s["distance_rank_corr"] == pytest.approx(grid_rank_correlation(emb, GRID), rel=1e-5, abs=1e-6)
    assert s["distance_rank_corr_null_sd"] == pytest.approx(null.std(ddof=1), rel=1e-5)
    assert s["distance_rank_corr_p"] == pytest.approx(permutation_p(observed, null), rel=1e-5)
    assert s["neighbour_minus_far"] == pytest.approx(s["neighbour_cos"] - s["far_cos"], abs=2e-6)  # kept
    assert (s["grid_h"], s["grid_w"]) == GRID
    assert ctx.metrics["probe/position_similarity/distance_rank_corr"]


def test_the_component_finds_a_planted_code_in_a_vit_checkpoint(tmp_path):
    net, _ = resolve("vit-small", VIT, seed=0)
    with torch.no_grad():
        net.pos_embedding[0, 1:] = torch.as_tensor(smooth_code(), dtype=torch.float32)
    ckpt = tmp_path / "vit.pt"
    save_model(ckpt, net, "vit-small", VIT)
    s = get("probe.position_similarity")(Context(tmp_path / "p"), model=str(ckpt))["summary"]
    assert s["distance_rank_corr"] == pytest.approx(grid_rank_correlation(_pos(net), GRID), rel=1e-5)
    assert s["distance_rank_corr"] > 0.9 and s["distance_rank_corr_p"] == pytest.approx(1 / 1000)
