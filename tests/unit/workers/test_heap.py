"""workers.heap: the collector's thresholds and the freeze of the long-lived heap."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from workers.heap import GC_THRESHOLDS, freeze_long_lived, tune_collector


@pytest.fixture
def collector_state() -> Iterator[None]:
    """Leave the test process's collector as it was."""
    thresholds = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    yield
    gc.set_threshold(*thresholds)
    if frozen_before == 0:
        gc.unfreeze()


def test_tune_collector_sets_the_thresholds(collector_state: None) -> None:
    gc.set_threshold(700, 10, 10)
    tune_collector()
    assert gc.get_threshold() == GC_THRESHOLDS


def test_freeze_long_lived_takes_live_objects_out_of_collection_and_frees_garbage_cycles_first(
    collector_state: None,
) -> None:
    class Node:
        other: Node | None = None

    garbage = Node()
    garbage.other = garbage  # a cycle only the collector frees
    collected: list[bool] = []
    gc.callbacks.append(lambda phase, info: collected.append(True) if phase == "stop" else None)
    try:
        del garbage
        kept = [Node() for _ in range(100)]
        frozen = freeze_long_lived()
    finally:
        gc.callbacks.pop()
    assert collected, "a collection ran before the freeze"
    assert frozen >= len(kept)
    assert all(o is not kept[0] for o in gc.get_objects()), "frozen objects are in no generation the collector walks"
