"""The drop-in's ``nvidia_tao_core.telemetry.config``: the attribute registry.

``METRIC_ATTRIBUTES`` is one list, the same object in every module that names
it (as in the reference): append a :class:`MetricAttribute` to it to add an
attribute. A processor reads it when it first runs (or its built-in builders
change).
"""

from typing import Dict, List

from nixl_telemetry.tao.types import AttributeType, MetricAttribute

__all__ = ["AttributeType", "METRIC_ATTRIBUTES", "MetricAttribute", "get_attribute_map",
           "get_raw_key_map"]

#: The registry.
METRIC_ATTRIBUTES: List[MetricAttribute] = [
    MetricAttribute("version", "version", AttributeType.STRING, "unknown", metric_order=3),
    MetricAttribute("action", "action", AttributeType.STRING, "unknown", metric_order=2),
    MetricAttribute("network", "network", AttributeType.STRING, "unknown", metric_order=1),
    MetricAttribute(
        "success", "success", AttributeType.BOOLEAN, False,
        include_in_comprehensive=False, metric_order=4,
    ),
    MetricAttribute(
        "user_error", "user_error", AttributeType.BOOLEAN, False,
        include_in_comprehensive=False, metric_order=5,
    ),
    MetricAttribute(
        "time_lapsed", "time_lapsed", AttributeType.INTEGER, 0, include_in_comprehensive=False
    ),
    MetricAttribute("gpus", "gpu", AttributeType.LIST, ["unknown"], include_in_comprehensive=False),
    MetricAttribute(
        "client_type", "client_type", AttributeType.STRING, "container",
        include_in_comprehensive=False, metric_order=6,
    ),
    MetricAttribute(
        "automl_triggered", "automl_triggered", AttributeType.BOOLEAN, False,
        include_in_comprehensive=False,
    ),
]


def get_attribute_map() -> Dict[str, MetricAttribute]:
    """The registry by attribute name."""
    return {attr.name: attr for attr in METRIC_ATTRIBUTES}


def get_raw_key_map() -> Dict[str, MetricAttribute]:
    """The registry by raw key."""
    return {attr.raw_key: attr for attr in METRIC_ATTRIBUTES}
