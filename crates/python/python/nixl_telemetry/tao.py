"""A drop-in for ``nvidia_tao_core.telemetry``: the same public names and
signatures, the built-in builders running in Rust.

A TAO service switches by changing one import::

    from nixl_telemetry.tao import MetricProcessor   # was nvidia_tao_core.telemetry.processor

``MetricProcessor.process(metrics, raw_data, context)`` updates and returns the
caller's dict as the reference does. :class:`MetricBuilder` subclasses written
in Python run after the built-in builders, with the reference's arguments.
Where the results differ from the reference, ``docs/processor.md`` lists why
("Python package: departures of nixl_telemetry.tao").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Dict, List, Optional, Tuple, TypedDict

from nixl_telemetry import _native
from nixl_telemetry._native import ProcessingError

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
    "TelemetryData",
    "TimeMetricsBuilder",
    "create_gpu_identifier",
    "extract_telemetry_data",
    "get_attribute_map",
    "get_raw_key_map",
    "sanitize_field_value",
]


class TelemetryData(TypedDict, total=False):
    """A normalised record: what builders receive."""

    version: str
    action: str
    network: str
    success: bool
    user_error: bool
    time_lapsed: int
    gpus: List[str]
    client_type: str
    automl_triggered: bool


class AttributeType(Enum):
    """How an attribute's raw value is read."""

    STRING = "string"
    BOOLEAN = "boolean"
    INTEGER = "integer"
    LIST = "list"


@dataclass
class MetricAttribute:
    """One attribute of the registry: its name, raw key, type, default, whether it
    is part of the comprehensive metric name, and its position there."""

    name: str
    raw_key: str
    attr_type: AttributeType
    default: Any
    include_in_comprehensive: bool = True
    metric_order: int = 100


#: The registry. A processor reads it when it is created (or its builders change);
#: entries appended before that are normalised and used like the built-in nine.
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


def _registry_document() -> Dict[str, Any]:
    """``METRIC_ATTRIBUTES`` as a registry document for the Rust processor."""
    entries = []
    for attr in METRIC_ATTRIBUTES:
        attr_type = attr.attr_type
        entries.append(
            {
                "name": attr.name,
                "raw_key": attr.raw_key,
                "type": attr_type.value if isinstance(attr_type, AttributeType) else attr_type,
                "default": attr.default,
                "include_in_comprehensive": attr.include_in_comprehensive,
                "metric_order": attr.metric_order,
            }
        )
    return {"include_defaults": False, "attributes": entries}


def _registry_key() -> Tuple[Any, ...]:
    return tuple(
        (a.name, a.raw_key, a.attr_type, repr(a.default), a.include_in_comprehensive,
         a.metric_order)
        for a in METRIC_ATTRIBUTES
    )


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
    if _registry_key() == _BUILTIN_REGISTRY_KEY:
        return _native.extract_telemetry_data(raw_data)  # type: ignore[no-any-return]
    processor = _native.MetricProcessor([], _registry_document())
    now = datetime.now()
    return processor._apply({}, raw_data, now, now, True)  # type: ignore[no-any-return]


class MetricBuilder(ABC):
    """A builder of metrics. Subclass it and implement :meth:`build`; instances of
    subclasses run after the built-in builders, in the order they were added."""

    @abstractmethod
    def build(
        self,
        metrics: Dict[str, Any],
        telemetry_data: TelemetryData,
        context: Dict[str, Any],
    ) -> None:
        """Updates ``metrics`` in place from one normalised record."""


class _NativeBuilder(MetricBuilder):
    """A built-in builder: run in Rust by :class:`MetricProcessor`."""

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
        record = {get_attribute_map()[name].raw_key if name in get_attribute_map() else name: value
                  for name, value in dict(telemetry_data).items()}
        processor = _native.MetricProcessor([self._native_name], _registry_document())
        processor._apply(metrics, record, now, old_now, False)


def _is_native(builder: Any) -> bool:
    return isinstance(builder, _NativeBuilder) and type(builder).build is _NativeBuilder.build


class LegacyMetricsBuilder(_NativeBuilder):
    """``total_action_<action>_<pass|fail>``, ``version_<v>_action_<a>``,
    ``network_<n>_action_<a>``, ``gpu_<gpu>_action_<a>``."""

    _native_name = "legacy"


class ComprehensiveMetricsBuilder(_NativeBuilder):
    """One counter named after every comprehensive attribute, the status and the GPUs."""

    _native_name = "comprehensive"


class TimeMetricsBuilder(_NativeBuilder):
    """``time_lapsed_today``: the sum of ``time_lapsed`` over the calendar day."""

    _native_name = "time"


class LabeledMetricsBuilder(_NativeBuilder):
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


_BUILTIN_REGISTRY_KEY = _registry_key()


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
        names = tuple(b._native_name for b in self.builders if _is_native(b))  # type: ignore[attr-defined]
        if names != self._native_names:
            # The registry is read here: when the processor first runs, or its
            # built-in builders changed.
            self._native = _native.MetricProcessor(list(names), _registry_document())
            self._native_names = names
        return self._native, [b for b in self.builders if not _is_native(b)]

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
