"""The eight event categories (the numbers are the ring format's)."""

from enum import IntEnum


class Category(IntEnum):
    """An event's category. Readers print unknown numbers as ``UNKNOWN_CATEGORY_<n>``."""

    MEMORY = 0
    TRANSFER = 1
    CONNECTION = 2
    BACKEND = 3
    ERROR = 4
    PERFORMANCE = 5
    SYSTEM = 6
    CUSTOM = 7
