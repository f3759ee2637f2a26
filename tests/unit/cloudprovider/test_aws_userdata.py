"""User data per AMI family, parsed the way each AMI reads it: MIME parts, then the nodeadm NodeConfig
(YAML), the bootstrap.sh command line (shlex) or the Bottlerocket settings (TOML)."""

from __future__ import annotations

import dataclasses
import shlex
import tomllib

import pytest
import yaml

from apis.ec2nodeclass import KubeletConfiguration
from cloudprovider.aws.launch.userdata import BootstrapOptions, render
from tests.userdata_parsing import bootstrap_argv, bottlerocket_kubernetes, flag, mime_parts, node_config

CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMuLi4KLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="
OPTIONS = BootstrapOptions(
    cluster_name="prod",
    cluster_endpoint="https://example.eks.amazonaws.com",
    ca_bundle=CA,
    service_cidr="10.100.0.0/16",
    dns_ip="10.100.0.10",
    labels={"team": "a", "karpenter.sh/nodepool": "default"},
    taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}],
    kubelet=KubeletConfiguration(max_pods=50),
)
IPV6 = BootstrapOptions(
    cluster_name="prod6",
    cluster_endpoint="https://six.eks.amazonaws.com",
    ca_bundle=CA,
    service_cidr="fd30:1c53:5f8a::/108",
    dns_ip="fd30:1c53:5f8a::a",
    ip_family="ipv6",
)


def test_al2023_node_config_carries_everything_a_node_needs_to_join() -> None:
    config = node_config(render("AL2023", OPTIONS))
    assert config["spec"]["cluster"] == {
        "name": "prod",
        "apiServerEndpoint": "https://example.eks.amazonaws.com",
        "certificateAuthority": CA,
        "cidr": "10.100.0.0/16",
    }
    kubelet = config["spec"]["kubelet"]
    assert kubelet["config"] == {"clusterDNS": ["10.100.0.10"], "maxPods": 50}
    assert "--node-labels=karpenter.sh/nodepool=default,team=a" in kubelet["flags"]
    assert "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute" in kubelet["flags"]


def test_al2023_ipv6_and_the_node_classs_cluster_dns_wins() -> None:
    config = node_config(render("AL2023", IPV6))
    assert config["spec"]["cluster"]["cidr"] == "fd30:1c53:5f8a::/108"
    assert config["spec"]["kubelet"]["config"]["clusterDNS"] == ["fd30:1c53:5f8a::a"]
    custom = BootstrapOptions(**{**OPTIONS.__dict__, "kubelet": KubeletConfiguration(cluster_dns=["10.0.0.53"])})
    assert node_config(render("AL2023", custom))["spec"]["kubelet"]["config"]["clusterDNS"] == ["10.0.0.53"]


# Karpenter's own example (al2023-custom-userdata.yaml): a MIME document with a NodeConfig and a script,
# its last delimiter not closed.
KARPENTER_AL2023_EXAMPLE = """MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

# Example custom nodeconfig which mounts individual drives on an instance
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  instance:
    localStorage:
      strategy: Mount

--//
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "Hello, AL2023!"
--//
"""


def with_user_data(user_data: str) -> BootstrapOptions:
    return BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": user_data})


def test_al2023_puts_its_node_config_first_and_each_part_of_the_users_mime_after_it() -> None:
    parts = mime_parts(render("AL2023", with_user_data(KARPENTER_AL2023_EXAMPLE)))
    assert [kind for kind, _ in parts] == ["application/node.eks.aws", "application/node.eks.aws", "text/x-shellscript"]
    assert yaml.safe_load(parts[1][1])["spec"]["instance"]["localStorage"] == {"strategy": "Mount"}
    assert parts[2][1].strip() == '#!/bin/bash\necho "Hello, AL2023!"'
    assert node_config(render("AL2023", with_user_data(KARPENTER_AL2023_EXAMPLE)))["spec"]["cluster"]["name"] == "prod"


def test_al2023_takes_plain_user_data_as_a_node_config_when_it_is_yaml_else_as_a_script() -> None:
    yaml_config = "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {kubelet: {config: {maxPods: 20}}}\n"
    parts = mime_parts(render("AL2023", with_user_data(yaml_config)))
    assert [kind for kind, _ in parts] == ["application/node.eks.aws", "application/node.eks.aws"]
    assert yaml.safe_load(parts[1][1])["spec"]["kubelet"]["config"]["maxPods"] == 20
    parts = mime_parts(render("AL2023", with_user_data("#!/bin/bash\necho hi\n")))
    assert [kind for kind, _ in parts] == ["application/node.eks.aws", "text/x-shellscript"]
    assert "echo hi" in parts[1][1]


def test_al2_puts_each_part_of_the_users_mime_before_the_bootstrap_script() -> None:
    parts = mime_parts(render("AL2", with_user_data(KARPENTER_AL2023_EXAMPLE)))
    assert [kind for kind, _ in parts] == ["application/node.eks.aws", "text/x-shellscript", "text/x-shellscript"]
    assert "/etc/eks/bootstrap.sh" in parts[2][1]
    plain = mime_parts(render("AL2", with_user_data("kind: NotAScriptButStillOne\n")))
    assert [kind for kind, _ in plain] == ["text/x-shellscript", "text/x-shellscript"]


def test_a_user_part_holding_our_delimiter_gets_another_boundary() -> None:
    users = 'Content-Type: multipart/mixed; boundary="XYZ"\n\n--XYZ\nContent-Type: text/x-shellscript\n\n'
    users += "#!/bin/bash\ncat <<EOF\n--//\nEOF\n--XYZ--\n"
    parts = mime_parts(render("AL2", with_user_data(users)))
    assert len(parts) == 2
    assert "--//" in parts[0][1]


@pytest.mark.parametrize(
    ("user_data", "message"),
    [
        ("MIME-Version: 1.0\nContent-Type: text/x-shellscript\n\necho hi\n", "is not a multipart document"),
        (
            'Content-Type: multipart/mixed; boundary="A"\n\n--A\nContent-Type: multipart/mixed; boundary="B"\n\n'
            "--B\nContent-Type: text/plain\n\nx\n--B--\n--A--\n",
            "multipart part inside a multipart document",
        ),
    ],
)
def test_user_data_that_claims_mime_but_is_not_usable_is_refused_naming_the_field(user_data: str, message: str) -> None:
    for family in ("AL2023", "AL2"):
        with pytest.raises(ValueError, match=rf"spec\.userData .*{message}"):
            render(family, with_user_data(user_data))


FULL_KUBELET = KubeletConfiguration.model_validate(
    {
        "maxPods": 58,
        "podsPerCore": 4,
        "systemReserved": {"cpu": "100m", "memory": "100Mi"},
        "kubeReserved": {"cpu": "200m", "memory": "300Mi"},
        "evictionHard": {"memory.available": "5%", "nodefs.available": "10%"},
        "evictionSoft": {"memory.available": "10%"},
        "evictionSoftGracePeriod": {"memory.available": "1m"},
        "evictionMaxPodGracePeriod": 60,
        "imageGCHighThresholdPercent": 85,
        "imageGCLowThresholdPercent": 80,
        "cpuCFSQuota": True,
        "clusterDNS": ["10.0.0.53"],
    }
)


def test_al2_passes_every_kubelet_setting_as_the_flag_karpenter_writes() -> None:
    argv = bootstrap_argv(render("AL2", BootstrapOptions(**{**OPTIONS.__dict__, "kubelet": FULL_KUBELET})))
    extra = (flag(argv, "--kubelet-extra-args") or "").split()
    for expected in (
        "--max-pods=58",
        "--pods-per-core=4",
        "--system-reserved=cpu=100m,memory=100Mi",
        "--kube-reserved=cpu=200m,memory=300Mi",
        "--eviction-hard=memory.available<5%,nodefs.available<10%",
        "--eviction-soft=memory.available<10%",
        "--eviction-soft-grace-period=memory.available=1m",
        "--eviction-max-pod-grace-period=60",
        "--image-gc-high-threshold=85",
        "--image-gc-low-threshold=80",
        "--cpu-cfs-quota=true",
    ):
        assert expected in extra, (expected, extra)
    assert flag(argv, "--dns-cluster-ip") == "10.0.0.53"
    assert flag(argv, "--use-max-pods") == "false"


def test_bottlerocket_gets_every_kubelet_setting_it_has_as_karpenter_types_them() -> None:
    kubernetes = bottlerocket_kubernetes(
        render("Bottlerocket", BootstrapOptions(**{**OPTIONS.__dict__, "kubelet": FULL_KUBELET}))
    )
    assert kubernetes["max-pods"] == 58
    assert kubernetes["system-reserved"] == {"cpu": "100m", "memory": "100Mi"}
    assert kubernetes["kube-reserved"] == {"cpu": "200m", "memory": "300Mi"}
    assert kubernetes["eviction-hard"] == {"memory.available": "5%", "nodefs.available": "10%"}
    assert kubernetes["eviction-soft"] == {"memory.available": "10%"}
    assert kubernetes["eviction-soft-grace-period"] == {"memory.available": "1m"}
    assert kubernetes["eviction-max-pod-grace-period"] == 60
    assert kubernetes["image-gc-high-threshold-percent"] == "85"
    assert kubernetes["image-gc-low-threshold-percent"] == "80"
    assert kubernetes["cpu-cfs-quota-enforced"] is True
    assert kubernetes["cluster-dns-ip"] == "10.0.0.53"


def test_al2023_inlines_every_kubelet_setting_in_its_node_config() -> None:
    config = node_config(render("AL2023", BootstrapOptions(**{**OPTIONS.__dict__, "kubelet": FULL_KUBELET})))
    inline = config["spec"]["kubelet"]["config"]
    assert inline["podsPerCore"] == 4
    assert inline["evictionSoftGracePeriod"] == {"memory.available": "1m"}
    assert inline["imageGCHighThresholdPercent"] == 85
    assert inline["cpuCFSQuota"] is True
    assert inline["clusterDNS"] == ["10.0.0.53"]


def test_al2_bootstrap_command_line_carries_everything_a_node_needs_to_join() -> None:
    argv = bootstrap_argv(render("AL2", OPTIONS))
    assert argv[0] == "prod"
    assert flag(argv, "--apiserver-endpoint") == "https://example.eks.amazonaws.com"
    assert flag(argv, "--b64-cluster-ca") == CA
    assert flag(argv, "--dns-cluster-ip") == "10.100.0.10"
    assert flag(argv, "--use-max-pods") == "false"
    assert "--ip-family" not in argv
    extra = shlex.split(flag(argv, "--kubelet-extra-args") or "")
    assert extra == [
        "--node-labels=karpenter.sh/nodepool=default,team=a",
        "--register-with-taints=gpu=true:NoSchedule,karpenter.sh/unregistered:NoExecute",
        "--max-pods=50",
    ]


def test_al2_ipv6() -> None:
    argv = bootstrap_argv(render("AL2", IPV6))
    assert flag(argv, "--ip-family") == "ipv6"
    assert flag(argv, "--service-ipv6-cidr") == "fd30:1c53:5f8a::/108"
    assert flag(argv, "--dns-cluster-ip") == "fd30:1c53:5f8a::a"


def test_bottlerocket_settings_carry_everything_a_node_needs_to_join() -> None:
    kubernetes = bottlerocket_kubernetes(render("Bottlerocket", OPTIONS))
    assert kubernetes["cluster-name"] == "prod"
    assert kubernetes["api-server"] == "https://example.eks.amazonaws.com"
    assert kubernetes["cluster-certificate"] == CA
    assert kubernetes["cluster-dns-ip"] == "10.100.0.10"
    assert kubernetes["max-pods"] == 50
    assert kubernetes["node-labels"] == {"karpenter.sh/nodepool": "default", "team": "a"}
    assert kubernetes["node-taints"] == {"gpu": ["true:NoSchedule"], "karpenter.sh/unregistered": [":NoExecute"]}


def test_bottlerocket_merges_the_users_toml_key_by_key() -> None:
    users = "\n".join(
        [
            "[settings.kubernetes]",
            'cluster-name = "wrong"',
            'image-gc-high-threshold-percent = "85"',
            "[settings.kubernetes.node-labels]",
            'mine = "yes"',
            "[settings.kubernetes.node-taints]",
            'gpu = ["false:NoExecute"]',
            "[settings.host-containers.admin]",
            "enabled = true",
        ]
    )
    text = render("Bottlerocket", BootstrapOptions(**{**OPTIONS.__dict__, "custom_user_data": users}))
    assert text.count("[settings.kubernetes]") == 1
    settings = tomllib.loads(text)["settings"]  # would raise on a table declared twice
    kubernetes = settings["kubernetes"]
    assert kubernetes["cluster-name"] == "prod"  # nodeflow's join settings win
    assert kubernetes["api-server"] == "https://example.eks.amazonaws.com"
    assert kubernetes["image-gc-high-threshold-percent"] == "85"  # the user's other keys stay
    assert kubernetes["node-labels"] == {"mine": "yes", "karpenter.sh/nodepool": "default", "team": "a"}
    assert kubernetes["node-taints"]["gpu"] == ["false:NoExecute", "true:NoSchedule"]
    assert settings["host-containers"] == {"admin": {"enabled": True}}


def test_bottlerocket_refuses_user_data_that_is_not_toml() -> None:
    bad = BootstrapOptions(cluster_name="prod", custom_user_data="#!/bin/bash\necho hi\n")
    with pytest.raises(ValueError, match=r"spec\.userData is not valid TOML"):
        render("Bottlerocket", bad)


def test_unknown_dns_ip_and_cidr_are_left_out() -> None:
    bare = BootstrapOptions(cluster_name="prod", cluster_endpoint="https://e", ca_bundle=CA)
    assert "cidr" not in node_config(render("AL2023", bare))["spec"]["cluster"]
    assert "--dns-cluster-ip" not in bootstrap_argv(render("AL2", bare))
    assert "cluster-dns-ip" not in bottlerocket_kubernetes(render("Bottlerocket", bare))


def test_custom_user_data_is_passed_through() -> None:
    custom = BootstrapOptions(cluster_name="prod", custom_user_data="#!/bin/bash\necho hi\n")
    assert render("Custom", custom) == "#!/bin/bash\necho hi\n"


def test_unsupported_family_names_the_field() -> None:
    with pytest.raises(ValueError, match=r"spec\.amiFamily"):
        render("Ubuntu", OPTIONS)


def test_raid0_instance_store_is_asked_of_each_family_only_when_the_node_class_wants_it() -> None:
    raid0 = dataclasses.replace(OPTIONS, instance_store_raid0=True)
    assert node_config(render("AL2023", raid0))["spec"]["instance"] == {"localStorage": {"strategy": "RAID0"}}
    assert "instance" not in node_config(render("AL2023", OPTIONS))["spec"]
    assert flag(bootstrap_argv(render("AL2", raid0)), "--local-disks") == "raid0"
    assert "--local-disks" not in bootstrap_argv(render("AL2", OPTIONS))
    settings = tomllib.loads(render("Bottlerocket", raid0))["settings"]
    assert settings["bootstrap-commands"] == {
        "000-mount-instance-storage": {
            "commands": [
                ["apiclient", "ephemeral-storage", "init"],
                [
                    "apiclient",
                    "ephemeral-storage",
                    "bind",
                    "--dirs",
                    "/var/lib/containerd",
                    "/var/lib/kubelet",
                    "/var/log/pods",
                ],
            ],
            "essential": True,
            "mode": "always",
        }
    }
    assert settings["kubernetes"] == bottlerocket_kubernetes(render("Bottlerocket", OPTIONS))
    assert "bootstrap-commands" not in tomllib.loads(render("Bottlerocket", OPTIONS))["settings"]
