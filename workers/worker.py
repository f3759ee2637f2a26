"""The worker process: the composition root that builds the real clients and runs the Temporal worker
plus the Kubernetes watchers until asked to stop. Scale out by running more of these on one task queue
(the watchers are idempotent triggers, so several replicas only send duplicate, harmless signals)."""

from __future__ import annotations

import asyncio
import logging
import threading
from concurrent.futures import ThreadPoolExecutor

from temporalio.worker import Worker

from activities.disruption import DisruptionActivities
from activities.disruption_execution import DisruptionExecution
from activities.garbage_collection import GarbageCollectionActivities
from activities.lifecycle import node_claim_activities
from activities.manual_replacement import ManualReplacement
from activities.provisioning import ProvisioningActivities
from cloudprovider.aws.factory import new_aws_cloud_provider, resolve_eks_cluster
from cloudprovider.types import CloudProvider
from kube.client import KubeClient
from kube.events import EventRecorder
from workers.namespace_owner import claim_namespace
from workers.reconcile import adopt_node_claims, end_orphaned_workflows
from workers.settings import Settings
from workers.starter import TemporalStarter
from workers.temporal_client import connect
from workers.watchers import DeletionWatcher, DriftTrigger, PodWatcher, Resync
from workflows.disruption import DisruptionControllerWorkflow, DisruptionSettings, start_disruption_controller
from workflows.garbage_collection import GarbageCollectorSettings, GarbageCollectorWorkflow, start_garbage_collector
from workflows.nodeclaim import NodeClaimWorkflow
from workflows.provisioner import ProvisionerWorkflow

log = logging.getLogger(__name__)
ACTIVITY_THREADS = 32


def _warm_catalog(cloud: CloudProvider) -> None:
    try:
        count = len(cloud.instance_types(None))
        log.info("instance type catalog loaded: %d types", count)
    except Exception:
        log.exception("loading the instance type catalog failed; the first provisioning round retries")


def build_kube(settings: Settings) -> KubeClient:
    return KubeClient.from_kubeconfig(settings.kubeconfig) if settings.kubeconfig else KubeClient.in_cluster()


async def run_worker(settings: Settings, stop: asyncio.Event) -> None:
    """Run until `stop` is set. Refuses (TemporalSettingError) a bad connection and a namespace another
    cluster uses (workers.namespace_owner); reads what nodes need to join the cluster (settings, else
    eks:DescribeCluster; raises CloudProviderError when neither gives it); ends NodeClaim workflows whose
    NodeClaim is gone and adopts NodeClaims without a workflow (workers.reconcile); then serves workflows
    and activities."""
    client = await connect(settings)
    await claim_namespace(client, settings)  # before anything touches a workflow: one cluster per namespace
    kube = build_kube(settings)
    cluster = await asyncio.to_thread(
        resolve_eks_cluster,
        settings.region,
        settings.aws_endpoint_url,
        cluster_name=settings.cluster_name,
        cluster_endpoint=settings.cluster_endpoint,
        cluster_ca_bundle=settings.cluster_ca_bundle,
        cluster_service_cidr=settings.cluster_service_cidr,
    )
    log.info(
        "cluster %s: endpoint %s, service CIDR %s, DNS IP %s",
        cluster.name, cluster.endpoint or "(none)", cluster.service_cidr or "(none)", cluster.dns_ip or "(none)",
    )  # fmt: skip
    cloud = new_aws_cloud_provider(
        settings.region,
        settings.aws_endpoint_url,
        cluster_name=settings.cluster_name,
        cluster=cluster,
        kubernetes_version=settings.kubernetes_version,
    )
    recorder = EventRecorder(kube)
    loop = asyncio.get_running_loop()
    starter = TemporalStarter(
        client, settings.task_queue, loop, settings.registration_ttl, settings.drift_check_interval
    )
    provisioning = ProvisioningActivities(kube, cloud, recorder, starter)
    collector = GarbageCollectionActivities(kube, cloud)
    disruption = DisruptionActivities(kube, cloud, recorder)
    execution = DisruptionExecution(kube, recorder, starter)
    manual = ManualReplacement(kube, recorder, starter)
    watch_stop = threading.Event()
    with ThreadPoolExecutor(max_workers=ACTIVITY_THREADS, thread_name_prefix="activity") as executor:
        worker = Worker(
            client,
            task_queue=settings.task_queue,
            workflows=[ProvisionerWorkflow, NodeClaimWorkflow, GarbageCollectorWorkflow, DisruptionControllerWorkflow],
            activities=[
                *node_claim_activities(kube, cloud, recorder, settings.cluster_name),
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
        )
        async with worker:
            # The first catalog read (DescribeInstanceTypes, offerings, spot prices) takes seconds; pay it
            # now rather than in the first provisioning round.
            warm_catalog = asyncio.create_task(asyncio.to_thread(_warm_catalog, cloud))
            await end_orphaned_workflows(client, kube, cloud)
            adopted = await adopt_node_claims(kube, starter)
            log.info("worker up on task queue %r; %d NodeClaims adopted", settings.task_queue, adopted)
            await starter.signal_provisioner()
            await start_garbage_collector(
                client,
                settings.task_queue,
                GarbageCollectorSettings(
                    interval_seconds=settings.seconds("garbage_collection_interval"),
                    min_age_seconds=settings.seconds("garbage_collection_min_age"),
                ),
            )
            disruption_settings = DisruptionSettings(executable_methods=settings.disruption_method_list())
            await start_disruption_controller(client, settings.task_queue, disruption_settings)
            threads = [
                threading.Thread(target=w.run, args=(watch_stop,), name=type(w).__name__, daemon=True)
                for w in (
                    PodWatcher(kube, starter, loop),
                    DeletionWatcher(kube, starter, loop),
                    DriftTrigger(kube, starter, loop),
                    Resync(starter, loop),
                )
            ]
            for thread in threads:
                thread.start()
            try:
                await stop.wait()
            finally:
                watch_stop.set()
                warm_catalog.cancel()
    log.info("worker stopped")
