"""NIXL telemetry from Python, backed by the nixl-telemetry Rust crates.

* Recording: :class:`Telemetry` (``Telemetry(agent, **settings)`` or
  ``Telemetry.from_env(agent)``), :class:`EventHandle` for the hot path,
  :class:`Category`.
* Reading: :func:`read_ring` and :class:`Ring` (a ring file or a directory of
  them), yielding :class:`Event` records; :class:`Trailer` carries the loss counters.
* Processing: :class:`MetricProcessor` turns usage records into metrics in a dict;
  :mod:`nixl_telemetry.tao` is a drop-in for ``nvidia_tao_core.telemetry``.

See ``docs/python.md``.
"""

from nixl_telemetry._category import Category
from nixl_telemetry._native import (
    Event,
    EventHandle,
    MetricProcessor,
    ProcessingError,
    Ring,
    RingError,
    Telemetry,
    TelemetryError,
    Trailer,
    __build__,
    __version__,
    read_ring,
)

__all__ = [
    "__build__",
    "__version__",
    "Category",
    "Event",
    "EventHandle",
    "MetricProcessor",
    "ProcessingError",
    "Ring",
    "RingError",
    "Telemetry",
    "TelemetryError",
    "Trailer",
    "read_ring",
]
