"""The NodeClaim workflow's phases (workflows.nodeclaim.NodeClaimWorkflow calls them in order): `launch`,
`registration`, `initialization`, `running`, and `termination` (drain, then terminate). Each phase is a
plain async function over the run's `ClaimRun` (`claim`: what the run knows and what signals asked),
which it mutates and whose `state.phase` it moves on; `claim` holds the helpers they share (activities
on the claim's identity, durable sleeps, signals to other workflows, continue-as-new's input) and
`fleet_view` the search attributes and memo. Deterministic: only workflow APIs, no I/O."""
