"""The RNN papers' initialisation (Bahdanau et al. 2015, appendix B.1; Cho et al. 2014).

"We initialized the recurrent weight matrices as random orthogonal matrices. For W_a and U_a, we
initialized them by sampling each element from the Gaussian distribution of mean 0 and variance
0.001^2. All the elements of V_a and all the bias vectors were initialized to zero. Any other weight
matrix was initialized by sampling from the Gaussian distribution of mean 0 and variance 0.01^2."

A recurrent matrix here is a ``weight_hh`` of a PyTorch RNN, GRU or LSTM (cell or layer): it stacks
one H x H matrix per gate, and each block is made orthogonal on its own, as the paper's U, U_z, U_r
are separate matrices. Embedding tables are weight matrices too (N(0, 0.01^2)); their padding rows
are set back to zero, as ``nn.Embedding(padding_idx=...)`` keeps them.
"""

from __future__ import annotations

import torch
from torch import nn

from components.models.registry import ModelError, check_choice

INITS = {"pytorch", "paper"}
WEIGHT_STD = 0.01  # "any other weight matrix"
SCORE_STD = 0.001  # the attention's W_a and U_a


def orthogonal_blocks(weight: torch.Tensor, hidden: int, generator: torch.Generator | None = None) -> None:
    """Fill a (G*H, H) recurrent weight with G independent random orthogonal H x H blocks, in place."""
    if weight.dim() != 2 or weight.shape[1] != hidden or weight.shape[0] % hidden:
        raise ModelError(f"a recurrent weight must be (G*{hidden}, {hidden}), got {tuple(weight.shape)}")
    with torch.no_grad():
        for block in weight.split(hidden, 0):
            q, r = torch.linalg.qr(torch.randn(hidden, hidden, generator=generator, dtype=torch.float64))
            q = q * torch.sign(torch.diagonal(r))  # Haar-distributed (Mezzadri 2007), not biased by the QR sign
            block.copy_(q.to(block.dtype))


def paper_init(model: nn.Module, scores: tuple[str, ...] = (), zero: tuple[str, ...] = ()) -> dict[str, str]:
    """Initialise ``model`` as Bahdanau 2015 B.1 does; return parameter name -> rule applied (for tests and logs).

    Args:
        scores: parameter names of the attention's W_a and U_a (N(0, 0.001^2)).
        zero: weight names set to zero besides every bias (the attention's v_a).
    """
    rules: dict[str, str] = {}
    with torch.no_grad():
        for name, p in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if name in zero or leaf.startswith("bias"):
                p.zero_()
                rules[name] = "zero"
            elif leaf.startswith("weight_hh"):
                orthogonal_blocks(p, p.shape[1])
                rules[name] = "orthogonal"
            elif name in scores:
                p.normal_(0.0, SCORE_STD)
                rules[name] = f"normal({SCORE_STD})"
            else:
                p.normal_(0.0, WEIGHT_STD)
                rules[name] = f"normal({WEIGHT_STD})"
        for module in model.modules():
            if isinstance(module, nn.Embedding) and module.padding_idx is not None:
                module.weight[module.padding_idx].zero_()
    missing = set(scores) | set(zero)
    missing -= set(rules)
    if missing:
        raise ModelError(f"paper_init: no parameters named {sorted(missing)}")
    return rules


def check_init(init: str) -> None:
    check_choice("init", init, INITS)
