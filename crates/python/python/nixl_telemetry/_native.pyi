"""Type stubs of the Rust extension module ``nixl_telemetry._native``."""

import os
from datetime import datetime
from types import TracebackType
from typing import (
    Any,
    Dict,
    Iterable,
    Iterator,
    List,
    Literal,
    Mapping,
    Optional,
    Tuple,
    Type,
    Union,
    overload,
)

from nixl_telemetry._category import Category

_Path = Union[str, "os.PathLike[str]"]
_Context = Optional[Mapping[str, datetime]]
_Record = Dict[str, Any]

GPU_PRIORITY: Tuple[str, ...]

__version__: str
"""The package's version, the workspace's (e.g. ``0.1.0``)."""
__build__: str
"""The version and the commit built from, as the tools' ``--version`` prints it."""

class TelemetryError(ValueError):
    """An invalid setting or variable, or telemetry could not start."""

class RingError(ValueError):
    """A ring file or directory cannot be read."""

class ProcessingError(ValueError):
    """A record, a metric or a processor setting is invalid."""

class EventHandle:
    """A pre-resolved (category, name); ``record`` is the fast path."""

    @property
    def enabled(self) -> bool: ...
    def record(self, value: int) -> None: ...

class Telemetry:
    """Telemetry of one agent; a context manager that flushes and closes on exit."""

    def __init__(
        self,
        agent: str,
        *,
        enabled: bool = ...,
        buffer_size: int = ...,
        run_interval_ms: int = ...,
        dir: Optional[_Path] = ...,
        exporter: Optional[str] = ...,
        output_path: Optional[_Path] = ...,
        plugin_dirs: Iterable[_Path] = ...,
        enabled_metrics: Optional[str] = ...,
        ring_version: Union[int, str] = ...,
    ) -> None: ...
    @staticmethod
    def from_env(agent: str) -> "Telemetry": ...
    @property
    def agent(self) -> str: ...
    @property
    def enabled(self) -> bool: ...
    @property
    def closed(self) -> bool: ...
    def handle(self, category: Union[Category, int], name: str) -> EventHandle: ...
    def record(self, category: Union[Category, int], name: str, value: int) -> None: ...
    def transfer_completed(self, duration_us: int, write: bool, nbytes: int) -> None: ...
    def post_time(self, us: int) -> None: ...
    def memory_registered(self, nbytes: int) -> None: ...
    def memory_deregistered(self, nbytes: int) -> None: ...
    def error(self, status: str) -> None: ...
    def backend_event(self, name: str, value: int) -> None: ...
    def connection_event(self, name: str, value: int) -> None: ...
    def flush(self) -> None: ...
    def stats(self) -> Dict[str, int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Telemetry": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...

class Event:
    """One event read from a ring."""

    def __init__(
        self,
        timestamp_us: Optional[int],
        category: Optional[int],
        name: str,
        value: int,
        agent: Optional[str] = None,
    ) -> None: ...
    @property
    def timestamp_us(self) -> Optional[int]: ...
    @property
    def category(self) -> Union[Category, int, None]: ...
    @property
    def category_name(self) -> Optional[str]: ...
    @property
    def name(self) -> str: ...
    @property
    def value(self) -> int: ...
    @property
    def agent(self) -> Optional[str]: ...
    def as_dict(self) -> Dict[str, Any]: ...

class Trailer:
    """A ring trailer: loss counters and producer liveness."""

    version: int
    producer_pid: int
    closed: bool
    created_us: int
    events_written: int
    dropped_staging_full: int
    dropped_ring_full: int
    dropped_format: int
    last_flush_us: int
    events_lost: int

class Ring:
    """A ring file, or a directory of ring files, being read."""

    def __init__(self, path: _Path, peek: bool = False) -> None: ...
    def read(self, max_events: Optional[int] = None) -> List[Event]: ...
    def read_columns(self, max_events: Optional[int] = None) -> Dict[str, Any]:
        """Columns, one entry per event: ``value`` an ``array('Q')``, ``name`` (and
        ``agent`` for a directory) lists; ``timestamp_us`` (``array('Q')``) and
        ``category`` (``array('i')``) are ``None`` when no ring read carries the
        field (versions 2-4, 3-4), a list with ``None`` for the events without it
        when only some rings of a directory do."""
    def __iter__(self) -> Iterator[Event]: ...
    @property
    def pending(self) -> int: ...
    @property
    def path(self) -> str: ...
    @property
    def is_directory(self) -> bool: ...
    @property
    def peek(self) -> bool: ...
    @property
    def agents(self) -> List[str]: ...
    @property
    def layout(self) -> Optional[str]: ...
    @property
    def layouts(self) -> List[Tuple[str, str]]: ...
    @property
    def skipped(self) -> List[Tuple[str, str]]: ...
    @property
    def trailer(self) -> Optional[Trailer]: ...
    @property
    def trailers(self) -> List[Tuple[str, Optional[Trailer]]]: ...
    @property
    def dropped_staging_full(self) -> int: ...
    @property
    def dropped_ring_full(self) -> int: ...
    @property
    def dropped_format(self) -> int: ...
    @property
    def events_lost(self) -> int: ...
    @property
    def events_read(self) -> int: ...
    @property
    def malformed(self) -> int: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Ring": ...
    def __exit__(
        self,
        exc_type: Optional[Type[BaseException]],
        exc: Optional[BaseException],
        tb: Optional[TracebackType],
    ) -> Literal[False]: ...

@overload
def read_ring(path: _Path, peek: bool = False, columns: Literal[False] = False) -> List[Event]: ...
@overload
def read_ring(path: _Path, peek: bool = False, *, columns: Literal[True]) -> Dict[str, Any]: ...

class MetricProcessor:
    """Turns usage records into metrics in the caller's dict."""

    def __init__(
        self,
        builders: Union[None, str, Iterable[str]] = None,
        attributes: Union[None, _Path, Mapping[str, Any]] = None,
    ) -> None: ...
    @property
    def builder_names(self) -> List[str]: ...
    def process(
        self, metrics: Dict[Any, Any], record: _Record, context: _Context = None
    ) -> Dict[Any, Any]: ...
    def process_many(
        self,
        metrics: Dict[Any, Any],
        records: Iterable[Union[_Record, Tuple[_Record, Union[datetime, _Context]]]],
        context: _Context = None,
    ) -> Dict[Any, Any]: ...
    def to_prometheus(self, metrics: Dict[Any, Any]) -> str: ...
    def _apply(
        self,
        metrics: Dict[Any, Any],
        record: _Record,
        now: datetime,
        old_now: datetime,
        want_data: bool,
    ) -> Any: ...

def extract_telemetry_data(raw_data: Mapping[str, Any]) -> Dict[str, Any]: ...
def sanitize_field_value(value: Any, uppercase: bool = False) -> str: ...
def create_gpu_identifier(gpu_list: Iterable[Any]) -> str: ...
def extract_gpu_type(gpu_name: str) -> str: ...
def extract_primary_gpu(gpus: List[str]) -> str: ...
