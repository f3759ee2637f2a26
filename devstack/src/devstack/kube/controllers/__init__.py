"""Controllers that run inside the emulator, as kube-controller-manager would beside a real API server.

``ControllerManager(store).start()`` runs them as tasks on the current event loop.
"""

from __future__ import annotations

import asyncio
import contextlib

from devstack.kube.catalog import ServedResource
from devstack.kube.controllers.base import Controller
from devstack.kube.controllers.deployment import DeploymentController
from devstack.kube.controllers.disruption import DisruptionController
from devstack.kube.controllers.garbage import GarbageCollector
from devstack.kube.controllers.namespace import NamespaceController
from devstack.kube.controllers.podgc import PodGarbageCollector
from devstack.kube.controllers.replicaset import ReplicaSetController
from devstack.kube.store import ObjectStore, WatchEvent

__all__ = ["Controller", "ControllerManager"]


class ControllerManager:
    """Owns the controllers: feeds them store events and runs their loops."""

    def __init__(self, store: ObjectStore) -> None:
        self.controllers: list[Controller] = [
            DeploymentController(store),
            ReplicaSetController(store),
            GarbageCollector(store),
            PodGarbageCollector(store),
            DisruptionController(store),
            NamespaceController(store),
        ]
        self._tasks: list[asyncio.Task[None]] = []
        self._store = store
        self._listening = False

    def _dispatch(self, res: ServedResource, event: WatchEvent) -> None:
        for controller in self.controllers:
            controller.on_event(res, event)

    def start(self) -> None:
        """Start every controller loop on the running event loop."""
        if not self._listening:
            self._store.add_listener(self._dispatch)
            self._listening = True
        self._tasks = [asyncio.create_task(c.run(), name=f"controller-{c.name}") for c in self.controllers]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []
