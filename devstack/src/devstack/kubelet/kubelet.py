"""`SimulatedKubelet`: registers a Node for every running EC2 instance of the cluster and plays the
kubelets' part in the local stack, as KWOK does for Karpenter.

One reconcile pass (`sync_once`):
1. every running instance tagged `kubernetes.io/cluster/<cluster>` gets a Node (named by its private DNS
   name), created Ready=False with its claim's labels and taints (see `devstack.kubelet.node`);
2. `ready_delay` seconds after the kubelet first saw the Node it turns Ready; `startup_taint_delay`
   seconds after that, the claim's startup taints are removed whenever present (as a daemon would,
   also after nodeflow's registration re-applies them);
3. Nodes it registered whose instance is no longer running are deleted (finalizers are nodeflow's);
4. pods bound to its Nodes are reported Running, and pods there with a deletionTimestamp are deleted
   for good, once each (their containers are "stopped");
5. every `status_report_interval` seconds (300 by default, a real kubelet's nodeStatusReportFrequency)
   each Ready Node's status is reported again: the same conditions with a new lastHeartbeatTime, an
   update of the Node as a real cluster's watches see one per node every 5 minutes (the first report
   comes that long after the Node turned Ready, so reports spread as the nodes' start times do).

Every failure is logged and retried on the next pass; creating a Node is idempotent by name.

Reading every instance (DescribeInstances) costs EC2 (moto) and the kubelet milliseconds per instance, so
every instance is described once, when first seen. After the first listing, a full pass sweeps instead:
DescribeInstanceStatus (about a sixth of the cost per instance) says which instances run, the ones gone
leave the listing, and only running ones it lacks are described (by `instance-id`, with the cluster tag;
those of other clusters are remembered and not read again). `run`'s passes sweep at most every
`full_list_interval` seconds and otherwise reuse the last listing, re-reading only the instances the
NodeClaims point at that it lacks (new launches), those of deleting or vanished claims, and those of own
Nodes whose claim is gone (by `instance-id` filter): with hundreds of nodes a pass costs what changed, not
the whole cluster. `sync_once` always sweeps (or lists, the first time).

`run` reads Nodes, Pods and NodeClaims from its watches (`devstack.wakeup.ChangeFeed` with `cache`), not
with a LIST per pass (with the binder's, hundreds of MB of JSON in a 500-node scale-up; the figure is in
benchmarks/README.md), and keeps what its own writes return there, so the next pass does not act on an
older copy. `run` makes a pass when they change: a NodeClaim gets its providerID right after its instance
launched, and is deleted after it is terminated, so claim and node changes are when EC2 is worth reading;
a change of pods alone makes a pass without EC2 (steps 1-3 skipped). While a pass makes progress or fails,
or a Node waits out `ready_delay` or `startup_taint_delay`, or for `backstop_interval` seconds after a
Node or NodeClaim changed (EC2 often changes right after, e.g. a termination follows the claim's
InstanceTerminating condition), full passes repeat every `poll_interval`; otherwise a full pass runs at
least every `backstop_interval` seconds, which covers instances changing without any Kubernetes event.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from cloudprovider.types import TAG_CLUSTER_PREFIX, TAG_NODECLAIM
from cloudprovider.types import instance_id_of as instance_id_in
from devstack.kubelet import node as nodes
from devstack.kubelet.pods import needs_start, running_status
from devstack.wakeup import ChangeFeed, Changes, keep, read_objects, run_passes
from kube.errors import AlreadyExistsError, KubeError, NotFoundError
from kube.resources import NODE, NODECLAIM, POD, Resource
from kube.types import Kube, Obj

log = logging.getLogger(__name__)

_AWS_ERRORS = (BotoCoreError, ClientError)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SimulatedKubelet:
    """See the module docstring. `ec2` is a boto3 EC2 client; `clock` (monotonic seconds) drives the
    delays. Not thread-safe: run one instance per cluster, from one thread."""

    def __init__(
        self,
        kube: Kube,
        ec2: Any,
        cluster_name: str,
        ready_delay: float = 1.0,
        startup_taint_delay: float = 1.0,
        poll_interval: float = 0.5,
        *,
        clock: Callable[[], float] = time.monotonic,
        backstop_interval: float = 2.0,
        watch_seconds: int = 30,
        full_list_interval: float = 5.0,
        status_report_interval: float = 300.0,
    ) -> None:
        """`poll_interval`: the least time between passes of `run`, and their pace while busy;
        `backstop_interval`: the most time between full passes when nothing changes; `watch_seconds`:
        the length of each watch (a stopped kubelet's watch threads end within it); `full_list_interval`:
        the most time between two listings of every instance in `run` (see the module docstring);
        `status_report_interval`: how often a Ready Node's status is reported again (step 5)."""
        if not cluster_name:
            raise ValueError("cluster_name is empty; pass the name instances are tagged with")
        self._kube = kube
        self._ec2 = ec2
        self._cluster = cluster_name
        self._region = str(ec2.meta.region_name)
        self._ready_delay = ready_delay
        self._startup_taint_delay = startup_taint_delay
        self._poll_interval = poll_interval
        self._backstop_interval = backstop_interval
        self._watch_seconds = watch_seconds
        self._clock = clock
        self._nodes_busy = False  # the last full pass made node progress, failed, or a node waits on a delay
        self._pods_busy = False  # the last pass started or deleted pods, or failed to
        self._hot_until = 0.0  # time.monotonic() until which full passes follow a Node or NodeClaim change
        self._type_cache: dict[str, dict[str, Any]] = {}
        self._first_seen: dict[str, float] = {}
        self._ready_since: dict[str, float] = {}
        self._reported: dict[str, float] = {}  # node name -> clock of its last status report, once Ready
        self._status_report_interval = status_report_interval
        self._startup_taints: dict[str, list[Obj]] = {}
        self._deleted_pods: set[str] = set()
        self._full_list_interval = full_list_interval
        self._listed: dict[str, dict[str, Any]] | None = None  # the running instances as last read
        self._listed_at = 0.0  # time.monotonic() of the last listing of every instance
        self._unresolved: set[str] = set()  # instance ids NodeClaims name that were not running when read
        self._foreign: set[str] = set()  # running instances without the cluster tag (never ours: it is set at launch)
        self._feed: ChangeFeed | None = None  # run's watches; without them (sync_once alone) passes LIST

    def run(self, stop: threading.Event) -> None:
        """Reconcile on change (see the module docstring) until `stop` is set; returns within about one
        pass."""
        feed = ChangeFeed(self._kube, [NODE, POD, NODECLAIM], name="simulated kubelet",
                          watch_seconds=self._watch_seconds, cache=True)  # fmt: skip
        self._feed = feed
        run_passes(self._pass, feed, stop, poll_interval=self._poll_interval, backstop=self._backstop_interval,
                   name="simulated kubelet")  # fmt: skip

    def _pass(self, changes: Changes) -> bool:
        """One pass for `run`: a full one when anything may have changed, Nodes or NodeClaims changed, or
        node work is under way; else pods only. Returns whether it is busy (see the module docstring)."""
        if changes is not None and (NODE in changes or NODECLAIM in changes):
            self._hot_until = time.monotonic() + self._backstop_interval
        if changes is None or self._nodes_busy or time.monotonic() < self._hot_until:
            stale = self._listed is None or time.monotonic() - self._listed_at >= self._full_list_interval
            self.sync_once(full_listing=stale, claims_changed=changes is None or NODECLAIM in changes)
        else:
            self._pods_busy = False
            own = self._own_nodes()
            if own is None:
                self._pods_busy = True
            else:
                self._sync_pods(own)
        return self._nodes_busy or self._pods_busy or time.monotonic() < self._hot_until

    def sync_once(self, full_listing: bool = True, claims_changed: bool = True) -> None:
        """One reconcile pass (see the module docstring). Without `full_listing`, the instances are the
        last listing updated as the module docstring says (NodeClaims are read when `claims_changed`)."""
        self._nodes_busy = self._pods_busy = False
        own = self._own_nodes()
        if own is None:
            self._nodes_busy = True
            return
        if full_listing or self._listed is None:
            instances = self._running_instances() if self._listed is None else self._swept_listing(self._listed)
            if instances is not None:
                self._listed, self._listed_at, self._unresolved = dict(instances), time.monotonic(), set()
        else:
            instances = self._updated_listing(self._listed, own, claims_changed)
        if instances is None:
            self._nodes_busy = True
        else:
            self._register(instances, own)
            self._remove_gone(instances, own)
            self._advance(instances, own)
        self._sync_pods(own)

    # -- EC2 ---------------------------------------------------------------------------------------

    def _updated_listing(
        self, listed: dict[str, dict[str, Any]], own: Mapping[str, Obj], claims_changed: bool
    ) -> dict[str, dict[str, Any]] | None:
        """The last listing with the instances worth re-reading read again (see the module docstring), or
        None when the NodeClaims or EC2 could not be read."""
        check = set(self._unresolved)
        if claims_changed:
            try:
                claims = self._list(NODECLAIM)
            except KubeError as exc:
                log.warning("simulated kubelet: listing NodeClaims failed, retrying next pass: %s", exc)
                return None
            claimed: set[str] = set()
            for claim in claims:
                instance_id = instance_id_in(str((claim.get("status") or {}).get("providerID") or ""))
                if not instance_id:
                    continue
                claimed.add(instance_id)
                if instance_id not in listed or (claim.get("metadata") or {}).get("deletionTimestamp"):
                    check.add(instance_id)
            check |= {i for i in map(nodes.instance_id_of, own.values()) if i and i in listed and i not in claimed}
        if check:
            found = self._running_instances(sorted(check))
            if found is None:
                return None
            for instance_id in check:
                listed.pop(instance_id, None)
            listed.update(found)
            self._unresolved = check - set(found)
        return dict(listed)

    def _swept_listing(self, listed: Mapping[str, dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
        """The running instances of the cluster: those of `listed` still running, and the running ones it
        lacks described (see the module docstring); None when EC2 could not be read."""
        running = self._running_ids()
        if running is None:
            return None
        self._foreign &= running
        swept = {instance_id: data for instance_id, data in listed.items() if instance_id in running}
        unknown = sorted(running - swept.keys() - self._foreign)
        if unknown:
            found = self._running_instances(unknown)
            if found is None:
                return None
            swept.update(found)
            self._foreign |= set(unknown) - found.keys()
        return swept

    def _running_ids(self) -> set[str] | None:
        """The ids of every running instance in the region (DescribeInstanceStatus cannot filter by tag),
        or None when EC2 could not be read."""
        try:
            pages = self._ec2.get_paginator("describe_instance_status").paginate(PaginationConfig={"PageSize": 1000})
            return {
                status["InstanceId"]
                for page in pages
                for status in page.get("InstanceStatuses", [])
                if (status.get("InstanceState") or {}).get("Name") == "running"
            }
        except _AWS_ERRORS as exc:
            log.warning("simulated kubelet: DescribeInstanceStatus failed, retrying next pass: %s", exc)
            return None

    def _running_instances(self, instance_ids: list[str] | None = None) -> dict[str, dict[str, Any]] | None:
        """Running instances of the cluster by id (only those of `instance_ids` when given), or None when
        EC2 could not be read."""
        filters = [
            {"Name": "tag-key", "Values": [f"{TAG_CLUSTER_PREFIX}{self._cluster}"]},
            {"Name": "instance-state-name", "Values": ["running"]},
        ]
        if instance_ids is not None:
            filters.append({"Name": "instance-id", "Values": instance_ids})
        found: dict[str, dict[str, Any]] = {}
        try:
            for page in self._ec2.get_paginator("describe_instances").paginate(Filters=filters):
                for reservation in page.get("Reservations", []):
                    for instance in reservation.get("Instances", []):
                        if (instance.get("State") or {}).get("Name") == "running":
                            found[instance["InstanceId"]] = instance
        except _AWS_ERRORS as exc:
            log.warning("simulated kubelet: DescribeInstances failed, retrying next pass: %s", exc)
            return None
        return found

    def _type_info(self, instance_type: str) -> dict[str, Any] | None:
        if instance_type not in self._type_cache:
            try:
                described = self._ec2.describe_instance_types(InstanceTypes=[instance_type])["InstanceTypes"]
            except _AWS_ERRORS as exc:
                log.warning("simulated kubelet: DescribeInstanceTypes %s failed: %s", instance_type, exc)
                self._nodes_busy = True
                return None
            if not described:
                log.warning("simulated kubelet: EC2 does not know instance type %s", instance_type)
                return None
            self._type_cache[instance_type] = described[0]
        return self._type_cache[instance_type]

    # -- the API -----------------------------------------------------------------------------------

    def _list(self, resource: Resource) -> list[Obj]:
        return read_objects(self._kube, self._feed, resource)

    # -- Nodes -------------------------------------------------------------------------------------

    def _own_nodes(self) -> dict[str, Obj] | None:
        try:
            listed = self._list(NODE)
        except KubeError as exc:
            log.warning("simulated kubelet: listing nodes failed, retrying next pass: %s", exc)
            return None
        annotation = nodes.SIMULATED_ANNOTATION
        return {
            n["metadata"]["name"]: n
            for n in listed
            if ((n.get("metadata") or {}).get("annotations") or {}).get(annotation) == self._cluster
        }

    def _claim(self, instance: Mapping[str, Any]) -> tuple[bool, Obj | None]:
        """(ok, the instance's NodeClaim or None when it has none); ok is False on an API failure."""
        name = nodes.tag(instance, TAG_NODECLAIM)
        if not name:
            return True, None
        try:
            return True, self._kube.get(NODECLAIM, name)
        except NotFoundError:
            return True, None
        except KubeError as exc:
            log.warning("simulated kubelet: reading NodeClaim %s failed: %s", name, exc)
            self._nodes_busy = True
            return False, None

    def _register(self, instances: Mapping[str, dict[str, Any]], own: dict[str, Obj]) -> None:
        for instance_id in sorted(instances):
            instance = instances[instance_id]
            name = nodes.node_name(instance)
            if name not in own:
                created = self._create_node(instance)
                if created is None:
                    continue
                own[name] = created
                self._first_seen[name] = self._clock()
                self._ready_since.pop(name, None)
            self._first_seen.setdefault(name, self._clock())
            if not (own[name].get("status") or {}).get("capacity"):
                self._post_status(instance, own[name])

    def _create_node(self, instance: Mapping[str, Any]) -> Obj | None:
        type_info = self._type_info(str(instance["InstanceType"]))
        ok, claim = self._claim(instance)
        if type_info is None or not ok:
            return None
        body = nodes.build_node(instance, type_info, claim, self._region, self._cluster)
        name = body["metadata"]["name"]
        try:
            created = keep(self._feed, NODE, self._kube.create(NODE, body))
        except AlreadyExistsError:
            # Not in this pass's list of our nodes: someone else's Node has the name, or it was
            # created after the list; either way, leave it to the next pass.
            log.info("simulated kubelet: node %s already exists", name)
            self._nodes_busy = True
            return None
        except KubeError as exc:
            log.warning("simulated kubelet: creating node %s failed: %s", name, exc)
            self._nodes_busy = True
            return None
        self._nodes_busy = True
        self._startup_taints[name] = nodes.claim_taints(claim, "startupTaints")
        log.info("simulated kubelet: registered node %s for %s", name, instance["InstanceId"])
        return created

    def _post_status(self, instance: Mapping[str, Any], node: Obj) -> None:
        """Post the full status (capacity, allocatable, addresses, nodeInfo), keeping its readiness."""
        type_info = self._type_info(str(instance["InstanceType"]))
        if type_info is None:
            return
        name = node["metadata"]["name"]
        status = {"status": nodes.node_status(instance, type_info, ready=nodes.is_ready(node), now=_now())}
        self._nodes_busy = True  # posted or failed: either way the next pass has more to do
        try:
            node.update(keep(self._feed, NODE, self._kube.patch(NODE, name, status, subresource="status")))
        except KubeError as exc:
            log.warning("simulated kubelet: posting status of node %s failed: %s", name, exc)

    def _remove_gone(self, instances: Mapping[str, Any], own: dict[str, Obj]) -> None:
        for name in sorted(own):
            node = own[name]
            if nodes.instance_id_of(node) in instances:
                continue
            del own[name]
            self._forget(name)
            if (node.get("metadata") or {}).get("deletionTimestamp"):
                continue
            self._nodes_busy = True
            try:
                self._kube.delete(NODE, name)
                if self._feed is not None:
                    self._feed.forget(NODE, node)
                log.info("simulated kubelet: deleted node %s, its instance is gone", name)
            except NotFoundError:
                pass
            except KubeError as exc:
                log.warning("simulated kubelet: deleting node %s failed: %s", name, exc)

    def _forget(self, name: str) -> None:
        for table in (self._first_seen, self._ready_since, self._startup_taints, self._reported):
            table.pop(name, None)

    def _advance(self, instances: Mapping[str, dict[str, Any]], own: dict[str, Obj]) -> None:
        """Turn Nodes Ready after ready_delay, then drop startup taints after startup_taint_delay."""
        now = self._clock()
        for name in sorted(own):
            node = own[name]
            instance = instances.get(nodes.instance_id_of(node) or "")
            if instance is None or not (node.get("status") or {}).get("capacity"):
                continue  # Ready only once capacity is posted, as a kubelet does
            if not nodes.is_ready(node):
                self._nodes_busy = True  # waiting out ready_delay, or just marked Ready, or failed to
                if now - self._first_seen.get(name, now) < self._ready_delay or not self._mark_ready(node):
                    continue
                self._ready_since[name] = now
            ready_since = self._ready_since.setdefault(name, now)
            if now - self._reported.setdefault(name, ready_since) >= self._status_report_interval:
                self._report_status(node, now)
            if now - ready_since >= self._startup_taint_delay:
                self._drop_startup_taints(instance, own[name])
            else:
                self._nodes_busy = True  # startup taints come off once startup_taint_delay has passed

    def _mark_ready(self, node: Obj) -> bool:
        name = node["metadata"]["name"]
        patch = {"status": {"conditions": nodes.conditions(ready=True, now=_now())}}
        try:
            node.update(keep(self._feed, NODE, self._kube.patch(NODE, name, patch, subresource="status")))
        except KubeError as exc:
            log.warning("simulated kubelet: marking node %s Ready failed: %s", name, exc)
            return False
        log.info("simulated kubelet: node %s is Ready", name)
        return True

    def _report_status(self, node: Obj, now: float) -> None:
        """Report a Ready Node's status again: its conditions with a new lastHeartbeatTime (step 5)."""
        name = node["metadata"]["name"]
        heartbeat = _now()
        conditions = [{**c, "lastHeartbeatTime": heartbeat} for c in (node.get("status") or {}).get("conditions") or []]
        try:
            patch = {"status": {"conditions": conditions}}
            node.update(keep(self._feed, NODE, self._kube.patch(NODE, name, patch, subresource="status")))
        except KubeError as exc:
            log.warning("simulated kubelet: reporting the status of node %s failed: %s", name, exc)
            return
        self._reported[name] = now

    def _drop_startup_taints(self, instance: Mapping[str, Any], node: Obj) -> None:
        name = node["metadata"]["name"]
        if name not in self._startup_taints:
            ok, claim = self._claim(instance)
            if not ok:
                return
            self._startup_taints[name] = nodes.claim_taints(claim, "startupTaints")
        startup = {(t["key"], t["effect"]) for t in self._startup_taints[name]}
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if (t.get("key"), t.get("effect")) not in startup]
        if len(kept) == len(taints):
            return
        # The resourceVersion makes this a compare-and-swap: nodeflow edits the same taint list.
        patch: Obj = {"spec": {"taints": kept}}
        if node["metadata"].get("resourceVersion"):
            patch["metadata"] = {"resourceVersion": node["metadata"]["resourceVersion"]}
        self._nodes_busy = True
        try:
            node.update(keep(self._feed, NODE, self._kube.patch(NODE, name, patch)))
        except KubeError as exc:
            log.warning("simulated kubelet: removing startup taints from %s failed: %s", name, exc)
            return
        log.info("simulated kubelet: removed startup taints from node %s", name)

    # -- Pods --------------------------------------------------------------------------------------

    def _sync_pods(self, own: Mapping[str, Obj]) -> None:
        if not own:
            return
        try:
            pods = self._list(POD)
        except KubeError as exc:
            log.warning("simulated kubelet: listing pods failed, retrying next pass: %s", exc)
            self._pods_busy = True
            return
        terminating: set[str] = set()
        for pod in pods:
            node = own.get((pod.get("spec") or {}).get("nodeName") or "")
            if node is None:
                continue
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                terminating.add(_pod_uid(pod))
                self._finish_deletion(pod)
            elif needs_start(pod):
                self._start(pod, node)
        self._deleted_pods &= terminating  # forget pods that are gone

    def _finish_deletion(self, pod: Obj) -> None:
        meta = pod["metadata"]
        uid = _pod_uid(pod)
        if uid in self._deleted_pods:
            return
        self._pods_busy = True
        try:
            self._kube.delete(POD, meta["name"], meta.get("namespace"))
        except NotFoundError:
            pass
        except KubeError as exc:
            log.warning("simulated kubelet: deleting pod %s/%s failed: %s", meta.get("namespace"), meta["name"], exc)
            return
        self._deleted_pods.add(uid)

    def _start(self, pod: Obj, node: Obj) -> None:
        meta = pod["metadata"]
        status = running_status(pod, _internal_ip(node), _now())
        self._pods_busy = True
        try:
            started = self._kube.patch(
                POD, meta["name"], {"status": status}, meta.get("namespace"), subresource="status"
            )
            keep(self._feed, POD, started)
        except NotFoundError:
            pass
        except KubeError as exc:
            log.warning("simulated kubelet: starting pod %s/%s failed: %s", meta.get("namespace"), meta["name"], exc)


def _pod_uid(pod: Mapping[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


def _internal_ip(node: Mapping[str, Any]) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP":
            return str(address.get("address", ""))
    return ""
