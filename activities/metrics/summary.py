"""A Prometheus summary with quantiles, for the two metrics Karpenter exports as summaries
(`karpenter_pods_startup_duration_seconds`, `karpenter_nodes_termination_duration_seconds`): Karpenter's
own Grafana dashboards read their `quantile` series (`{quantile="0.9"}`), which prometheus-client's
`Summary` does not have (it exposes `_count` and `_sum` only).

As the Go client's summary does, `_count` and `_sum` cover every observation since the worker started,
and each quantile covers the observations of the last `max_age` seconds (the Go client's default, 10
minutes): a quantile of a window with no observation is NaN. Quantiles are exact over the window (nearest
rank: quantile 0 is the smallest, 1 the largest), computed when scraped. A label set keeps at most
`max_kept` observations of its window, the latest; a burst beyond that is summarized by its latest
`max_kept`. Thread-safe."""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence

from prometheus_client import CollectorRegistry
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

QUANTILES = (0.0, 0.5, 0.9, 0.99, 1.0)  # Karpenter's summary objectives
MAX_AGE_SECONDS = 600.0
MAX_KEPT = 4096


class _Series:
    """One label set's observations, guarded by its summary's `lock` and stamped by its `clock`."""

    def __init__(self, lock: threading.Lock, clock: Callable[[], float], max_kept: int) -> None:
        self._lock = lock
        self._clock = clock
        self.count = 0
        self.total = 0.0
        self.window: deque[tuple[float, float]] = deque(maxlen=max_kept)

    def observe(self, value: float) -> None:
        with self._lock:
            self.count += 1
            self.total += value
            self.window.append((self._clock(), value))


class WindowedSummary(Collector):
    """A summary named `name` with `labelnames`, registered on `registry`; `.labels(...).observe(v)`, or
    `.observe(v)` when it has no labels, as prometheus-client's metrics are used."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str] = (),
        registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        max_age: float = MAX_AGE_SECONDS,
        max_kept: int = MAX_KEPT,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self._clock = clock
        self._max_age = max_age
        self._max_kept = max_kept
        self._lock = threading.Lock()
        self._series: dict[tuple[str, ...], _Series] = {}
        if registry is not None:
            registry.register(self)

    def labels(self, **values: str) -> _Series:
        if set(values) != set(self.labelnames):
            raise ValueError(f"{self.name}: labels {sorted(values)} are not {sorted(self.labelnames)}")
        key = tuple(str(values[name]) for name in self.labelnames)
        with self._lock:
            series = self._series.get(key)
            if series is None:
                series = self._series[key] = _Series(self._lock, self._clock, self._max_kept)
            return series

    def observe(self, value: float) -> None:
        """Observe on the summary without labels."""
        if self.labelnames:
            raise ValueError(f"{self.name} has labels {list(self.labelnames)}: use .labels(...).observe()")
        self.labels().observe(value)

    def describe(self) -> list[Metric]:
        return [Metric(self.name, self.documentation, "summary")]

    def collect(self) -> Iterable[Metric]:
        family = Metric(self.name, self.documentation, "summary")
        oldest = self._clock() - self._max_age
        with self._lock:
            snapshot = []
            for key, series in self._series.items():
                while series.window and series.window[0][0] < oldest:
                    series.window.popleft()
                snapshot.append((key, series.count, series.total, sorted(v for _, v in series.window)))
        for key, count, total, values in snapshot:
            labels = dict(zip(self.labelnames, key, strict=True))
            for q in QUANTILES:
                family.add_sample(self.name, {**labels, "quantile": _format(q)}, quantile(values, q))
            family.add_sample(f"{self.name}_count", labels, float(count))
            family.add_sample(f"{self.name}_sum", labels, total)
        yield family


def quantile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank `q` quantile of these values, in ascending order; NaN for none."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _format(q: float) -> str:
    """A quantile as the Go client writes it (`0`, `0.5`, `1`)."""
    return f"{q:g}"
