"""Components: data prep (translation corpora, images, synthetic probe tasks) and their loaders."""
from components.data import (  # noqa: F401
    adding, agreement, digits, documents, lookup, mnist, patches, recall, spell, strips, synthetic_translation,
    variable_length, wmt,
)
