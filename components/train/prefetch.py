"""Collate the next batches on a background thread while the model computes on this one."""

from __future__ import annotations

import queue
import threading
from typing import Callable

import torch


def _pin(batch: dict) -> dict:
    return {k: v.pin_memory() if isinstance(v, torch.Tensor) else v for k, v in batch.items()}


class Prefetcher:
    """Iterate ``batches(i)`` for i = start, start + 1, ...; ``depth`` batches are made ahead.

    ``batches`` must be a pure function of the index (the trainer's are: the batch at a step depends
    only on (seed, step)), so prefetching changes no batch. With ``pin`` the tensors land in pinned
    memory so ``.to(device, non_blocking=True)`` overlaps the copy with compute. ``depth=0`` makes
    each batch on demand, on the calling thread.
    """

    def __init__(self, batches: Callable[[int], dict], start: int, depth: int = 2, pin: bool = False):
        self.batches, self.next_index, self.depth, self.pin = batches, start, depth, pin
        self._queue: queue.Queue = queue.Queue(maxsize=max(depth, 1))
        self._stop = threading.Event()
        self._thread = None
        if depth > 0:
            self._thread = threading.Thread(target=self._fill, name="batch-prefetch", daemon=True)
            self._thread.start()

    def _make(self, i: int) -> dict:
        batch = self.batches(i)
        return _pin(batch) if self.pin else batch

    def _fill(self) -> None:
        i = self.next_index
        while not self._stop.is_set():
            try:
                item = (self._make(i), None)
            except BaseException as e:  # re-raised on the training thread, where it can be reported
                item = (None, e)
            while not self._stop.is_set():
                try:
                    self._queue.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if item[1] is not None:
                return
            i += 1

    def __next__(self) -> dict:
        if self._thread is None:
            batch = self._make(self.next_index)
        else:
            batch, error = self._queue.get()
            if error is not None:
                raise error
        self.next_index += 1
        return batch

    def close(self) -> None:
        """Stop the background thread (it may be blocked on a full queue)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
