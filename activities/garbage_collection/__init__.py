"""Garbage collection, both ways: instances whose NodeClaim is gone and NodeClaims whose instance is gone.
What counts as garbage is judged in predicates (pure, on one reading of the instances, NodeClaims and
Nodes); the garbage collector workflow's rounds run in collector; the leader's survey asks for a round
only when it finds something to collect (survey)."""

__all__ = ["collector", "predicates", "survey"]
