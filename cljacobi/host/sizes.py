"""Small size arithmetic every kernel family's plan shares."""

from __future__ import annotations

__all__ = ["COMPLEX_ELEMENT_BYTES", "REAL_ELEMENT_BYTES", "check_power_of_two", "round_up"]

#: Bytes of a matrix element in device memory: float64, and complex128 (whole
#: elements in both complex layouts).
REAL_ELEMENT_BYTES = 8
COMPLEX_ELEMENT_BYTES = 16


def round_up(value: int, multiple: int) -> int:
    """The least multiple of `multiple` that is ``>= value``."""
    return -(-value // multiple) * multiple


def check_power_of_two(name: str, value: int) -> None:
    """Raise ValueError naming `name` unless `value` is a positive power of two."""
    if value < 1 or value & (value - 1):
        raise ValueError(f"{name} must be a power of two, not {value}")
