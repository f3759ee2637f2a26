"""One botocore data loader for every boto3 session of this process (local stack only).

botocore caches the service models it reads (EC2's is several megabytes of JSON) per loader, and every
session makes its own loader. moto opens a new session for each region list it builds at import and per
account backend, and the seed's and kubelet's clients one each, so a services process parsed EC2's model
several times: about a second of CPU per stack start. Sharing the loader reads each file
once per process.

What a loader returns is what a session would have read from the same files; sessions that ask for a
different data path (``AWS_DATA_PATH``) still get a loader of their own.
"""

from __future__ import annotations

import threading
from typing import Any

import botocore.loaders
import botocore.session

_original = botocore.loaders.create_loader
_loaders: dict[str | None, Any] = {}
_lock = threading.Lock()


def shared_loader(search_path_string: str | None = None) -> Any:
    """``botocore.loaders.create_loader``, returning one loader per data path for the process."""
    with _lock:
        loader = _loaders.get(search_path_string)
        if loader is None:
            loader = _loaders[search_path_string] = _original(search_path_string)
        return loader


def install() -> None:
    """Make new botocore sessions use the shared loaders. Call it before moto is imported: moto builds its
    region lists with new sessions at import time. (moto's response serializer reads models through a
    loader of its own, with its extra files, once per service; that one is left alone.) Idempotent."""
    botocore.loaders.create_loader = shared_loader
    botocore.session.create_loader = shared_loader  # type: ignore[attr-defined]
