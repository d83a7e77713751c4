"""Kubernetes resource quantities (``8``, ``96``, ``512Gi``, ``1.5``, ``500m``, ``1e3``) read as exact numbers, by the
grammar of k8s.io/apimachinery's ``resource.Quantity`` (the pattern every CRD's quantity field carries)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
GRAMMAR = re.compile(rf"^(?P<number>{_NUMBER})"
                     rf"(?:(?P<binary>[KMGTPE]i)|(?P<decimal>[numkMGTPE])|[eE](?P<exponent>{_NUMBER}))?$")
"""``<signedNumber><suffix>`` with suffix a binary SI (``Ki``...``Ei``), decimal SI (``n``, ``u``, ``m``, '', ``k``,
``M``...``E``) or decimal exponent (``e3``), as apimachinery's ``quantity.go`` documents it."""

BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
"""Binary suffix -> power of 1024."""
DECIMAL = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
"""Decimal suffix -> power of 10."""


def parse(value: Any) -> Decimal:
    """The exact amount ``value`` stands for: a number as the engine sends it (JSON numbers arrive as floats), or a
    quantity string. Raises ``ValueError`` for anything the Kubernetes API would refuse as a quantity."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a Kubernetes quantity")
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    match = GRAMMAR.match(str(value).strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{value!r} is not a Kubernetes quantity (a number with an optional suffix: 8, 500m, 512Gi)")
    number = Decimal(match["number"])
    if match["binary"]:
        return number * 1024 ** BINARY[match["binary"]]
    if match["decimal"]:
        return number.scaleb(DECIMAL[match["decimal"]])
    if match["exponent"] is not None:
        exponent = Decimal(match["exponent"])
        if exponent != exponent.to_integral_value():
            raise ValueError(f"{value!r} is not a Kubernetes quantity (the exponent must be whole)")
        return number.scaleb(int(exponent))
    return number


def show(value: Decimal) -> str:
    """An amount as a person writes it: ``12`` (not ``12.0``), ``1.5``."""
    return str(int(value)) if value == value.to_integral_value() else format(value.normalize(), "f")
