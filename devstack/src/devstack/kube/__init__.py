"""The embedded Kubernetes API emulator of ``nodeflow dev`` (kmock-based, real HTTP).

Entry points: ``devstack.kube.server.KubeApiServer`` (run it in a thread; ``.url``,
``.emulator``, ``.call(fn)``), ``devstack.kube.kubeconfig.write_kubeconfig`` and
``python -m devstack.kube --host H --port P [--kubeconfig PATH]``. Fault injection: see
``devstack.kube.emulator``.

Where a module lives: ``catalog`` (served resources), ``routing`` (paths), ``verbs`` (REST verbs),
``bookkeeping`` (server-owned metadata), ``store`` (objects, resourceVersion, watch history),
``watch``, ``selectors``, ``patches`` / ``strategic_merge``, ``disruption`` (PDB + eviction),
``subresources`` (binding, scale), ``discovery``, ``tables`` (kubectl get), ``controllers/``.

Deliberate differences from a real kube-apiserver 1.32:

- ``spec.taints`` is an atomic list under strategic merge, exactly as in the real NodeSpec
  (the only way ``kubectl taint k:NoSchedule-`` can remove one taint of several). Remove a
  taint by sending the whole remaining list, or with a JSON patch.
- Deletion is immediate (no graceful pod termination): a pod without finalizers disappears on
  DELETE or eviction; ``deletionGracePeriodSeconds`` is recorded for objects with finalizers.
- Foreground deletion is treated as background; Orphan is honoured.
- No admission, defaulting or schema validation (CRDs are not validated against their
  openAPIV3Schema); ``dryRun`` and server-side apply are refused with 400 / 415.
- Strategic merge patch is refused on custom resources (415), like the real API.
- Deployments roll out by scaling the old ReplicaSet to zero at once (no surge pacing);
  StatefulSets and DaemonSets are stored but not reconciled.
- Namespace deletion is immediate and its contents follow (no Terminating phase).
"""
