"""The Kubernetes API error tree: HTTP statuses translated once, at the boundary.

Callers branch on these types, never on status codes. `TooManyRequestsError` from an eviction is a
normal outcome (a PodDisruptionBudget said not yet): wait and retry. `ConflictError` means the object
changed since it was read: read again and re-apply.
"""

from __future__ import annotations


class KubeError(Exception):
    """Any Kubernetes API failure. `retryable` says whether the same call may succeed later."""

    retryable: bool = True
    status: int = 0

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class NotFoundError(KubeError):
    retryable = False
    status = 404


class AlreadyExistsError(KubeError):
    retryable = False
    status = 409


class ConflictError(KubeError):
    """Stale resourceVersion (409 Conflict)."""

    retryable = True
    status = 409


class TooManyRequestsError(KubeError):
    """429: throttled, or an eviction refused by a PodDisruptionBudget."""

    retryable = True
    status = 429


class InvalidError(KubeError):
    """400/422: the object or patch is malformed. Not retryable."""

    retryable = False
    status = 422


class ForbiddenError(KubeError):
    retryable = False
    status = 403


class ServerError(KubeError):
    """5xx or a broken connection: retryable."""

    retryable = True
    status = 500
