"""When each vLLM release was published: the first upload of its files to PyPI.

Source: https://pypi.org/pypi/vllm/json, the earliest `upload_time` among each release's files
(read 2026-12-02). Used to date a deployment whose log prints no release: a server started on a day
ran, at the newest, the release published on or before that day (`latest_at`). Data only: nothing
here imports the memory model.
"""

from __future__ import annotations

import datetime as _dt

# release -> first PyPI upload (UTC date), https://pypi.org/pypi/vllm/json
FIRST_UPLOAD: dict[str, _dt.date] = {
    version: _dt.date.fromisoformat(day) for version, day in (
        ("0.9.0", "2025-05-28"),
        ("0.9.2", "2025-07-08"),
        ("0.10.0", "2025-07-25"),
        ("0.10.1", "2025-08-19"),
        ("0.10.2", "2025-09-13"),
        ("0.11.0", "2025-10-04"),
        ("0.11.1", "2025-11-19"),
        ("0.12.0", "2025-12-03"),
        ("0.13.0", "2025-12-19"),
        ("0.14.0", "2026-01-20"),
        ("0.15.0", "2026-01-29"),
        ("0.16.0", "2026-02-26"),
        ("0.17.0", "2026-03-07"),
        ("0.18.0", "2026-03-20"),
        ("0.19.0", "2026-04-03"),
        ("0.20.0", "2026-04-27"),
        ("0.21.0", "2026-05-15"),
        ("0.22.0", "2026-05-29"),
        ("0.23.0", "2026-06-13"),
        ("0.24.0", "2026-06-30"),
        ("0.25.0", "2026-07-11"),
        ("0.26.0", "2026-07-25"),
        ("0.27.0", "2026-08-10"),
        ("0.28.0", "2026-08-26"),
        ("0.29.0", "2026-09-09"),
        ("0.30.0", "2026-09-22"),
        ("0.31.0", "2026-10-05"),
        ("0.32.0", "2026-10-18"),
        ("0.33.0", "2026-11-02"),
    )
}


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def latest_at(date: _dt.date | str) -> str:
    """The newest release whose first PyPI upload was on or before `date` (a date or 'YYYY-MM-DD').
    Raises ValueError for a date before the first release listed here."""
    day = _dt.date.fromisoformat(date) if isinstance(date, str) else date
    if isinstance(day, _dt.datetime):
        day = day.date()
    out = [v for v, d in FIRST_UPLOAD.items() if d <= day]
    if not out:
        first = min(FIRST_UPLOAD, key=_key)
        raise ValueError(f"{day.isoformat()} is before vLLM {first} ({FIRST_UPLOAD[first].isoformat()}), "
                         "the first release dated here")
    return max(out, key=_key)
