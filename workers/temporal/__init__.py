"""The worker's Temporal plumbing: connecting (client, with its TLS files and its one-line connection
errors), the data converter (payload_converter) and workflow runner it runs with, the build id it reports,
the start-up checks of its namespace (search_attribute_check, namespace_owner) and the starter through which
the watchers, the activities and the leader's loops start and signal workflows. Modules are imported by
name (`from workers.temporal.client import connect`); nothing here imports the command line."""

__all__ = [
    "build_id",
    "client",
    "errors",
    "namespace_owner",
    "payload_converter",
    "search_attribute_check",
    "starter",
    "tls",
    "workflow_runner",
]
