"""The Karpenter v1 API models and everything pure around them.

Models: `nodepool` (NodePool), `nodeclaim` (NodeClaim), `ec2nodeclass` (EC2NodeClass), `instancetype`
(the instance-type catalog and EKS overhead formulas), with shared pieces in `meta`, `requirements` and
`labels`, and the value syntaxes (quantities, durations, label and taint strings) in `values`. `errors`
turns validation failures into field-level problems, `manifests` reads YAML manifests into models, and
`crds` generates the CRDs in deploy/crds.
No I/O library is imported here (checked by import-linter).
"""
