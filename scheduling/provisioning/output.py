"""A planned claim as the plan reports it."""

from __future__ import annotations

from apis.labels import CAPACITY_TYPE, HOSTNAME, INSTANCE_TYPE, NODEPOOL, ZONE
from apis.values.quantity import format_resource_list
from scheduling.constraints.requirements import Req, Requirements
from scheduling.provisioning.catalog import OFFERING_KEYS, Option
from scheduling.provisioning.targets import Claim
from scheduling.types import PlannedNodeClaim

MAX_INSTANCE_TYPES = 60
INF = float("inf")


def domain_values(key: str, reqs: Requirements, options: list[Option]) -> set[str]:
    if key in OFFERING_KEYS:
        values = {offer.value(key) for o in options for offer in o.compatible_offers(reqs)}
        return {v for v in values if v is not None}
    finite = reqs.get_req(key).finite()
    if finite is not None:
        return set(finite)
    return {o.labels[key] for o in options if key in o.labels}


def planned_claim(claim: Claim, prices: list[float]) -> PlannedNodeClaim:
    """The claim as the plan reports it: up to 60 options cheapest first (more if minValues needs them),
    requirements narrowed to those options' types, zones and capacity types, single values as labels."""
    options = claim.pool.matrix.options
    priced = sorted(
        ((prices[row], options[row]) for row in claim.rows.tolist() if prices[row] != INF),
        key=lambda po: (po[0], po[1].name),
    )
    chosen = priced[:MAX_INSTANCE_TYPES]
    mins = {k: r.min_values for k, r in claim.reqs.items() if r.min_values}
    if mins and len(priced) > MAX_INSTANCE_TYPES:
        for extra in priced[MAX_INSTANCE_TYPES:]:
            if all(claim.distinct_values(k, [o for _, o in chosen]) >= m for k, m in mins.items()):
                break
            chosen.append(extra)
    chosen_options = [o for _, o in chosen]
    reqs = claim.reqs.with_req(INSTANCE_TYPE, Req.from_operator("In", [o.name for o in chosen_options]))
    offers = [offer for o in chosen_options for offer in o.compatible_offers(claim.reqs)]
    reqs = reqs.with_req(ZONE, Req.from_operator("In", {o.zone for o in offers}))
    reqs = reqs.with_req(CAPACITY_TYPE, Req.from_operator("In", {o.capacity_type for o in offers}))
    api_reqs = reqs.to_api()
    for entry in api_reqs:
        if entry.key in mins and entry.min_values is None:
            entry.min_values = mins[entry.key]
    template = claim.pool.api.spec.template
    labels = dict(template.metadata.labels)
    for key, req in reqs.items():
        value = req.single()
        if value is not None and key != HOSTNAME:
            labels[key] = value
    labels[NODEPOOL] = claim.pool.name
    return PlannedNodeClaim(
        node_pool=claim.pool.name,
        node_class=claim.pool.node_class,
        instance_types=[o.name for o in chosen_options],
        requirements=api_reqs,
        pods=claim.pods,
        price=chosen[0][0] if chosen else 0.0,
        requests=format_resource_list(claim.used_resources()),
        labels=dict(sorted(labels.items())),
        taints=list(template.spec.taints),
        startup_taints=list(template.spec.startup_taints),
        min_values_relaxed=claim.min_values_relaxed,
    )
