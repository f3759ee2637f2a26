"""Local TCP ports: is one free, pick a free one, wait until one answers."""

from __future__ import annotations

import fcntl
import json
import os
import random
import socket
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

HOST = "127.0.0.1"
PICK_RANGE_LOW = 20000
# Every pick is recorded here, under an exclusive lock, and no process of this user picks a port again
# for RESERVE_SECONDS: long enough for the server it was picked for to bind it.
PICKS_FILE = Path(tempfile.gettempdir()) / f"nodeflow-devstack-ports-{os.getuid()}.json"
RESERVE_SECONDS = 120.0


class PortInUseError(RuntimeError):
    """A port asked for on the command line is already taken by another process."""


def check_free(port: int, flag: str, host: str = HOST) -> None:
    """Raise PortInUseError naming `flag` when something already listens on host:port.

    SO_REUSEADDR makes a port held only by TIME_WAIT sockets of an earlier run count as free, as it
    is for the servers themselves."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise PortInUseError(
                f"port {port} ({flag}) is already in use on {host}: stop the process holding it "
                f"(`ss -ltnp 'sport = :{port}'`) or pass {flag} with another port (0 picks a free one)"
            ) from exc


def _ephemeral_low(default: int = 32768) -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return default


def free_port(host: str = HOST) -> int:
    """A port free right now, for a server we start ourselves a moment later.

    Picked below the kernel's ephemeral range when possible: ports in that range are handed out to
    every outgoing connection (the stack makes many on loopback), so one picked there is often taken
    by a client socket before the server binds it. A port another process of this user picked in the
    last RESERVE_SECONDS is not picked again (PICKS_FILE): stacks started side by side, as the test
    suite's workers start them, would otherwise pick the same port before either server binds it. A
    process that picks ports some other way can still take it first; callers retry on failure."""
    with _recent_picks() as picked:
        port = _pick(host, avoid=picked.keys())
        picked[port] = time.time()
    return port


def _pick(host: str, avoid: Iterable[int]) -> int:
    low, high = PICK_RANGE_LOW, min(_ephemeral_low(), 65536)
    taken = set(avoid)
    if high - low >= 1000:
        rng = random.Random()
        for _ in range(50):
            port = rng.randrange(low, high)
            if port in taken:
                continue
            try:
                check_free(port, "port", host)
            except PortInUseError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        picked: int = sock.getsockname()[1]
        return picked


@contextmanager
def _recent_picks() -> Iterator[dict[int, float]]:
    """The ports picked in the last RESERVE_SECONDS (port -> time), held under an exclusive lock on
    PICKS_FILE until the block ends, then written back. An unreadable file counts as no picks; one that
    cannot be opened leaves the picks unshared."""
    with ExitStack() as held:
        try:
            handle = held.enter_context(open(PICKS_FILE, "a+", encoding="utf-8"))
        except OSError:
            yield {}
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        now = time.time()
        try:
            recorded = {int(port): float(at) for port, at in json.loads(handle.read() or "{}").items()}
        except (ValueError, TypeError, AttributeError):
            recorded = {}
        picks = {port: at for port, at in recorded.items() if 0 <= now - at < RESERVE_SECONDS}
        yield picks
        handle.seek(0)
        handle.truncate()
        handle.write(json.dumps(picks))


def resolve(port: int, flag: str, host: str = HOST) -> int:
    """`port` checked to be free, or a free port when it is 0."""
    if port == 0:
        return free_port(host)
    if not 0 < port < 65536:
        raise ValueError(f"{flag} {port} is not a TCP port: use 1-65535, or 0 for a free one")
    check_free(port, flag, host)
    return port


def http_ok(url: str, timeout: float = 1.0) -> bool:
    """True when GET `url` answers 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def wait_for(
    ready: Callable[[], bool],
    what: str,
    timeout: float,
    alive: Callable[[], bool] = lambda: True,
    interval: float = 0.1,
) -> None:
    """Poll `ready` until it returns True. Raises TimeoutError after `timeout` seconds, and
    RuntimeError as soon as `alive` returns False (the process we wait for has died)."""
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        if not alive():
            raise RuntimeError(f"{what}: the process exited before it was ready")
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{what}: not ready within {timeout:.0f}s")
        time.sleep(interval)
