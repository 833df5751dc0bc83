"""The base of the built-in builders, which run in Rust (internal)."""

from datetime import datetime
from typing import Any, Dict

from nixl_telemetry import _native
from nixl_telemetry.tao import _registry
from nixl_telemetry.tao.builders.base import MetricBuilder
from nixl_telemetry.tao.config import get_attribute_map
from nixl_telemetry.tao.types import TelemetryData


class NativeBuilder(MetricBuilder):
    """A built-in builder: :class:`MetricProcessor` runs it in Rust; called
    directly, it runs alone over one normalised record."""

    _native_name = ""

    def build(
        self,
        metrics: Dict[str, Any],
        telemetry_data: TelemetryData,
        context: Dict[str, Any],
    ) -> None:
        """Applies this builder alone to one normalised record."""
        now = context.get("now") or datetime.now()
        old_now = context.get("old_now") or now
        attributes = get_attribute_map()
        record = {attributes[name].raw_key if name in attributes else name: value
                  for name, value in dict(telemetry_data).items()}
        processor = _native.MetricProcessor([self._native_name], _registry.registry_document())
        processor._apply(metrics, record, now, old_now, False)


def is_native(builder: Any) -> bool:
    """Whether the processor runs `builder` in Rust: a built-in builder whose
    `build` is not overridden (a subclass that overrides it is a Python builder)."""
    return isinstance(builder, NativeBuilder) and type(builder).build is NativeBuilder.build
