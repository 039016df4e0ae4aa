"""Task kinds: how to batch a data folder, call a model on a batch, score and evaluate its output.

Each kind is one class, registered by name (``registry``); ``Task(path, device)`` opens a folder as
the kind its meta.json chooses. Where things are: ``base`` the ``Task`` every kind extends (the
tensor-folder defaults); ``sequence`` classify, tag, regress and generate; ``images`` classify and
digit strips (images-to-sequence); ``translation`` with its batches in ``translation_batches``.
Adding a kind is one subclass of ``Task`` (or of a family) decorated with ``@register``.
"""

from components.train.tasks import images, sequence, translation  # noqa: F401  (each registers its kinds)
from components.train.tasks.base import Task
from components.train.tasks.images import shift_images
from components.train.tasks.registry import KINDS, choose, lookup, register
from components.train.tasks.translation_batches import (
    TranslationBatches,
    collate_rows,
    collate_translation,
    merge_translation,
)

__all__ = [
    "KINDS",
    "Task",
    "TranslationBatches",
    "choose",
    "collate_rows",
    "collate_translation",
    "lookup",
    "merge_translation",
    "register",
    "shift_images",
]
