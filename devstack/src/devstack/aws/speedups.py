"""Speed-ups of moto for a local stack with hundreds of instances (local stack only, never product code).

Each replaces a moto path whose cost grows with the whole cluster by one that gives the same answer:

- `Dispatcher`: moto's `DomainDispatcherApplication` lists moto's package directory (about 150 `stat`
  calls) for every request, under a lock all request threads share; the backend a host maps to never
  changes, so it is looked up once per host. It also builds each service's routes without a us-east-1
  backend (see `Dispatcher`).
- an EC2 resource's tags: moto reads them by scanning every tag of every resource (`describe_tags` with
  a resource-id filter), so DescribeInstances of N tagged instances cost O(N²); they are read from the
  backend's per-resource table instead.
- DescribeInstances filters: moto converts every tag filter's values to a regular expression (with
  `fnmatch.translate`) again for every instance it tests, and tests the filters in the order they came,
  so a lookup of one instance by id or by one tag among N costs N full tests; the expressions are
  remembered, and each instance meets the most selective filters first (`instance-id`, then one-value
  `tag:<key>` filters), which decides the same conjunction sooner.
- the Query protocol's parser asks, for every structure it might parse, whether any parameter starts with
  the structure's prefix, by scanning all parameters: O(parameters²) for a CreateFleet with many
  overrides; the dotted prefixes of the request's parameters are computed once per request instead.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import moto.ec2.models.instances as ec2_instances
import moto.ec2.utils as ec2_utils
from moto.backends import get_backend
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.base_backend import BackendDict
from moto.core.parse import QueryParser
from moto.ec2.models.core import TaggedEC2Resource
from moto.ec2.utils import EC2_PREFIX_TO_RESOURCE, get_prefix
from moto.moto_server.werkzeug_app import DomainDispatcherApplication

_installed = threading.Lock()
_done: list[bool] = []
_parse_state = threading.local()


class Dispatcher(DomainDispatcherApplication):
    """moto's dispatcher, remembering the backend each host maps to. moto builds a service's app (its
    URL routes, on the first request for it) from that service's us-east-1 backend, which for EC2 means
    loading every AMI and instance type of a region the stack never serves (a third of a second at each
    start): the app is built from `region`'s backend instead, which has the same routes."""

    def __init__(self, create_app: Callable[[Any], Any], region: str) -> None:
        def create_from_region(service: Any) -> Any:
            accounts = get_backend(service)
            if not isinstance(accounts, BackendDict) or region == "us-east-1":
                return create_app(service)
            backends = accounts[DEFAULT_ACCOUNT_ID]
            if "us-east-1" not in backends or dict.__contains__(backends, "us-east-1"):
                return create_app(service)
            dict.__setitem__(backends, "us-east-1", backends[region])  # read for its routes only
            try:
                return create_app(service)
            finally:
                dict.__delitem__(backends, "us-east-1")

        super().__init__(create_from_region)
        self._backends: dict[str | None, Any] = {}

    def get_backend_for_host(self, host: str | None) -> Any:
        if host not in self._backends:
            self._backends[host] = super().get_backend_for_host(host)
        return self._backends[host]


def _resource_tags(self: Any) -> list[dict[str, str]]:
    """What `describe_tags(filters={"resource-id": [self.id]})` answers, from the resource's own entry."""
    resource_id = self.id
    if not resource_id:
        return []
    tags = self.ec2_backend.tags.get(resource_id) or {}
    kind = EC2_PREFIX_TO_RESOURCE.get(get_prefix(resource_id), "")
    return [
        {"resource_id": resource_id, "key": key, "value": value, "resource_type": kind} for key, value in tags.items()
    ]


def _prefixes(query_params: Any) -> set[str]:
    """Every dotted prefix of the request's parameter names ("A.1.B" gives "A", "A.1" and "A.1.B"),
    computed once per request (the parser calls this for the same parameters many times)."""
    if getattr(_parse_state, "params", None) is not query_params:
        found: set[str] = set()
        for key in query_params:
            parts = str(key).split(".")
            found.update(".".join(parts[: i + 1]) for i in range(len(parts)))
        _parse_state.params, _parse_state.prefixes = query_params, found
    prefixes: set[str] = _parse_state.prefixes
    return prefixes


def _gonna_recurse(self: Any, query_params: Any, prefix: str) -> bool:
    """True when no parameter lies under `prefix`, so the structure there is absent. (moto's own test is
    a plain `startswith`, which also counts "A.10" under "A.1"; those structures parse to nothing.)"""
    if prefix == "":
        return False
    return prefix not in _prefixes(query_params)


_original_filter_to_re = ec2_utils.simple_aws_filter_to_re
_original_filter_reservations = ec2_utils.filter_reservations


@functools.lru_cache(maxsize=4096)
def _filter_to_re(filter_string: str) -> str:
    """moto's `simple_aws_filter_to_re`, remembered (a pure function of the filter value)."""
    return _original_filter_to_re(filter_string)


def _selectivity(item: tuple[str, Any]) -> int:
    name, values = item
    if name == "instance-id":
        return 0
    if name.startswith("tag:") and len(values) == 1:
        return 1
    return 2


def _filter_reservations(reservations: list[Any], filter_dict: Any) -> list[Any]:
    """moto's `filter_reservations` with the filters in the order `_selectivity` gives: the same
    instances pass (every filter must), but most instances fail at the first test."""
    if isinstance(filter_dict, dict) and len(filter_dict) > 1:
        filter_dict = dict(sorted(filter_dict.items(), key=_selectivity))
    return _original_filter_reservations(reservations, filter_dict)


def install() -> None:
    """Apply the process-wide replacements (idempotent)."""
    with _installed:
        if _done:
            return
        TaggedEC2Resource.get_tags = _resource_tags  # type: ignore[method-assign]
        QueryParser._gonna_recurse = _gonna_recurse  # type: ignore[method-assign]
        ec2_utils.simple_aws_filter_to_re = _filter_to_re
        ec2_instances.filter_reservations = _filter_reservations  # type: ignore[attr-defined]
        _done.append(True)
