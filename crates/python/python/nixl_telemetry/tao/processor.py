"""The drop-in's ``nvidia_tao_core.telemetry.processor``: the processor, whose
built-in builders run in Rust."""

from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple

from nixl_telemetry import _native
from nixl_telemetry.tao import _registry
from nixl_telemetry.tao.builders import (
    ComprehensiveMetricsBuilder,
    LabeledMetricsBuilder,
    LegacyMetricsBuilder,
    MetricBuilder,
    TimeMetricsBuilder,
)
from nixl_telemetry.tao.builders._native_builder import is_native
from nixl_telemetry.tao.utils import extract_telemetry_data

__all__ = ["ComprehensiveMetricsBuilder", "LabeledMetricsBuilder", "LegacyMetricsBuilder",
           "MetricBuilder", "MetricProcessor", "TimeMetricsBuilder", "extract_telemetry_data"]


class MetricProcessor:
    """Runs builders over raw records (the reference's ``MetricProcessor``).

    ``builders=None`` gives the four built-in builders (legacy, comprehensive,
    time, labeled). Built-in builders run in Rust, in their order in
    :attr:`builders`; Python :class:`MetricBuilder` subclasses then run in theirs.
    """

    def __init__(self, builders: Optional[List[MetricBuilder]] = None):
        if builders is None:
            self.builders: List[MetricBuilder] = [
                LegacyMetricsBuilder(),
                ComprehensiveMetricsBuilder(),
                TimeMetricsBuilder(),
                LabeledMetricsBuilder(),
            ]
        else:
            self.builders = builders
        self._native_names: Optional[Tuple[str, ...]] = None
        self._native: Any = None

    def add_builder(self, builder: MetricBuilder) -> None:
        """Appends a builder."""
        self.builders.append(builder)

    def _split(self) -> Tuple[Any, List[MetricBuilder]]:
        names = tuple(b._native_name for b in self.builders if is_native(b))  # type: ignore[attr-defined]
        if names != self._native_names:
            # The registry is read here: when the processor first runs, or its
            # built-in builders changed.
            self._native = _native.MetricProcessor(list(names), _registry.registry_document())
            self._native_names = names
        return self._native, [b for b in self.builders if not is_native(b)]

    def process(
        self,
        metrics: Dict[str, Any],
        raw_data: Dict[str, Any],
        context: Optional[Dict[str, Any]] = None,
    ) -> Dict[str, Any]:
        """Applies one raw record to ``metrics`` and returns it. ``context`` may hold
        ``now`` and ``old_now`` (datetimes); missing ones are filled in, in the
        caller's dict, as the reference does. On an error from a built-in builder
        or a Python builder the dict is left as it was."""
        if context is None:
            context = {}
        if "now" not in context:
            context["now"] = datetime.now()
        if "old_now" not in context:
            old_now_iso = metrics.get("last_updated")
            context["old_now"] = (
                datetime.fromisoformat(old_now_iso) if old_now_iso else context["now"]
            )
        native, python_builders = self._split()
        if not python_builders:
            native._apply(metrics, raw_data, context["now"], context["old_now"], False)
        else:
            saved = dict(metrics)
            try:
                data = native._apply(metrics, raw_data, context["now"], context["old_now"], True)
                for builder in python_builders:
                    builder.build(metrics, data, context)
            except BaseException:
                metrics.clear()
                metrics.update(saved)
                raise
        metrics["last_updated"] = context["now"].isoformat()
        return metrics
