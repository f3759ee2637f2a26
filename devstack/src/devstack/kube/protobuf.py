"""Reading the access reviews kubectl posts as Kubernetes protobuf.

client-go sends built-in types as `application/vnd.kubernetes.protobuf` (`kubectl auth can-i` posts its
SelfSubjectAccessReview so), and reads an answer in JSON as well. The emulator otherwise speaks JSON
only, so this reads just the two review kinds into the JSON shape: the envelope is the 4 bytes
`k8s\\0` then a `runtime.Unknown` message (field 2: the object's bytes), and the fields are those of
k8s.io/api/authorization/v1's generated.proto (SelfSubjectAccessReview: spec = 2;
SelfSubjectAccessReviewSpec: resourceAttributes = 1, nonResourceAttributes = 2; ResourceAttributes:
namespace 1, verb 2, group 3, version 4, resource 5, subresource 6, name 7; NonResourceAttributes: path 1,
verb 2; SelfSubjectRulesReviewSpec: namespace = 1).
"""

from __future__ import annotations

from typing import Any

CONTENT_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
_RESOURCE_FIELDS = {1: "namespace", 2: "verb", 3: "group", 4: "version", 5: "resource", 6: "subresource", 7: "name"}
_NON_RESOURCE_FIELDS = {1: "path", 2: "verb"}


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated protobuf varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def fields(data: bytes) -> dict[int, bytes]:
    """The length-delimited fields of one message, by number (the last of a repeated one); others skipped."""
    found: dict[int, bytes] = {}
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, pos = _varint(data, pos)
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        elif wire == 2:
            length, pos = _varint(data, pos)
            found[number] = data[pos : pos + length]
            pos += length
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return found


def _strings(data: bytes, names: dict[int, str]) -> dict[str, str]:
    return {names[n]: v.decode() for n, v in fields(data).items() if n in names}


def decode_review(body: bytes, kind: str) -> dict[str, Any]:
    """The JSON form (`{"spec": ...}`) of a protobuf SelfSubjectAccessReview or SelfSubjectRulesReview;
    ValueError when `body` is not one."""
    if not body.startswith(MAGIC):
        raise ValueError("not a Kubernetes protobuf body (no k8s\\0 prefix)")
    raw = fields(fields(body[len(MAGIC) :]).get(2, b""))
    spec_fields = fields(raw.get(2, b""))
    if kind == "SelfSubjectRulesReview":
        return {"spec": {"namespace": spec_fields.get(1, b"").decode()}}
    spec: dict[str, Any] = {}
    if 1 in spec_fields:
        spec["resourceAttributes"] = _strings(spec_fields[1], _RESOURCE_FIELDS)
    if 2 in spec_fields:
        spec["nonResourceAttributes"] = _strings(spec_fields[2], _NON_RESOURCE_FIELDS)
    return {"spec": spec}
