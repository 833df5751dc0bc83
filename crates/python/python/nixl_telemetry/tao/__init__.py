"""A drop-in for ``nvidia_tao_core.telemetry``: the reference's modules
(``processor``, ``utils``, ``types``, ``config``, ``builders`` and
``builders.base``, ``.legacy``, ``.comprehensive``, ``.time``, ``.labeled``)
with the same public names and signatures, the built-in builders running in
Rust. A TAO service switches by changing its imports' package::

    from nixl_telemetry.tao.processor import MetricProcessor   # was nvidia_tao_core.telemetry.processor

This package also gathers every public name of those modules, and
:class:`ProcessingError`, for ``from nixl_telemetry.tao import …``.

``MetricProcessor.process(metrics, raw_data, context)`` updates and returns the
caller's dict as the reference does. :class:`MetricBuilder` subclasses written
in Python run after the built-in builders, with the reference's arguments.
Where the results differ from the reference, ``docs/processor.md`` lists why
("Python package: departures of nixl_telemetry.tao").
"""

from nixl_telemetry._native import ProcessingError
from nixl_telemetry.tao.builders import (
    ComprehensiveMetricsBuilder,
    LabeledMetricsBuilder,
    LegacyMetricsBuilder,
    MetricBuilder,
    TimeMetricsBuilder,
)
from nixl_telemetry.tao.config import METRIC_ATTRIBUTES, get_attribute_map, get_raw_key_map
from nixl_telemetry.tao.processor import MetricProcessor
from nixl_telemetry.tao.types import AttributeType, MetricAttribute, TelemetryData
from nixl_telemetry.tao.utils import (
    TELEMETRY_SANITIZE_PATTERN,
    create_gpu_identifier,
    extract_telemetry_data,
    sanitize_field_value,
)

__all__ = [
    "AttributeType",
    "ComprehensiveMetricsBuilder",
    "LabeledMetricsBuilder",
    "LegacyMetricsBuilder",
    "METRIC_ATTRIBUTES",
    "MetricAttribute",
    "MetricBuilder",
    "MetricProcessor",
    "ProcessingError",
    "TELEMETRY_SANITIZE_PATTERN",
    "TelemetryData",
    "TimeMetricsBuilder",
    "create_gpu_identifier",
    "extract_telemetry_data",
    "get_attribute_map",
    "get_raw_key_map",
    "sanitize_field_value",
]
