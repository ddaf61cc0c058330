"""`per_model`: remember a pure function of a (frozen) ModelSpec and hashable arguments, per model object."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
MAX_ENTRIES = 64  # a run meets a few models; the entries keep their model alive, so the cache stays small


def per_model(fn: F) -> F:
    """fn(model, *args, **kwargs) computed once per model object and arguments. For functions pure in a frozen
    ModelSpec and frozen results (ParamCounts, RankSpecs): `check` estimates the same few models hundreds of
    times (one estimate per release, GPU and flags), and these parts depend on the model alone or nearly. The
    key is the model's identity (its fields hash slowly); each entry holds the model, so the identity is not
    reused while the entry lives. Unhashable arguments are computed each time."""
    cache: dict = {}

    @functools.wraps(fn)
    def wrapper(model: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            key = (id(model), args, tuple(sorted(kwargs.items())))
            hit = cache.get(key)
        except TypeError:  # an unhashable argument
            return fn(model, *args, **kwargs)
        if hit is not None and hit[0] is model:
            return hit[1]
        value = fn(model, *args, **kwargs)
        if len(cache) >= MAX_ENTRIES:
            cache.clear()
        cache[key] = (model, value)
        return value

    return wrapper  # type: ignore[return-value]
