"""The drop-in's ``nvidia_tao_core.telemetry.builders.labeled``."""

from nixl_telemetry import _native
from nixl_telemetry.tao.builders._native_builder import NativeBuilder
from nixl_telemetry.tao.builders.base import MetricBuilder
from nixl_telemetry.tao.config import METRIC_ATTRIBUTES
from nixl_telemetry.tao.types import AttributeType, TelemetryData

__all__ = ["AttributeType", "LabeledMetricsBuilder", "METRIC_ATTRIBUTES", "MetricBuilder",
           "TelemetryData"]


class LabeledMetricsBuilder(NativeBuilder):
    """Prometheus-style keys ``name{label="value",…}``."""

    _native_name = "labeled"

    def __init__(self) -> None:
        self.metric_names = {
            "counter": "tao_job_total",
            "duration_sum": "tao_job_duration_sum",
            "gpu_time_sum": "tao_job_gpu_time_sum",
            "gpu_total": "tao_job_gpu_total",
        }
        self.gpu_priority = list(_native.GPU_PRIORITY)

    def _extract_gpu_type(self, gpu_name: str) -> str:
        return _native.extract_gpu_type(gpu_name)  # type: ignore[no-any-return]

    def _extract_primary_gpu(self, gpus: list) -> str:  # type: ignore[type-arg]
        return _native.extract_primary_gpu(list(gpus))  # type: ignore[no-any-return]
