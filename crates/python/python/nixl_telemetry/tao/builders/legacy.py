"""The drop-in's ``nvidia_tao_core.telemetry.builders.legacy``."""

from nixl_telemetry.tao.builders._native_builder import NativeBuilder
from nixl_telemetry.tao.builders.base import MetricBuilder
from nixl_telemetry.tao.types import TelemetryData
from nixl_telemetry.tao.utils import sanitize_field_value

__all__ = ["LegacyMetricsBuilder", "MetricBuilder", "TelemetryData", "sanitize_field_value"]


class LegacyMetricsBuilder(NativeBuilder):
    """``total_action_<action>_<pass|fail>``, ``version_<v>_action_<a>``,
    ``network_<n>_action_<a>``, ``gpu_<gpu>_action_<a>``."""

    _native_name = "legacy"
