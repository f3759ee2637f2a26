"""`NodeDirectory`: which Node carries each providerID, as the worker's Node watch last saw it, so finding a
claim's Node costs a lookup rather than a LIST of every Node.

Registration used to LIST all Nodes for each claim it looked for (about twice per claim: once right after
the launch, once when the Node appeared): O(N) per claim and O(N^2) for a burst, 870 MB of JSON for 500
one-pod nodes. Karpenter finds a claim's Node through its informer cache, indexed by providerID; this is
the same index, fed by the leader's Node watch (workers.watchers.DeletionWatcher).

The directory is `complete` once the watch has listed every Node and until the watch stops (a worker
that is not the leader runs no watch: its directory is never complete, and registration LISTs as before).
While complete, a providerID it does not hold has no Node yet: if one registers, the watch adds it and
signals the claim (`node_changed`), and registration looks again. Thread-safe; no I/O."""

from __future__ import annotations

import threading


class NodeDirectory:
    """providerID -> (Node name, Node uid); see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, tuple[str, str]] = {}
        self._complete = False

    def put(self, provider_id: str, name: str, uid: str) -> None:
        with self._lock:
            self._nodes[provider_id] = (name, uid)

    def drop(self, provider_id: str, name: str) -> None:
        """The Node `name` with `provider_id` is gone (another Node since given the providerID stays)."""
        with self._lock:
            if self._nodes.get(provider_id, (name, ""))[0] == name:
                self._nodes.pop(provider_id, None)

    def mark_complete(self) -> None:
        """The watch listed every Node: a providerID not held has no Node."""
        with self._lock:
            self._complete = True

    def reset(self) -> None:
        """The watch stopped: forget everything, and be incomplete until a watch lists every Node again."""
        with self._lock:
            self._nodes.clear()
            self._complete = False

    def find(self, provider_id: str) -> tuple[bool, tuple[str, str] | None]:
        """(complete, the (name, uid) of the Node with `provider_id` or None)."""
        with self._lock:
            return self._complete, self._nodes.get(provider_id)
