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


@component(
    "probe.position_similarity",
    outputs=["summary", "plot"],
    bottleneck="B4",
    logged_before=["neighbour_cos", "neighbour_minus_far"],
)
def position_similarity(
    ctx: Context,
    *,
    model: str,
    overrides: dict[str, Any] | None = None,
    far: Count = 0,  # Manhattan distance of "far" pairs; 0 picks half the interior span
    seed: Count = 0,
) -> dict:
    """Cosine similarity between a ViT's position embeddings, drawn per patch on the patch grid.

    Args:
        model: a ViT checkpoint (or variant name, to see the random init).

    Returns:
        ``summary``: ``neighbour_cos``, ``far_cos``, ``neighbour_minus_far``; ``plot``: one map per
        patch of its similarity to every other patch.
    """
    net, _ = P.resolve(model, overrides, seed)
    pos = getattr(net, "pos_embedding", None)
    grid = getattr(net, "grid", None)
    if pos is None or grid is None:
        raise P.ProbeError(f"{type(net).__name__} has no pos_embedding / grid: position similarity needs a ViT")
    gh, gw = int(grid[0]), int(grid[1])
    emb = pos.detach()[0, -gh * gw :]  # (N, d): drop the class token
    emb = torch.nn.functional.normalize(emb, dim=-1)
    sim = (emb @ emb.T).numpy()  # (N, N)
    near, far_cos = neighbour_vs_far(sim, (gh, gw), far)
    summary = P.flat(
        {"neighbour_cos": near, "far_cos": far_cos, "neighbour_minus_far": near - far_cos, "grid_h": gh, "grid_w": gw}
    )
    P.log_summary(ctx, summary)
    plt = P.pyplot()
    fig, axes = plt.subplots(gh, gw, figsize=(1.2 * gw + 1, 1.2 * gh), squeeze=False)
    for i in range(gh * gw):
        ax = axes[i // gw][i % gw]
        im = ax.imshow(sim[i].reshape(gh, gw), cmap="viridis", vmin=-1, vmax=1)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.colorbar(im, ax=axes, shrink=0.6)
    fig.suptitle(f"position embedding similarity (neighbour - far = {summary['neighbour_minus_far']})", fontsize=9)
    path = ctx.path("position_similarity.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    ctx.log_artifact(path)
    return {"summary": summary, "plot": str(path)}
