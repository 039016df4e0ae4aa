"""A component context that keeps every progress handle it gave out (the live view and Prefect's
progress artifact read the same handles), so a test can say what a long step reported."""

from contextlib import contextmanager

from components import Context
from components.context import Progress


class RecordingContext(Context):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.handles: list[Progress] = []

    @contextmanager
    def progress(self, total=None, description=""):
        bar = Progress(total, description)
        self.handles.append(bar)
        yield bar
