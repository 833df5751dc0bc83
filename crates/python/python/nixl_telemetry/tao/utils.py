"""The drop-in's ``nvidia_tao_core.telemetry.utils``: sanitising, GPU
identifiers, normalising a raw record (in Rust)."""

from datetime import datetime
from typing import Any, Dict, List

from nixl_telemetry import _native
from nixl_telemetry.tao import _registry
from nixl_telemetry.tao.config import METRIC_ATTRIBUTES
from nixl_telemetry.tao.types import AttributeType, TelemetryData

#: What :func:`sanitize_field_value` replaces by ``_`` (a regular expression).
TELEMETRY_SANITIZE_PATTERN = r"[^a-zA-Z0-9]"

__all__ = ["AttributeType", "METRIC_ATTRIBUTES", "TELEMETRY_SANITIZE_PATTERN", "TelemetryData",
           "create_gpu_identifier", "extract_telemetry_data", "sanitize_field_value"]


def sanitize_field_value(value: Any, uppercase: bool = False) -> str:
    """``str(value)`` with every character that is not an ASCII letter or digit
    replaced by ``_``, then lower-cased (upper-cased with ``uppercase=True``)."""
    return _native.sanitize_field_value(value, uppercase)


def create_gpu_identifier(gpu_list: List[str]) -> str:
    """``<count>_<NAME>_<n>…``: the number of GPUs, then each distinct upper-case
    sanitised name and its count, in code-point order."""
    return _native.create_gpu_identifier(gpu_list)


def extract_telemetry_data(raw_data: Dict[str, Any]) -> TelemetryData:
    """Normalises a raw record against ``METRIC_ATTRIBUTES``: strings sanitised,
    other types kept, missing keys (and ``None``) given their defaults. A value
    that does not fit its type raises :class:`ProcessingError` naming the key."""
    if _registry.registry_key() == _registry.BUILTIN_KEY:
        return _native.extract_telemetry_data(raw_data)  # type: ignore[no-any-return]
    processor = _native.MetricProcessor([], _registry.registry_document())
    now = datetime.now()
    return processor._apply({}, raw_data, now, now, True)  # type: ignore[no-any-return]
