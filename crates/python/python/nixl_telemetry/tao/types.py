"""The drop-in's ``nvidia_tao_core.telemetry.types``: the normalised record's
shape and the registry's attribute type."""

from dataclasses import dataclass
from enum import Enum
from typing import Any, List, TypedDict


class TelemetryData(TypedDict, total=False):
    """A normalised record: what builders receive."""

    version: str
    action: str
    network: str
    success: bool
    user_error: bool
    time_lapsed: int
    gpus: List[str]
    client_type: str
    automl_triggered: bool


class AttributeType(Enum):
    """How an attribute's raw value is read."""

    STRING = "string"
    BOOLEAN = "boolean"
    INTEGER = "integer"
    LIST = "list"


@dataclass
class MetricAttribute:
    """One attribute of the registry: its name, raw key, type, default, whether it
    is part of the comprehensive metric name, and its position there."""

    name: str
    raw_key: str
    attr_type: AttributeType
    default: Any
    include_in_comprehensive: bool = True
    metric_order: int = 100
