"""The one error type data prep raises for bad input."""


class DataError(ValueError):
    """Bad or missing input data; the message names the file and the fix."""
