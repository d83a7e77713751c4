"""Values a preview does not know yet, as the Pulumi engine hands them to the policy pack.

During a first ``pulumi preview`` every output the cloud computes (ids, ARNs, endpoints) is unknown, and so is every
input built from one. The engine sends each as a sentinel string; pulumi_policy's analyzer server deserializes the
resource's properties from a protobuf ``Struct`` (so numbers arrive as floats) and wraps them in its unknown-checking
proxy, which raises :class:`UnknownValueError` when a rule reads an unknown value. Reading only the values a rule
needs therefore never trips on unrelated unknowns; :mod:`.rule` turns the error of a value a rule does need into
"undecided" for that resource, never into a violation.
"""

from __future__ import annotations

from typing import Any, Mapping

import pulumi
from google.protobuf import json_format, struct_pb2
from pulumi.output import Unknown
from pulumi_policy import proxy
from pulumi_policy.deserialize import deserialize_properties, serialize_properties

UnknownValueError = proxy.UnknownValueError

SENTINELS = frozenset({proxy.UNKNOWN_BOOLEAN_VALUE, proxy.UNKNOWN_NUMBER_VALUE, proxy.UNKNOWN_STRING_VALUE,
                       proxy.UNKNOWN_ARRAY_VALUE, proxy.UNKNOWN_ASSET_VALUE, proxy.UNKNOWN_ARCHIVE_VALUE,
                       proxy.UNKNOWN_OBJECT_VALUE})
"""The strings that stand for an unknown value; the engine sends every unknown as ``UNKNOWN_STRING_VALUE``."""


def is_unknown(value: Any) -> bool:
    return isinstance(value, str) and value in SENTINELS


def undecided(error: UnknownValueError, message: str) -> UnknownValueError:
    """``error`` saying ``message``, which the engine reports as why it could not run a rule during preview."""
    result = UnknownValueError(error.unknown_type_sentinel, error.props)
    result.message = message
    return result


def _wire(value: Any) -> Any:
    if isinstance(value, Unknown) or is_unknown(value):
        return proxy.UNKNOWN_STRING_VALUE
    if isinstance(value, Mapping):
        return {k: _wire(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_wire(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float, pulumi.Asset, pulumi.Archive)):
        return value
    return str(value)


def as_engine_sends(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """A resource's properties as the analyzer hands them to a rule: through a protobuf ``Struct``, deserialized by
    pulumi_policy, behind its unknown-checking proxy. A :class:`pulumi.output.Unknown` (from a preview render)
    becomes the engine's sentinel."""
    struct = struct_pb2.Struct()
    struct.update(serialize_properties(_wire(props)))
    return proxy.unknown_checking_proxy(deserialize_properties(json_format.MessageToDict(struct)))
