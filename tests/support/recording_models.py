"""Model factories that record the keyword arguments ``train.model`` calls them with
(``model: tests.support.recording_models:record``), for the factory contract in docs/contracts.md."""

from torch import nn

CALLS: list[dict] = []  # the keyword arguments of each call, in order


class Stub(nn.Module):
    """One weight: enough for an optimiser; the contract test builds, it does not train."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(nn.init.zeros_(nn.Linear(1, 1).weight))


def record(**kwargs) -> nn.Module:
    """A factory that takes ``**kwargs``: it receives every value the data decides."""
    CALLS.append(kwargs)
    return Stub()


def declared(vocab_size: int | None = None, num_classes: int | None = None, hidden: int | None = None) -> nn.Module:
    """A factory that declares its keywords: it receives only those (None: not given)."""
    given = {"vocab_size": vocab_size, "num_classes": num_classes, "hidden": hidden}
    CALLS.append({k: v for k, v in given.items() if v is not None})
    return Stub()
