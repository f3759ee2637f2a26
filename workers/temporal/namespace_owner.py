"""One cluster per Temporal namespace: the worker refuses to serve a namespace another cluster uses.

Workflow ids are fixed per namespace ("provisioner", "disruption", "garbage-collector",
"nodeclaim-<name>"), so two clusters in one namespace would share them and each worker would run the
other cluster's activities with its own Kubernetes and AWS clients (the garbage collector terminating
the other cluster's instances as leaked). The namespace's owner is recorded in the memo (key
OWNER_MEMO) of the garbage collector, the singleton that runs for as long as the cluster has a
worker; the memo survives its continue-as-new.

`claim_namespace` runs before the worker polls or touches any workflow: it starts the collector with
this cluster's name in the memo when it is not running (id conflict policy USE_EXISTING, so of two
workers racing, one wins), then reads the running collector's memo. Another cluster's name there is a
TemporalSettingError, and so is no name at all: every nodeflow start of the collector records one, so a
collector without it was started some other way (by hand), and whose instances it would judge is unknown.
The owner changes only once the collector is gone (terminated, or the namespace emptied).
"""

from __future__ import annotations

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.common import WorkflowIDConflictPolicy
from temporalio.service import RPCError, RPCStatusCode

from workers.settings import Settings, where, whole_seconds
from workers.temporal.errors import TemporalSettingError
from workflows.garbage_collection import OWNER_MEMO, WORKFLOW_ID, GarbageCollectorState, GarbageCollectorWorkflow


async def namespace_owner(client: Client) -> tuple[bool, str | None]:
    """Whether the garbage collector is running, and the cluster its memo names (None: no owner recorded)."""
    try:
        description = await client.get_workflow_handle(WORKFLOW_ID).describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False, None
        raise
    if description.status != WorkflowExecutionStatus.RUNNING:
        return False, None
    owner = await description.memo_value(OWNER_MEMO, None)
    return True, str(owner) if owner is not None else None


async def claim_namespace(client: Client, settings: Settings) -> None:
    """Make sure the namespace is this cluster's (see the module docstring); TemporalSettingError naming
    `cluster_name` and `temporal_namespace` when it is another cluster's."""
    running, owner = await namespace_owner(client)
    if not running:
        await client.start_workflow(
            GarbageCollectorWorkflow.run,
            GarbageCollectorState(
                interval_seconds=whole_seconds(settings.garbage_collection_interval),
                min_age_seconds=whole_seconds(settings.garbage_collection_min_age),
            ),
            id=WORKFLOW_ID,
            task_queue=settings.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            memo={OWNER_MEMO: settings.cluster_name},
        )
        running, owner = await namespace_owner(client)
    if owner is None:
        raise TemporalSettingError(
            f"{where('temporal_namespace')}: workflow {WORKFLOW_ID} in namespace {settings.temporal_namespace!r} "
            f"at {settings.temporal_address} names no cluster in its memo ({OWNER_MEMO!r}), so it was not started "
            f"by a nodeflow worker: terminate it (temporal workflow terminate --workflow-id {WORKFLOW_ID}) or "
            "give this cluster its own namespace"
        )
    if owner != settings.cluster_name:
        raise TemporalSettingError(
            f"{where('temporal_namespace')}: namespace {settings.temporal_namespace!r} at "
            f"{settings.temporal_address} belongs to cluster {owner!r} (memo of workflow {WORKFLOW_ID}), and "
            f"{where('cluster_name')} is {settings.cluster_name!r}: give each cluster its own namespace"
        )
