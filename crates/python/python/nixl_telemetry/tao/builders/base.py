"""The drop-in's ``nvidia_tao_core.telemetry.builders.base``."""

from abc import ABC, abstractmethod
from typing import Any, Dict

from nixl_telemetry.tao.types import TelemetryData


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
