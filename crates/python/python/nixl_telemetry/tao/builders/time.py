"""The drop-in's ``nvidia_tao_core.telemetry.builders.time``."""

from nixl_telemetry.tao.builders._native_builder import NativeBuilder
from nixl_telemetry.tao.builders.base import MetricBuilder
from nixl_telemetry.tao.types import TelemetryData

__all__ = ["MetricBuilder", "TelemetryData", "TimeMetricsBuilder"]


class TimeMetricsBuilder(NativeBuilder):
    """``time_lapsed_today``: the sum of ``time_lapsed`` over the calendar day."""

    _native_name = "time"
