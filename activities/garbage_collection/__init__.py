"""Garbage collection, both ways: instances whose NodeClaim is gone and NodeClaims whose instance is gone.
What counts as garbage is judged in predicates (pure, on one reading of the instances, NodeClaims and
Nodes); the garbage collector workflow's rounds run in collector."""

__all__ = ["collector", "predicates"]
