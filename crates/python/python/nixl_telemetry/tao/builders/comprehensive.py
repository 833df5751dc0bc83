"""The drop-in's ``nvidia_tao_core.telemetry.builders.comprehensive``."""

from nixl_telemetry.tao.builders._native_builder import NativeBuilder
from nixl_telemetry.tao.builders.base import MetricBuilder
from nixl_telemetry.tao.config import METRIC_ATTRIBUTES
from nixl_telemetry.tao.types import AttributeType, TelemetryData
from nixl_telemetry.tao.utils import create_gpu_identifier

__all__ = ["AttributeType", "ComprehensiveMetricsBuilder", "METRIC_ATTRIBUTES", "MetricBuilder",
           "TelemetryData", "create_gpu_identifier"]


class ComprehensiveMetricsBuilder(NativeBuilder):
    """One counter named after every comprehensive attribute, the status and the GPUs."""

    _native_name = "comprehensive"
