"""Karpenter's own example manifests, every one applied together on the local stack with the example
workloads: does each NodePool provision or say on its own status why it cannot, and does any example
stop another?

    .venv/bin/python benchmarks/karpenter_examples.py --examples DIR [--timeout 300] [--state-dir DIR]

DIR is a copy of Karpenter's AWS examples (`examples/v1` in the karpenter-provider-aws repository): the
NodePool/EC2NodeClass files at its top level and the Deployments in `workloads/`. Those examples are
written to be applied one at a time, and many reuse the names `default` or `al2`; applied together as
they are, later files would overwrite earlier ones. So the objects of each file are renamed after the
file (`spot.yaml`'s NodePool `spot` and EC2NodeClass `default` become `spot` and `spot`; a file with
several objects of a kind gets `<file>-<name>`), and each NodePool's `nodeClassRef` follows its file's
renaming. Files with objects of other providers (Karpenter core's KWOK examples) are skipped and
listed. The workloads are applied as they are: they pick nodes by labels (arch, capacity type), not by
pool name.

One JSON object on stdout, progress on stderr:

- `files`: per example file, the API server's refusals and the validation problems of its objects (an
  example Karpenter itself would refuse shows here, with the field);
- `nodePools`: per NodePool, its NodeClaims (launched, and with a Ready node), its `Ready` condition
  and, when not ready, the reason and message on its status; `nodeClasses` likewise;
- `pods`: total, bound, pending (pending ones by name, with the scheduler's reason when the emulator set
  one);
- `verdict`: for every NodePool `provisioned`, `ready` (valid, nothing asked for it), `reported` (not
  ready, with a reason on its status) or `another provider's` (its nodeClassRef is not an EC2NodeClass:
  left alone, as Karpenter's AWS provider does); `silent` when a pool is none of these, which fails the
  check.

Exit status 0 when every pod is bound (or pending with a reason) and no NodePool is `silent` before
`--timeout`, else 1.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import yaml

if __package__ in (None, ""):  # run as `python benchmarks/karpenter_examples.py`: make the project importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.scale import state_directory

AWS_KINDS = {("karpenter.sh/v1", "NodePool"), ("karpenter.k8s.aws/v1", "EC2NodeClass")}


def renamed(stem: str, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The file's documents with each NodePool and EC2NodeClass named after the file (see the module
    docstring); NodePools' nodeClassRef names follow. Other documents are returned unchanged."""
    per_kind = Counter(str(d.get("kind")) for d in documents)
    names: dict[tuple[str, str], str] = {}
    for document in documents:
        kind, name = str(document.get("kind")), str((document.get("metadata") or {}).get("name"))
        names[(kind, name)] = stem if per_kind[kind] == 1 else f"{stem}-{name}"[:63].rstrip("-")
    out: list[dict[str, Any]] = []
    for document in documents:
        copy = json.loads(json.dumps(document))
        kind = str(copy.get("kind"))
        if (str(copy.get("apiVersion")), kind) in AWS_KINDS:
            copy["metadata"]["name"] = names[(kind, str(copy["metadata"]["name"]))]
        if kind == "NodePool":
            ref = ((copy.get("spec") or {}).get("template") or {}).get("spec", {}).get("nodeClassRef") or {}
            if ("EC2NodeClass", str(ref.get("name"))) in names:
                ref["name"] = names[("EC2NodeClass", str(ref["name"]))]
        out.append(copy)
    return out


def example_files(directory: Path) -> tuple[dict[str, str], list[str]]:
    """file name -> the renamed manifest text, for every AWS example; and the files skipped."""
    texts: dict[str, str] = {}
    skipped: list[str] = []
    for path in sorted(directory.glob("*.yaml")):
        documents = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
        if any((str(d.get("apiVersion")), str(d.get("kind"))) not in AWS_KINDS for d in documents):
            skipped.append(path.name)
            continue
        texts[path.name] = yaml.safe_dump_all(renamed(path.stem, documents), sort_keys=False)
    return texts, skipped


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), None)


def report(stack: Any) -> dict[str, Any]:
    """The NodePools, EC2NodeClasses and pods as they are now, with a verdict per NodePool."""
    from apis.nodepool import is_managed
    from kube import resources as r

    claims = stack.kube.list(r.NODECLAIM)
    pools: dict[str, Any] = {}
    verdicts: dict[str, str] = {}
    for pool in stack.kube.list(r.NODEPOOL):
        name = pool["metadata"]["name"]
        mine = [c for c in claims if (c["metadata"].get("labels") or {}).get("karpenter.sh/nodepool") == name]
        ready = condition(pool, "Ready") or {}
        launched = sum(1 for c in mine if (c.get("status") or {}).get("providerID"))
        with_node = sum(1 for c in mine if (condition(c, "Ready") or {}).get("status") == "True")
        pools[name] = {
            "nodeClaims": len(mine), "launched": launched, "ready": with_node,
            "Ready": ready.get("status"), "reason": ready.get("reason"), "message": ready.get("message"),
        }  # fmt: skip
        if not is_managed(pool):
            verdicts[name] = "another provider's"
        elif launched:
            verdicts[name] = "provisioned"
        elif ready.get("status") == "True":
            verdicts[name] = "ready"
        elif ready.get("status") == "False" and ready.get("message"):
            verdicts[name] = "reported"
        else:
            verdicts[name] = "silent"
    classes = {}
    for node_class in stack.kube.list(r.EC2NODECLASS):
        ready = condition(node_class, "Ready") or {}
        classes[node_class["metadata"]["name"]] = {
            "Ready": ready.get("status"), "reason": ready.get("reason"), "message": ready.get("message"),
        }  # fmt: skip
    pods = stack.kube.list(r.POD)
    pending = {p["metadata"]["name"]: _unschedulable_reason(p) for p in pods if not p["spec"].get("nodeName")}
    return {
        "nodePools": pools,
        "nodeClasses": classes,
        "pods": {"total": len(pods), "bound": len(pods) - len(pending), "pending": pending},
        "verdict": verdicts,
    }


def _unschedulable_reason(pod: dict[str, Any]) -> str | None:
    scheduled = next(
        (c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == "PodScheduled"), {}
    )
    return scheduled.get("message")


def finished(state: dict[str, Any]) -> bool:
    """Every pod bound or pending with a reason, and no NodePool silent."""
    quiet = all(state["pods"]["pending"].values())
    return quiet and "silent" not in state["verdict"].values() and bool(state["verdict"])


def run(examples: Path, timeout: float, state_dir: Path | None) -> dict[str, Any]:
    from devstack.stack import DevStack
    from workers.cli.dev import stack_config

    texts, skipped = example_files(examples)
    workloads = sorted((examples / "workloads").glob("*.yaml"))
    with state_directory(state_dir) as state, DevStack(stack_config(state_dir=state, ui=False)) as stack:
        started = time.monotonic()
        files = {name: stack.apply_text(text, name) for name, text in texts.items()}
        for path in workloads:
            files[f"workloads/{path.name}"] = stack.apply_text(path.read_text(), f"workloads/{path.name}")
        print(f"applied {len(texts)} examples and {len(workloads)} workloads", file=sys.stderr)
        current = report(stack)
        settle_deadline = started + timeout
        while time.monotonic() < settle_deadline:
            summary = stack.summary()
            current = report(stack)
            if summary["settled"] and finished(current):
                break
            time.sleep(2.0)
        return {
            "files": {name: problems for name, problems in files.items() if problems},
            "skipped": skipped,
            **current,
            "seconds": round(time.monotonic() - started, 1),
            "ok": finished(current),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=Path, required=True, help="Karpenter's AWS examples directory")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the stack to settle")
    parser.add_argument("--state-dir", type=Path, default=None, help="keep the stack's logs here")
    args = parser.parse_args(argv)
    if not (args.examples / "workloads").is_dir():
        parser.error(f"--examples {args.examples}: no workloads/ directory there; pass Karpenter's examples/v1")
    result = run(args.examples, args.timeout, args.state_dir)
    print(json.dumps(result, indent=2))
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
