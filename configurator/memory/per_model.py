"""`per_model`: remember a pure function of a (frozen) ModelSpec and hashable arguments, per model object."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])
MAX_ENTRIES = 64  # a run meets a few models; the entries keep their model alive, so the cache stays small


def per_model(fn: F | None = None, *, pinned: int = 1, max_entries: int = MAX_ENTRIES) -> Any:
    """fn(model, *args, **kwargs) computed once per model object and arguments. For functions pure in a frozen
    ModelSpec and frozen results (ParamCounts, RankSpecs): `check` estimates the same few models hundreds of
    times (one estimate per release, GPU and flags), and these parts depend on the model alone or nearly. The
    key is the model's identity (its fields hash slowly); each entry holds the model, so the identity is not
    reused while the entry lives. Unhashable arguments are computed each time. `pinned`: how many leading
    arguments are keyed (and held) so, the model and, say, its frozen per-rank specs (`@per_model(pinned=2)`)."""
    if fn is None:
        return lambda f: per_model(f, pinned=pinned, max_entries=max_entries)
    cache: dict = {}

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        held = args[:pinned]
        try:
            key = (*map(id, held), args[pinned:], tuple(sorted(kwargs.items())))
            hit = cache.get(key)
        except TypeError:  # an unhashable argument
            return fn(*args, **kwargs)
        if hit is not None and all(a is b for a, b in zip(hit[0], held, strict=True)):
            return hit[1]
        value = fn(*args, **kwargs)
        if len(cache) >= max_entries:
            cache.clear()
        cache[key] = (held, value)
        return value

    return wrapper
