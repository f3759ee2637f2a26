"""Expiration, as Karpenter v1's: a NodeClaim expires once its creationTimestamp + spec.expireAfter has
passed (`expireAfter: Never` turns it off). The leader's claim sweep (activities.nodeclaim.sweep) finds the
expired claims and signals their workflows `expire`; the workflow marks the claim Expired, drains and
terminates it. Pure."""

from __future__ import annotations

from datetime import datetime

from apis.meta import parse_rfc3339
from apis.values.duration import parse_duration
from kube.types import Obj

EXPIRED = "expired"  # the sweep's finding for a claim past its expireAfter


def expire_after(claim: Obj) -> str:
    """The claim's spec.expireAfter, Karpenter's default 720h when absent."""
    return str((claim.get("spec") or {}).get("expireAfter") or "720h")


def expiry(claim: Obj) -> datetime | None:
    """When the claim expires: its creationTimestamp + expire_after(claim). None with `expireAfter: Never`,
    or when either is missing or does not parse (the API server validates both, so that is an object the
    sweep cannot judge and leaves alone)."""
    created = parse_rfc3339(claim["metadata"].get("creationTimestamp"))
    try:
        lifetime = parse_duration(expire_after(claim))
    except ValueError:
        return None
    return created + lifetime if created is not None and lifetime is not None else None


__all__ = ["EXPIRED", "expire_after", "expiry"]
