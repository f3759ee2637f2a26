"""The embedded Kubernetes API emulator of ``nodeflow dev`` (kmock-based, real HTTP).

Entry points: ``devstack.kube.server.KubeApiServer`` (run it in a thread; ``.url``,
``.emulator``, ``.call(fn)``), ``devstack.kube.kubeconfig.write_kubeconfig`` and
``python -m devstack.kube --host H --port P [--kubeconfig PATH]``. Fault injection: see
``devstack.kube.emulator``.

Where a module lives: ``catalog`` (served resources), ``routing`` (paths), ``verbs`` (REST verbs),
``bookkeeping`` (server-owned metadata), ``store`` (objects, resourceVersion, watch history),
``watch``, ``selectors``, ``patches`` / ``strategic_merge``, ``disruption`` (PDB + eviction),
``subresources`` (binding, scale), ``discovery``, ``tables`` (kubectl get), ``defaulting``
(structural defaults from CRD schemas), ``validation`` and ``cel`` (the CRDs' CEL rules),
``controllers/``.

Deliberate differences from a real kube-apiserver 1.32:

- ``spec.taints`` is an atomic list under strategic merge, exactly as in the real NodeSpec
  (the only way ``kubectl taint k:NoSchedule-`` can remove one taint of several). Remove a
  taint by sending the whole remaining list, or with a JSON patch.
- Deletion is immediate (no graceful pod termination): a pod without finalizers disappears on
  DELETE or eviction; ``deletionGracePeriodSeconds`` is recorded for objects with finalizers.
- Foreground deletion is treated as background; Orphan is honoured.
- No admission and no schema validation (custom resources are not validated against their
  openAPIV3Schema's types, patterns or required fields, and nothing is pruned but ``null`` values
  the schema does not admit); ``dryRun`` and server-side apply are refused with 400 / 415. The
  CRDs' CEL rules (``x-kubernetes-validations``) are evaluated, with cel-python, on create and update
  (422 Invalid); rules cel-python cannot run are skipped (see ``cel``), and unchanged subtrees are not
  rechecked (ratcheting).
- Structural defaults come from stored ``CustomResourceDefinition`` objects (``kubectl apply -f
  deploy/crds/``; ``DevStackConfig.crds`` applies them at start), on every create and update, and
  are not applied when objects are read: an object stored before its CRD gets them on its next
  write. Built-in kinds get no defaults beyond the status a new object starts with.
- The custom resources served are fixed (``catalog``): creating or deleting a CRD changes only the
  schemas used for defaulting, never the endpoints, and deleting a CRD keeps its objects. A new CRD
  is Established at once.
- Strategic merge patch is refused on custom resources (415), like the real API.
- Deployments roll out by scaling the old ReplicaSet to zero at once (no surge pacing);
  StatefulSets and DaemonSets are stored but not reconciled.
- Namespace deletion is immediate and its contents follow (no Terminating phase).
"""
