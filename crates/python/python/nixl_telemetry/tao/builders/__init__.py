"""The drop-in's ``nvidia_tao_core.telemetry.builders``: the four built-in
builders (run in Rust by :class:`~nixl_telemetry.tao.processor.MetricProcessor`)
and the base class of Python builders."""

from nixl_telemetry.tao.builders.base import MetricBuilder
from nixl_telemetry.tao.builders.comprehensive import ComprehensiveMetricsBuilder
from nixl_telemetry.tao.builders.labeled import LabeledMetricsBuilder
from nixl_telemetry.tao.builders.legacy import LegacyMetricsBuilder
from nixl_telemetry.tao.builders.time import TimeMetricsBuilder

__all__ = [
    "MetricBuilder",
    "LegacyMetricsBuilder",
    "ComprehensiveMetricsBuilder",
    "TimeMetricsBuilder",
    "LabeledMetricsBuilder",
]
