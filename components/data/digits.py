"""scikit-learn's bundled 8x8 digits: the image set that needs no download."""

from __future__ import annotations

from components.bounds import Count, Fraction
from components.data.errors import DataError
from components.data.image_sets import carve, write_images
from components.registry import component


@component("data.digits", outputs=["dataset"], bottleneck="B4")
def digits(ctx, *, valid_fraction: Fraction = 0.1, test_fraction: Fraction = 0.2, seed: Count = 0) -> dict:
    """Load the 1,797 8x8 digits shipped with scikit-learn, normalise and split them.

    Args:
        valid_fraction, test_fraction: shares of the images for valid and test.
        seed: split seed.

    Returns:
        ``dataset``: folder with ``x (N, 1, 8, 8)`` standardised, ``y (N,)``, and ``meta.json``.
    """
    from sklearn.datasets import load_digits

    if valid_fraction < 0 or test_fraction < 0 or valid_fraction + test_fraction >= 1:
        raise DataError(f"valid_fraction + test_fraction must be in [0, 1), got {valid_fraction} + {test_fraction}")
    data = load_digits()
    x = data.images  # (1797, 8, 8), values 0..16
    splits = carve(x, data.target, {"valid": valid_fraction, "test": test_fraction}, seed)
    folder = write_images(
        ctx,
        splits,
        scale=16.0,
        meta={"source": "sklearn.datasets.load_digits", "seed": seed, "label_rule": "y = the digit drawn"},
    )
    return {"dataset": str(folder)}
