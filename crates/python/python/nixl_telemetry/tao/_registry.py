"""``METRIC_ATTRIBUTES`` as the Rust processor reads it (internal)."""

from typing import Any, Dict, Tuple

from nixl_telemetry.tao import config
from nixl_telemetry.tao.types import AttributeType


def registry_document() -> Dict[str, Any]:
    """The registry as a registry document for the Rust processor."""
    entries = []
    for attr in config.METRIC_ATTRIBUTES:
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


def registry_key() -> Tuple[Any, ...]:
    """What the registry holds now (to tell whether it changed)."""
    return tuple(
        (a.name, a.raw_key, a.attr_type, repr(a.default), a.include_in_comprehensive,
         a.metric_order)
        for a in config.METRIC_ATTRIBUTES
    )


BUILTIN_KEY = registry_key()
