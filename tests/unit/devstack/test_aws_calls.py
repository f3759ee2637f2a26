"""devstack.aws.calls: which operation a signed request is, and the per-process call files."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from devstack.aws.calls import CallRecorder, app_id, operation, read_calls

AUTH = "AWS4-HMAC-SHA256 Credential=testing/20261124/us-west-2/{service}/aws4_request, SignedHeaders=host, Signature=x"
AGENT = "Boto3/1.40 md/Botocore#1.40 ua/2.1 os/linux#6 lang/python#3.11 app/nodeflow cfg/retry-mode#standard"


def query_request(service: str, body: str, agent: str = AGENT) -> dict[str, Any]:
    data = body.encode()
    return {"HTTP_AUTHORIZATION": AUTH.format(service=service), "HTTP_USER_AGENT": agent,
            "CONTENT_LENGTH": str(len(data)), "wsgi.input": io.BytesIO(data), "PATH_INFO": "/"}  # fmt: skip


def test_query_and_json_protocol_operations() -> None:
    assert operation(query_request("ec2", "Action=CreateFleet&Version=2016-11-15")) == "ec2:CreateFleet"
    assert (
        operation(query_request("iam", "Action=GetInstanceProfile&InstanceProfileName=p")) == "iam:GetInstanceProfile"
    )
    ssm = {"HTTP_AUTHORIZATION": AUTH.format(service="ssm"), "HTTP_X_AMZ_TARGET": "AmazonSSM.GetParameter"}
    assert operation(ssm) == "ssm:GetParameter"
    sqs = {"HTTP_AUTHORIZATION": AUTH.format(service="sqs"), "HTTP_X_AMZ_TARGET": "AmazonSQS.ReceiveMessage"}
    assert operation(sqs) == "sqs:ReceiveMessage"  # SQS's JSON protocol (botocore >= 1.31)


def test_rest_protocol_operations_nodeflow_calls() -> None:
    eks = {"HTTP_AUTHORIZATION": AUTH.format(service="eks"), "REQUEST_METHOD": "GET", "PATH_INFO": "/clusters/c1",
           "wsgi.input": io.BytesIO(b"")}  # fmt: skip
    assert operation(eks) == "eks:DescribeCluster"
    assert operation({**eks, "REQUEST_METHOD": "DELETE", "wsgi.input": io.BytesIO(b"")}) is None


def test_unsigned_requests_are_not_operations() -> None:
    assert operation({"PATH_INFO": "/moto-api/reset", "wsgi.input": io.BytesIO(b"")}) is None


def test_app_id_of_a_user_agent() -> None:
    assert app_id(AGENT) == "nodeflow"
    assert app_id("Boto3/1.40 md/Botocore#1.40 os/linux") == "-"


def test_the_recorder_writes_each_line_once_and_passes_the_request_on(tmp_path: Path) -> None:
    seen: list[bytes] = []

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        seen.append(environ["wsgi.input"].read())
        return [b"ok"]

    recorder = CallRecorder(app, tmp_path / "calls")
    for agent in (AGENT, AGENT, "Boto3/1.40"):
        assert recorder(query_request("ec2", "Action=DescribeImages", agent), lambda *a: None) == [b"ok"]
    assert seen == [b"Action=DescribeImages"] * 3  # the body is still there for moto
    assert recorder.path.read_text() == "nodeflow ec2:DescribeImages\n- ec2:DescribeImages\n"
    other = CallRecorder(app, tmp_path / "calls")
    other(query_request("ssm", "Action=GetParameter"), lambda *a: None)
    assert read_calls(tmp_path / "calls") == {"nodeflow ec2:DescribeImages", "- ec2:DescribeImages",
                                              "nodeflow ssm:GetParameter"}  # fmt: skip
