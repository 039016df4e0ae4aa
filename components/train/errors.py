"""The trainer's one error type, in a module of its own: the model and optimiser modules raise it on
a host with torch alone (``benchmarks/gpu.py``), where the config's pydantic is absent."""


class TrainError(ValueError):
    """Training or checkpoint input that cannot be used as given."""
