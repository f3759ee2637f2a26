"""The worker process: the composition root that builds the real clients and runs the Temporal worker,
the health probes, the metrics endpoints and, while it is the leader, the Kubernetes watchers and the
cluster-state metrics, until asked to stop. Scale out
by running more of these on one task queue: every replica serves workflows and activities; one, the
holder of the leader-election Lease (workers.leadership), runs the watchers and the start-up work."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from temporalio.client import Client
from temporalio.worker import Worker

from activities.disruption.decision import DecideInput, DisruptionActivities, DisruptionRound, LookAhead
from activities.disruption.execution import DisruptionExecution
from activities.disruption.manual_replacement import ManualReplacement
from activities.disruption.trigger import DisruptionTrigger
from activities.garbage_collection.collector import GarbageCollectionActivities
from activities.garbage_collection.survey import GarbageSurvey
from activities.interruption.consumer import ClaimDisrupter, InterruptionConsumer
from activities.interruption.instance_status import InstanceStatusChecker
from activities.interruption.repair import NodeRepairer
from activities.metrics.cluster_refresh import ClusterStateMetrics
from activities.metrics.metered_cloud import MeteredCloudProvider
from activities.metrics.registry import Metrics
from activities.nodeclaim.lifecycle import node_claim_activities
from activities.nodeclaim.sweep import ClaimSweep
from activities.provisioning.price_refresh import PriceRefresher
from activities.provisioning.provisioner import ProvisioningActivities
from activities.provisioning.status_refresh import StatusRefresh
from cloudprovider.aws.factory import new_aws_cloud_provider, new_interruption_queue, resolve_eks_cluster
from cloudprovider.aws.provider import AWSCloudProvider
from cloudprovider.types import CloudProvider
from cloudprovider.unavailable import UnavailableOfferings
from kube import resources as r
from kube.client import KubeClient
from kube.events import EventRecorder
from kube.leases import LeaseClient
from kube.node_directory import NodeDirectory
from kube.types import Kube
from kube.watch_cache import WATCHED, WatchCache
from scheduling.provisioning.provisionable import is_provisionable
from workers.feature_gates import not_implemented
from workers.heap import freeze_long_lived
from workers.leader_election import Election, candidate_identity
from workers.leadership import LeaderElector
from workers.metrics_server import MetricsServer, temporal_runtime
from workers.probes import CatalogWarmer, worker_probes
from workers.reconcile import adopt_node_claims, end_orphaned_workflows
from workers.settings import Settings, duration_text, optional_seconds, whole_seconds
from workers.temporal.build_id import build_id, build_labels
from workers.temporal.client import connect
from workers.temporal.namespace_owner import claim_namespace
from workers.temporal.search_attribute_check import check_search_attributes
from workers.temporal.starter import TemporalStarter
from workers.temporal.workflow_runner import CompactWorkflowRunner
from workers.tracing import Tracing
from workers.watchers import DeletionWatcher, DriftTrigger, PodWatcher
from workflows.disruption import (
    POLL,
    DisruptionControllerWorkflow,
    DisruptionSettings,
    start_disruption_controller,
    wake_disruption_controller,
)
from workflows.garbage_collection import (
    GarbageCollectorSettings,
    GarbageCollectorWorkflow,
    request_collection,
    start_garbage_collector,
)
from workflows.messages import NodeClaimSignal
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.provisioner import BatchWindow, ProvisionerWorkflow

log = logging.getLogger(__name__)
ACTIVITY_THREADS = 32


class LeaderLoop(Protocol):
    """What the leader runs in a thread: `run(stop)` until `stop` is set."""

    def run(self, stop: threading.Event) -> None: ...


async def _lead(
    settings: Settings,
    client: Client,
    kube: Kube,
    cloud: CloudProvider,
    starter: TemporalStarter,
    metrics: Metrics,
    disruption: DisruptionActivities,
    provisioning: ProvisioningActivities,
    collector: GarbageCollectionActivities,
    loops: Sequence[LeaderLoop | None] = (),
    nodes: NodeDirectory | None = None,
) -> None:
    """The leader's work, run only while this worker holds the Lease (workers.leadership), until
    cancelled: end NodeClaim workflows whose NodeClaim is gone, adopt NodeClaims without a workflow
    (workers.reconcile), nudge the provisioner, start or reconfigure the garbage collector and the
    disruption controller (so the leader's settings win), then run the Kubernetes watchers (which keep
    a watch cache of their objects for this term), then, each reading the cluster from that cache, the
    cluster-state metrics (activities.metrics.cluster_refresh), the disruption trigger (deciding with `disruption`),
    the status refresh (with `provisioning`) and the garbage survey (with `collector`), and the other
    `loops` given (the interruption queue's
    consumer, the instance status checker, node repair), each in its thread. A new leader does all of it
    again: each step is idempotent."""
    await end_orphaned_workflows(client, kube, cloud)
    adopted = await adopt_node_claims(kube, starter)
    log.info("leading: %d NodeClaims adopted", adopted)
    await starter.signal_provisioner()
    collection = GarbageCollectorSettings(
        interval_seconds=whole_seconds(settings.garbage_collection_interval),
        min_age_seconds=whole_seconds(settings.garbage_collection_min_age),
    )
    await start_garbage_collector(client, settings.task_queue, settings.cluster_name, collection)
    disruption_settings = DisruptionSettings(
        executable_methods=settings.disruption_method_list(),
        spot_to_spot_consolidation=settings.feature_gate_values()["SpotToSpotConsolidation"],
    )
    await start_disruption_controller(client, settings.task_queue, disruption_settings)
    loop = asyncio.get_running_loop()
    watch_stop = threading.Event()
    cache = WatchCache(WATCHED)  # the watches' objects and their count, for the readers of the whole cluster below
    watches: list[PodWatcher | DeletionWatcher | DriftTrigger] = [
        PodWatcher(kube, starter, loop),
        DeletionWatcher(kube, starter, loop, nodes),
        DriftTrigger(kube, starter, loop),
    ]
    for watch in watches:
        watch.cache = cache
    watchers: list[LeaderLoop] = [
        *watches,
        ClaimSweep(kube, cloud, starter, loop, interval=whole_seconds(settings.claim_sweep_interval), cache=cache),
        ClusterStateMetrics(cache, metrics, cloud),
        _disruption_trigger(client, settings.task_queue, loop, disruption, disruption_settings, cache),
        _status_refresh(cache, starter, provisioning),
        _garbage_survey(client, settings, loop, collector, collection, cache),
    ]
    watchers += [extra for extra in loops if extra is not None]
    threads = [threading.Thread(target=w.run, args=(watch_stop,), name=type(w).__name__, daemon=True) for w in watchers]
    for thread in threads:
        thread.start()
    try:
        await asyncio.Event().wait()  # until cancelled
    finally:
        watch_stop.set()  # each watcher acts no more; a watch blocked on the API ends at its next event


def _garbage_survey(
    client: Client,
    settings: Settings,
    loop: asyncio.AbstractEventLoop,
    collector: GarbageCollectionActivities,
    collection: GarbageCollectorSettings,
    cache: WatchCache,
) -> GarbageSurvey:
    """The leader's look for garbage every `collection.interval_seconds` (activities.garbage_collection.survey), asking
    the collector on the settings' task queue for a round through `client` on `loop` when it finds some
    (a collector it starts again records this cluster as the namespace's owner)."""

    def request() -> None:
        coro = request_collection(client, settings.task_queue, collection, owner=settings.cluster_name)
        asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)

    return GarbageSurvey(collector, request, collection.min_age_seconds, collection.interval_seconds, cache)


def _disruption_trigger(
    client: Client,
    task_queue: str,
    loop: asyncio.AbstractEventLoop,
    disruption: DisruptionActivities,
    settings: DisruptionSettings,
    cache: WatchCache,
) -> DisruptionTrigger:
    """The leader's look ahead (activities.disruption.trigger), deciding with `disruption` under `settings`
    and waking the controller (started again on `task_queue` should it have been terminated) through
    `client` on `loop`; `cache` keeps the leader's watched objects and counts their events."""

    def wake() -> None:
        coro = wake_disruption_controller(client, task_queue, settings)
        asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=30)

    inp = DecideInput(
        executable_methods=settings.executable_methods, spot_to_spot_consolidation=settings.spot_to_spot_consolidation
    )

    def look(decide: DecideInput, memory: LookAhead | None) -> tuple[DisruptionRound | None, LookAhead]:
        return disruption.look_ahead(decide, memory, cache)

    return DisruptionTrigger(look, wake, inp, interval=POLL.total_seconds())


def _status_refresh(cache: WatchCache, starter: TemporalStarter, provisioning: ProvisioningActivities) -> StatusRefresh:
    """The leader's NodePool and EC2NodeClass status refresh (activities.provisioning.status_refresh), asking the
    provisioner for a round through `starter` when the pods in the leader's watch `cache` show some
    pending."""

    def pending_pods() -> int:
        return sum(1 for pod in cache.list(r.POD) if is_provisionable(pod))

    def ask_round(count: int) -> None:
        asyncio.run_coroutine_threadsafe(starter.signal_provisioner(count), starter.loop).result(timeout=30)

    return StatusRefresh(provisioning.status.refresh, pending_pods, ask_round)


def _claim_disrupter(
    kube: Kube,
    unavailable: UnavailableOfferings,
    recorder: EventRecorder,
    starter: TemporalStarter,
    metrics: Metrics,
) -> ClaimDisrupter:
    """The interruption action (activities.interruption.consumer): NodeClaim workflows signalled through `starter` on
    its event loop, offerings marked in `unavailable` (the cache this worker's provisioning rounds read)."""
    return ClaimDisrupter(kube, _blocking_signal(starter, NodeClaimSignal.DELETE), unavailable, recorder, metrics)


def _blocking_signal(starter: TemporalStarter, signal: NodeClaimSignal) -> Callable[[str, str], bool]:
    """`signal` (with a reason) to a NodeClaim's workflow, from a leader thread, through `starter` on its
    event loop: True when the workflow accepted it, False when it is not running."""

    def send(name: str, reason: str) -> bool:
        coro = starter.signal_node_claim(name, signal, reason)
        return bool(asyncio.run_coroutine_threadsafe(coro, starter.loop).result(timeout=30))

    return send


def _node_repairer(
    settings: Settings, kube: Kube, recorder: EventRecorder, starter: TemporalStarter, metrics: Metrics
) -> NodeRepairer | None:
    """Node repair (activities.interruption.repair) when the NodeRepair feature gate is on, else None."""
    if not settings.feature_gate_values()["NodeRepair"]:
        return None
    log.info("node repair on (feature gate NodeRepair)")
    return NodeRepairer(kube, _blocking_signal(starter, NodeClaimSignal.REPAIR), recorder, metrics=metrics)


def _interruption_consumer(
    settings: Settings, disrupter: ClaimDisrupter, tracing: Tracing | None
) -> InterruptionConsumer | None:
    """The consumer of `settings.interruption_queue` (None when it is empty), acting through `disrupter`."""
    if not settings.interruption_queue:
        return None
    queue = new_interruption_queue(
        settings.region,
        settings.aws_endpoint_url,
        queue_name=settings.interruption_queue,
        instrument=tracing.instrument_boto3 if tracing else None,
    )
    log.info("interruption handling on: consuming SQS queue %s", settings.interruption_queue)
    return InterruptionConsumer(queue, disrupter)


def _instance_status_checker(
    settings: Settings, cloud: AWSCloudProvider, disrupter: ClaimDisrupter
) -> InstanceStatusChecker | None:
    """The checker of the cluster's instances' EC2 status (None when `instance_status_interval` is Never)."""
    interval = optional_seconds(settings.instance_status_interval)
    if interval is None:
        return None
    log.info("instance status checks on: every %ds", interval)
    return InstanceStatusChecker(cloud.instance_statuses, disrupter, interval)


def _price_refresher(settings: Settings, cloud: AWSCloudProvider) -> PriceRefresher:
    """The refresher of `cloud`'s prices on the settings' intervals (activities.provisioning.price_refresh)."""
    on_demand = optional_seconds(settings.on_demand_price_refresh_interval)
    spot = optional_seconds(settings.spot_price_refresh_interval)
    log.info(
        "prices: on-demand from the AWS Pricing API %s, spot %s",
        f"every {on_demand}s" if on_demand else "never (the shipped table)",
        f"every {spot}s" if spot else "read once",
    )
    return PriceRefresher(cloud.prices, on_demand, spot)


def build_kube(settings: Settings) -> KubeClient:
    return KubeClient.from_kubeconfig(settings.kubeconfig) if settings.kubeconfig else KubeClient.in_cluster()


async def _warm_then_freeze(catalog: CatalogWarmer) -> None:
    """Load the catalog, then take the heap's long-lived part out of garbage collection (workers.heap):
    by then the worker holds what it keeps for its lifetime."""
    await catalog.run()
    freeze_long_lived()


async def run_worker(settings: Settings, stop: asyncio.Event, tracing: Tracing | None = None) -> None:
    """Run until `stop` is set, traced by `tracing` when given (workers.tracing: the Temporal interceptor,
    spans around AWS and Kubernetes calls). Refuses (TemporalSettingError) a bad connection, a namespace without
    nodeflow's search attributes (workers.temporal.search_attribute_check) and a namespace another cluster uses
    (workers.temporal.namespace_owner), and reads what nodes need to join the cluster (settings, else
    eks:DescribeCluster; raises CloudProviderError when neither gives it). Then serves workflows and
    activities and the health probes, and campaigns for the Lease; while holding it, runs the leader's
    work (`_lead`). On stop, the leader's work ends and the Lease is released before the Temporal worker
    shuts down."""
    for gate in not_implemented(settings.feature_gate_values()):
        log.warning("feature gate %s is on, but nodeflow does not implement %s yet; it has no effect", gate, gate)
    metrics = Metrics()
    metrics.build_info.labels(**build_labels()).set(1)
    instrument = tracing.instrument_boto3 if tracing else None
    client = await connect(
        settings,
        runtime=temporal_runtime(settings.temporal_metrics_port),
        interceptors=[tracing.interceptor] if tracing else [],
    )
    await check_search_attributes(client, settings)  # before the slow start-up: exits at once when missing
    await claim_namespace(client, settings)  # before anything touches a workflow: one cluster per namespace
    kube: Kube = build_kube(settings)
    if tracing:
        kube = tracing.kube(kube)
    cluster = await asyncio.to_thread(
        resolve_eks_cluster,
        settings.region,
        settings.aws_endpoint_url,
        cluster_name=settings.cluster_name,
        cluster_endpoint=settings.cluster_endpoint,
        cluster_ca_bundle=settings.cluster_ca_bundle,
        cluster_service_cidr=settings.cluster_service_cidr,
        instrument=instrument,
    )
    log.info(
        "cluster %s: endpoint %s, service CIDR %s, DNS IP %s",
        cluster.name, cluster.endpoint or "(none)", cluster.service_cidr or "(none)", cluster.dns_ip or "(none)",
    )  # fmt: skip
    aws = new_aws_cloud_provider(
        settings.region,
        settings.aws_endpoint_url,
        cluster_name=settings.cluster_name,
        cluster=cluster,
        kubernetes_version=settings.kubernetes_version,
        reserved_capacity=settings.feature_gate_values()["ReservedCapacity"],
        observe_fleet_batch=metrics.fleet_batch,
        observe_launch_failure=metrics.launch_failure,
        instrument=instrument,
        pricing_api=settings.on_demand_price_refresh_interval is not None,
        vm_memory_overhead_percent=settings.vm_memory_overhead_percent,
        reserved_enis=settings.reserved_enis,
        dry_run=not settings.disable_dry_run,
    )
    cloud = MeteredCloudProvider(aws, metrics)
    recorder = EventRecorder(kube)
    idle, longest = settings.batch_window()
    window = BatchWindow(idle_seconds=idle, max_seconds=longest)
    starter = TemporalStarter(
        client,
        settings.task_queue,
        asyncio.get_running_loop(),
        duration_text(settings.registration_ttl),
        batch_window=window,
    )
    disrupter = _claim_disrupter(kube, aws.unavailable, recorder, starter, metrics)
    interruption = _interruption_consumer(settings, disrupter, tracing)
    status_checker = _instance_status_checker(settings, aws, disrupter)
    repairer = _node_repairer(settings, kube, recorder, starter, metrics)
    provisioning = ProvisioningActivities(kube, cloud, recorder, starter, metrics, settings.scheduling_policies())
    collector = GarbageCollectionActivities(kube, cloud, recorder)
    disruption = DisruptionActivities(kube, cloud, recorder, metrics, settings.scheduling_policies())
    execution = DisruptionExecution(kube, recorder, starter, metrics)
    manual = ManualReplacement(kube, recorder, starter, metrics)
    nodes = NodeDirectory()  # the leader's Node watch keeps it; this worker's registrations read it
    with ThreadPoolExecutor(max_workers=ACTIVITY_THREADS, thread_name_prefix="activity") as executor:
        worker = Worker(
            client,
            task_queue=settings.task_queue,
            workflows=[ProvisionerWorkflow, NodeClaimWorkflow, GarbageCollectorWorkflow, DisruptionControllerWorkflow],
            activities=[
                *node_claim_activities(kube, cloud, recorder, settings.cluster_name, metrics, nodes),
                provisioning.solve,
                provisioning.apply_plan,
                collector.collect,
                disruption.decide_disruption,
                *execution.activities,
                *manual.activities,
            ],
            activity_executor=executor,
            max_concurrent_activities=ACTIVITY_THREADS,
            max_cached_workflows=settings.max_cached_workflows,
            max_concurrent_workflow_tasks=settings.max_concurrent_workflow_tasks,
            max_concurrent_workflow_task_polls=settings.max_concurrent_workflow_task_polls,
            nonsticky_to_sticky_poll_ratio=settings.nonsticky_to_sticky_poll_ratio,
            build_id=build_id(),
            unsandboxed_workflow_runner=CompactWorkflowRunner(),
        )
        async with worker:
            # The first catalog read (DescribeInstanceTypes, offerings, spot prices) takes seconds; pay it
            # now rather than in the first provisioning round. Every replica serves activities: all warm it.
            catalog = CatalogWarmer(cloud)
            warm_catalog = asyncio.create_task(_warm_then_freeze(catalog))
            # Every replica prices from its own catalog: each refreshes its prices, in a thread of its own.
            prices_stop = threading.Event()
            prices = _price_refresher(settings, aws)
            threading.Thread(target=prices.run, args=(prices_stop,), name="PriceRefresher", daemon=True).start()
            leases = LeaseClient(kube, settings.lease_namespace(), settings.leader_election_name)
            identity = candidate_identity(os.environ.get("HOSTNAME") or socket.gethostname(), uuid.uuid4().hex[:8])
            loops = [interruption, status_checker, repairer]
            elector = LeaderElector(
                leases,
                Election(identity, settings.leader_election_timing()),
                lambda: _lead(
                    settings, client, kube, cloud, starter, metrics, disruption, provisioning, collector, loops, nodes
                ),
            )
            metrics_server = MetricsServer(metrics.registry, settings.metrics_port)
            metrics_server.start()
            probes = worker_probes(settings.health_probe_port, client, worker, leases, catalog)
            if probes is not None:
                await probes.start()
            leaving = asyncio.Event()  # set however this coroutine ends, `stop` or not
            election = asyncio.create_task(elector.run(leaving), name="leader-election")
            log.info("worker %s up on task queue %r", identity, settings.task_queue)
            try:
                await stop.wait()
            finally:
                leaving.set()
                await election  # cancels the leader's work, then releases the Lease
                warm_catalog.cancel()
                prices_stop.set()
                if probes is not None:
                    await probes.close()
                metrics_server.close()
    log.info("worker stopped")
