"""The papers' optimisers: Adadelta with Bahdanau's rho and eps, Adam with Vaswani's eps."""

import pytest
import torch

from components.train.build import TrainError
from components.train.optim import make_optimizer


def _net():
    torch.manual_seed(0)
    return torch.nn.Linear(3, 2)


def test_adadelta_takes_the_papers_rho_and_eps_by_default():
    opt = make_optimizer(_net(), "adadelta", 1.0, 0.0, (0.9, 0.999), 0.0)
    assert isinstance(opt, torch.optim.Adadelta)
    group = opt.param_groups[0]
    assert (group["lr"], group["rho"], group["eps"]) == (1.0, 0.95, 1e-6)


def test_adam_eps_is_pytorchs_unless_set_and_vaswanis_when_set():
    assert make_optimizer(_net(), "adam", 1e-3, 0.0, (0.9, 0.98), 0.0).param_groups[0]["eps"] == 1e-8
    group = make_optimizer(_net(), "adam", 1e-3, 0.0, (0.9, 0.98), 0.0, eps=1e-9).param_groups[0]
    assert (group["eps"], group["betas"]) == (1e-9, (0.9, 0.98))


def test_adadelta_updates_follow_zeiler_2012():
    """One step by hand: E[g^2] = (1-rho) g^2, dx = -sqrt(eps) / sqrt(E[g^2] + eps) * g."""
    net = _net()
    opt = make_optimizer(net, "adadelta", 1.0, 0.0, (0.9, 0.999), 0.0)
    w0 = net.weight.detach().clone()
    net(torch.ones(1, 3)).sum().backward()
    g = net.weight.grad.clone()
    opt.step()
    eg2 = 0.05 * g**2
    expected = w0 - (1e-6) ** 0.5 / torch.sqrt(eg2 + 1e-6) * g
    assert torch.allclose(net.weight.detach(), expected, atol=1e-7)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"name": "adagrad"}, "unknown optimizer 'adagrad'; use one of 'adam', 'adamw', 'sgd', 'adadelta'"),
        ({"name": "adam", "eps": 0.0}, "eps must be > 0"),
        ({"name": "adadelta", "rho": 1.0}, r"rho must be in \[0, 1\)"),
    ],
)
def test_bad_optimizer_settings_say_what_is_wrong(kw, match):
    name = kw.pop("name")
    with pytest.raises(TrainError, match=match):
        make_optimizer(_net(), name, 1.0, 0.0, (0.9, 0.999), 0.0, **kw)
