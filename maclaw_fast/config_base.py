"""The base of every configuration Struct (:class:`Config`: checked when built, design R8) and the
constrained field types the configs share; the configs themselves are in
:mod:`maclaw_fast.config` (and :mod:`maclaw_fast.router_config`, which it re-exports)."""

from __future__ import annotations

import math
import typing
from typing import Annotated

import msgspec
from msgspec import Meta

from maclaw_fast.errors import ValidationError

# constrained field types: msgspec checks them when a config is built (see Config)
Positive = Annotated[int, Meta(ge=1)]
Seconds = Annotated[float, Meta(ge=0.0)]


class Config(msgspec.Struct, frozen=True, kw_only=True):
    """Base of every configuration Struct: checked when built (design R8).

    Each field's value must match its annotation (``Annotated[int, Meta(ge=1)]``,
    ``Literal[...]``, nested configs, tuples of str ...), as msgspec checks decoded data;
    integers are counts or sizes and may not be negative (list a field in ``_signed`` to allow
    it); floats must be finite. Cross-field rules go in ``check()``. A subclass that defines
    ``__post_init__`` calls ``super().__post_init__()`` first.

    Examples
    --------
    >>> from maclaw_fast.config import CapacityConfig
    >>> CapacityConfig(store_capacity=0)
    Traceback (most recent call last):
    ...
    maclaw_fast.errors.ValidationError: CapacityConfig.store_capacity: Expected `int` >= 1
    """

    def __post_init__(self) -> None:
        cls = type(self)
        hints = _hints(cls)
        signed = getattr(cls, "_signed", ())
        for name in self.__struct_fields__:
            value = getattr(self, name)
            where = f"{cls.__name__}.{name}"
            hint = hints[name]
            if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
                if not isinstance(value, hint):
                    raise ValidationError(f"{where}: expected a {hint.__name__}, got "
                                          f"{type(value).__name__}")
                continue
            try:
                msgspec.convert(value, hint, strict=True)
            except msgspec.ValidationError as exc:
                raise ValidationError(f"{where}: {exc}") from None
            _check_numbers(value, where, name in signed)
        self.check()

    def check(self) -> None:
        """Cross-field rules of a subclass (raise ValidationError)."""


_HINTS: dict[type, dict] = {}


def _hints(cls: type) -> dict:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = _HINTS[cls] = typing.get_type_hints(cls, include_extras=True)
    return hints


def _check_numbers(value, where: str, signed: bool) -> None:
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        if value < 0 and not signed:
            raise ValidationError(f"{where}: must not be negative, got {value}")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{where}: must be a finite number, got {value}")
    elif isinstance(value, (tuple, list)):
        for v in value:
            _check_numbers(v, where, signed)
