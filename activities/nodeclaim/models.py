"""Payloads shared by the NodeClaim lifecycle activities of every phase: which claim (and Node) an
activity acts for. Each phase's own payloads live in its module (activities.nodeclaim.launch, .registration,
.initialization, .running, .replace, .termination).

They are recorded in workflow histories: see README, "Versioning", before renaming or removing a field.
"""

from __future__ import annotations

from pydantic import BaseModel


class ClaimRef(BaseModel):
    """A NodeClaim by name and, when the workflow recorded it at start, `metadata.uid`: a NodeClaim with
    the name and another uid is not this claim (activities.nodeclaim.ownership)."""

    name: str
    uid: str = ""


class ClaimIdentity(ClaimRef):
    """The claim an activity acts for and how to recognise its Node: `spec.providerID` is the claim's
    instance, and `node_uid` the Node's uid recorded at registration (activities.nodeclaim.ownership)."""

    provider_id: str = ""
    node_name: str = ""
    node_uid: str = ""
