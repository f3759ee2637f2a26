"""Spot NodePools, workloads and lookups shared by the interruption tests (test_interruption.py on the
shared stack, the chaos case in test_chaos.py)."""

from __future__ import annotations

from tests.e2e.conftest import deployment

POOL = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot}
spec:
  template:
    spec:
      taints: [{key: pool, value: spot, effect: NoSchedule}]
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: ["spot"]}
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
"""
SPOT_PODS = (
    "      nodeSelector: {karpenter.sh/nodepool: spot}\n"
    "      tolerations: [{key: pool, value: spot, effect: NoSchedule}]"
)
APP = deployment("spot-app", 1, cpu="500m", memory="512Mi", extra_spec=SPOT_PODS)
SPREAD_APP = deployment(
    "spread-app", 3, cpu="500m", memory="512Mi",
    extra_spec=SPOT_PODS + "\n      affinity:\n        podAntiAffinity:\n"
    "          requiredDuringSchedulingIgnoredDuringExecution:\n"
    "            - {labelSelector: {matchLabels: {app: spread-app}}, topologyKey: kubernetes.io/hostname}",
)  # fmt: skip
NODECLAIM_LIST = "^/apis/karpenter.sh/v1/nodeclaims$"
