"""Components: data prep (translation corpora, images, synthetic probe tasks) and their loaders."""
from components.data import adding, agreement, lookup, recall, variable_length  # noqa: F401
