"""The cyclic garbage collector, tuned for nodeflow's processes, whose heaps are mostly long-lived.

Once the worker is up, most of its objects live as long as the process: the imported modules (boto3's
and botocore's service models, the Kubernetes client, pydantic's schemas) and the instance-type catalog
(EC2's description of every type, and the converted types with their offerings). CPython's cyclic
collector walks every tracked object at each full (generation 2) collection, and with its default
thresholds the worker ran one every few seconds while busy: measured on the local stack over the
provisioning and consolidation end-to-end tests, 2.95 of the worker's 13.05 CPU seconds were garbage
collection (0.91 of 11.56 with this module), much of it while importing and loading the catalog, when
nearly nothing allocated is garbage; and each full collection held the GIL (and with it the event loop
and every workflow task) for 0.1 to 0.2 s.

- `tune_collector`, at process start: collect the young generation after GC_THRESHOLDS[0] net
  allocations instead of CPython's 700, and each older one after 20 collections of the one below instead
  of 10. nodeflow's garbage is nearly all freed by reference counting; what waits longer is garbage in
  reference cycles, a few megabytes at most.
- `freeze_long_lived`, once the worker holds its long-lived state: move what is alive into the permanent
  generation, which collections skip (`gc.freeze`). Reference counting still frees a frozen object the
  moment nothing refers to it (a replaced catalog is freed as before); only a reference cycle among
  frozen objects would outlive its last reference, bounded by the heap at that one moment.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger(__name__)

GC_THRESHOLDS = (20_000, 20, 20)


def tune_collector() -> None:
    """Set GC_THRESHOLDS. Call it first thing in the process, before the heavy imports."""
    gc.set_threshold(*GC_THRESHOLDS)


def freeze_long_lived() -> int:
    """Collect once, then freeze every object still alive; returns how many were frozen. Call it once the
    process holds its long-lived state (the worker: after the first catalog load), not per request."""
    started = time.monotonic()
    gc.collect()
    gc.freeze()
    frozen = gc.get_freeze_count()
    log.info("froze %d long-lived objects out of garbage collection in %.2fs", frozen, time.monotonic() - started)
    return frozen
