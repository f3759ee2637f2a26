"""The embedded Kubernetes API emulator of ``nodeflow dev`` (kmock-based, real HTTP).

Entry points: ``devstack.kube.server.KubeApiServer``, ``devstack.kube.kubeconfig.write_kubeconfig``
and ``python -m devstack.kube``. See ``emulator`` for fault injection.
"""
