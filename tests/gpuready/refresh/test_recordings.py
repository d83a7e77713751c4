"""The stored cloud answers that `gpuready catalog refresh` reads in its tests (tests/data/catalog) are constructed,
not captured: each is walked here against the vendor's own schema of that answer, so that a field name or a type the
real API does not have (and a parser reading it) fails. Vendor truth: Google's discovery documents and the
msrest attribute maps of azure-mgmt-compute (extracts beside the answers, see tests/data/PROVENANCE.md) and
botocore's `pricing` service model (installed). The Azure Retail Prices API has no SDK model and the inner JSON of
a Price List item has no model either: those are not checked here."""

from __future__ import annotations

import copy
import json
import re
from typing import Any, Iterator

import botocore.session
import pytest

from tests.conftest import DATA

CATALOG = DATA / "catalog"
NO_VENDOR_SCHEMA = {"azure/retail-prices.json"}
"""The public Retail Prices REST API: documented, but no SDK carries a model of its answer."""


def load(name: str) -> Any:
    return json.loads((CATALOG / name).read_text())


def pages(answer: Any) -> list:
    """The parsers take one page or a list of pages."""
    return answer if isinstance(answer, list) else [answer]


def is_a(value: Any, types: tuple[type, ...]) -> bool:
    """``isinstance``, except that a JSON true/false is a boolean only."""
    return isinstance(value, types) and isinstance(value, bool) == (bool in types)


# Google discovery documents: a schema is a $ref, an object (properties and/or additionalProperties), an array
# (items) or a scalar; 64-bit integers travel as JSON strings (type string, format int64/uint64).
DISCOVERY_SCALARS = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


def discovery_errors(value: Any, schema: dict, schemas: dict, path: str = "$") -> Iterator[str]:
    if "$ref" in schema:
        yield from discovery_errors(value, schemas[schema["$ref"]], schemas, path)
    elif schema.get("type") == "object":
        if not isinstance(value, dict):
            yield f"{path}: {type(value).__name__}, not an object"
            return
        for key, item in value.items():
            field = schema.get("properties", {}).get(key, schema.get("additionalProperties"))
            if field is None:
                yield f"{path}.{key}: no such field"
            else:
                yield from discovery_errors(item, field, schemas, f"{path}.{key}")
    elif schema.get("type") == "array":
        if not isinstance(value, list):
            yield f"{path}: {type(value).__name__}, not an array"
            return
        for i, item in enumerate(value):
            yield from discovery_errors(item, schema["items"], schemas, f"{path}[{i}]")
    elif schema.get("type") != "any":
        if not is_a(value, DISCOVERY_SCALARS[schema["type"]]):
            yield f"{path}: {value!r} is not of type {schema['type']} ({schema.get('format', 'no format')})"
        elif schema.get("format") in ("int64", "uint64") and not re.fullmatch(r"-?\d+", value):
            yield f"{path}: {value!r} is not a {schema['format']} in a string"
        elif "enum" in schema and value not in schema["enum"]:
            yield f"{path}: {value!r} is none of {schema['enum']}"


# msrest attribute maps (azure-mgmt-compute): each model's attributes by wire key, types 'str', '[Model]', '{str}'...
AZURE_SCALARS = {"str": (str,), "int": (int,), "long": (int,), "float": (int, float), "bool": (bool,),
                 "iso-8601": (str,)}


def azure_errors(value: Any, type_: str, models: dict, path: str = "$") -> Iterator[str]:
    if type_.startswith("[") or type_.startswith("{"):
        container = list if type_.startswith("[") else dict
        if not isinstance(value, container):
            yield f"{path}: {type(value).__name__}, not a {type_}"
            return
        items = enumerate(value) if container is list else value.items()
        for i, item in items:
            yield from azure_errors(item, type_[1:-1], models, f"{path}[{i!r}]")
    elif type_ in models:
        if not isinstance(value, dict):
            yield f"{path}: {type(value).__name__}, not a {type_}"
            return
        fields = {attribute["key"]: attribute["type"] for attribute in models[type_].values()}
        for key, item in value.items():
            if key not in fields:
                yield f"{path}.{key}: no such field in {type_}"
            else:
                yield from azure_errors(item, fields[key], models, f"{path}.{key}")
    elif type_ != "object" and not is_a(value, AZURE_SCALARS[type_]):
        yield f"{path}: {value!r} is not a {type_}"


# botocore shapes: structure (members), list (member), map (value), scalars; a jsonvalue string holds a JSON document.
BOTOCORE_SCALARS = {"string": (str,), "integer": (int,), "long": (int,), "boolean": (bool,), "double": (int, float),
                    "float": (int, float), "timestamp": (str, int, float)}


def botocore_errors(value: Any, shape, path: str = "$") -> Iterator[str]:
    if shape.type_name == "structure":
        if not isinstance(value, dict):
            yield f"{path}: {type(value).__name__}, not a {shape.name}"
            return
        for key, item in value.items():
            if key not in shape.members:
                yield f"{path}.{key}: no such member of {shape.name}"
            else:
                yield from botocore_errors(item, shape.members[key], f"{path}.{key}")
    elif shape.type_name in ("list", "map"):
        if not isinstance(value, list if shape.type_name == "list" else dict):
            yield f"{path}: {type(value).__name__}, not a {shape.type_name} ({shape.name})"
            return
        items = enumerate(value) if shape.type_name == "list" else value.items()
        for i, item in items:
            yield from botocore_errors(item, shape.member if shape.type_name == "list" else shape.value,
                                       f"{path}[{i!r}]")
    elif not is_a(value, BOTOCORE_SCALARS[shape.type_name]):
        yield f"{path}: {value!r} is not a {shape.type_name} ({shape.name})"
    elif shape.serialization.get("jsonvalue"):
        try:
            json.loads(value)
        except ValueError:
            yield f"{path}: not a JSON document"


def discovery(api: str) -> dict:
    return load(f"gcp/discovery-{api}-v1-schemas.json")["schemas"]


AZURE_MODELS = "azure/azure-mgmt-compute-resource-skus-models.json"
GET_PRODUCTS = botocore.session.get_session().get_service_model("pricing").operation_model("GetProducts").output_shape


def errors(name: str, answer: Any) -> list[str]:
    """Every departure of one stored answer (each of its pages) from the vendor's schema of it."""
    if name == "aws/pricing-get-products.json":
        found = [botocore_errors(page, GET_PRODUCTS) for page in pages(answer)]
    elif name == "azure/resource-skus.json":
        found = [azure_errors(page, "ResourceSkusResult", load(AZURE_MODELS)["models"]) for page in pages(answer)]
    else:
        api, root = {"gcp/compute-machine-types.json": ("compute", "MachineTypeAggregatedList"),
                     "gcp/compute-accelerator-types.json": ("compute", "AcceleratorTypeAggregatedList"),
                     "gcp/billing-skus.json": ("cloudbilling", "ListSkusResponse")}[name]
        found = [discovery_errors(page, {"$ref": root}, discovery(api)) for page in pages(answer)]
    return [error for page in found for error in page]


ANSWERS = ["aws/pricing-get-products.json", "azure/resource-skus.json", "gcp/compute-machine-types.json",
           "gcp/compute-accelerator-types.json", "gcp/billing-skus.json"]


def test_every_stored_answer_is_checked_or_said_to_have_no_vendor_schema():
    stored = {f"{p.parent.name}/{p.name}" for p in CATALOG.glob("*/*.json")}
    schemas = {name for name in stored if name.startswith("gcp/discovery-") or name == AZURE_MODELS}
    assert stored - schemas == set(ANSWERS) | NO_VENDOR_SCHEMA


@pytest.mark.parametrize("name", ANSWERS)
def test_stored_answer_has_the_vendors_field_names_and_types(name):
    assert errors(name, load(name)) == []


def test_price_list_items_are_json_strings_with_product_and_terms():
    """The outer GetProducts shape says a JSON string; what is inside has no model: the keys the parser reads."""
    for text in load("aws/pricing-get-products.json")["PriceList"]:
        item = json.loads(text)
        assert {"product", "terms"} <= item.keys() and "attributes" in item["product"]


MACHINE = "$.items.zones/us-central1-a.machineTypes[0]"
BROKEN = [  # (answer, change to make, an error naming the place)
    ("gcp/compute-machine-types.json", lambda a: a["items"]["zones/us-central1-a"]["machineTypes"][0].update(
        guestCPUs=8), f"{MACHINE}.guestCPUs: no such field"),
    ("gcp/compute-machine-types.json", lambda a: a["items"]["zones/us-central1-a"]["machineTypes"][0].update(
        maximumPersistentDisksSizeGb=263168), f"{MACHINE}.maximumPersistentDisksSizeGb: 263168 is not of type string"),
    ("gcp/compute-machine-types.json", lambda a: a["items"]["zones/us-central1-a"]["machineTypes"][0].update(
        memoryMb="30720"), f"{MACHINE}.memoryMb: '30720' is not of type integer"),
    ("gcp/billing-skus.json", lambda a: a["skus"][0]["pricingInfo"][0]["pricingExpression"]["tieredRates"][0][
        "unitPrice"].update(units=0), "$.skus[0].pricingInfo[0].pricingExpression.tieredRates[0].unitPrice.units: 0"),
    ("gcp/billing-skus.json", lambda a: a["skus"][0]["category"].update(usage_type="OnDemand"),
     "$.skus[0].category.usage_type: no such field"),
    ("azure/resource-skus.json", lambda a: a["value"][0]["capabilities"][2].update(value=24),
     "$.value[0].capabilities[2].value: 24 is not a str"),
    ("azure/resource-skus.json", lambda a: a["value"][0].update(resource_type="virtualMachines"),
     "$.value[0].resource_type: no such field in ResourceSku"),
    ("aws/pricing-get-products.json", lambda a: a.update(PriceLists=[]), "$.PriceLists: no such member"),
    ("aws/pricing-get-products.json", lambda a: a["PriceList"].__setitem__(0, json.loads(a["PriceList"][0])),
     "$.PriceList[0]: {"),
]


@pytest.mark.parametrize("name, change, expected", BROKEN)
def test_a_misspelled_key_or_a_wrong_type_is_rejected(name, change, expected):
    answer = copy.deepcopy(load(name))
    change(answer)
    found = errors(name, answer)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_billing_sku_ids_are_the_last_part_of_their_names():
    """Sku.skuId and Sku.name as the discovery document's examples show them (``D041-B8A1-6E0B``,
    ``services/6F81-5844-456A/skus/D041-B8A1-6E0B``)."""
    for sku in load("gcp/billing-skus.json")["skus"]:
        assert sku["name"] == f"services/6F81-5844-456A/skus/{sku['skuId']}"
