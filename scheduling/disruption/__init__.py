"""Karpenter v1's disruption decision, pure: `decide(DisruptionInput) -> Decision`.

`pool_budget(pool, nodes, now)` answers how many more of a pool's nodes each reason may disrupt now, and
which budget says so. See `scheduling.disruption.decide` for the methods and their order.
"""

from scheduling.disruption.budgets import pool_budget
from scheduling.disruption.decide import decide
from scheduling.disruption.model import (
    BudgetLimit,
    CandidateRef,
    Command,
    Decision,
    DisruptionInput,
    Limits,
    PoolBudget,
    Rejection,
)

__all__ = [
    "BudgetLimit",
    "CandidateRef",
    "Command",
    "Decision",
    "DisruptionInput",
    "Limits",
    "PoolBudget",
    "Rejection",
    "decide",
    "pool_budget",
]
