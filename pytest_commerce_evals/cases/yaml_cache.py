"""Parsed YAML kept as JSON, so a case or fixture file is parsed once per edit, not once per run.

libyaml parses the reference catalog (250 KB of YAML) in about 0.28 s and a case in about 0.5 ms;
`json.loads` of the same data takes a tenth of that or less. An eval run's first trial waits for
the catalog, and every run collects its cases, so each run paid both before its first model call.

The cache is keyed by a hash of the file's text (never by its modification time), so an edited
file is parsed again and a stale entry is never read. Entries are plain JSON: nothing in the cache
can run code. Data JSON cannot hold exactly (keys that are not strings, binary, sets, text that is
not valid Unicode) is parsed and not cached; an unreadable entry is parsed again and replaced.
Where the cache folder cannot be written, files are parsed as before.

The folder is `$COMMERCE_CACHE_DIR`, else `$XDG_CACHE_HOME/commerce-evals`, else
`~/.cache/commerce-evals`; `COMMERCE_CACHE_DIR=off` turns the cache off.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

__all__ = ["MIN_CHARS", "cache_dir", "load", "memo"]

MIN_CHARS = 8_000  # by default: smaller texts parse in a few milliseconds, not worth an entry
MAX_ENTRIES = 4096  # the oldest entries past this many are removed (once a process)
_VERSION = 1
_DATE, _DATETIME = "$date", "$datetime"


class _Unsupported(Exception):
    pass


def cache_dir() -> Path | None:
    """Where entries live, or None when the cache is off."""
    explicit = os.environ.get("COMMERCE_CACHE_DIR")
    if explicit is not None:
        return None if explicit.strip().lower() in ("", "off", "0", "no") else Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "commerce-evals"


def load(text: str, loader: type) -> Any:
    """`yaml.load(text, Loader=loader)`, through the cache when the text is large enough.

    YAML errors propagate exactly as from `yaml.load` (a text that fails never has an entry)."""
    return memo(
        text,
        f"yaml:{loader.__name__}",
        lambda t: yaml.load(t, Loader=loader),  # noqa: S506 (callers pass safe loaders)
    )


def memo(
    text: str,
    kind: str,
    compute: Callable[[str], Any],
    min_chars: int = MIN_CHARS,
    valid: Callable[[Any], bool] | None = None,
    text_keys: bool = False,
) -> Any:
    """`compute(text)`, read from the cache when this text was computed before.

    `kind` names the computation (a different kind never reads another's entry). What `compute`
    returns is cached when JSON can hold it (plus dates) and `valid` (if given) accepts it; its
    exceptions propagate and leave no entry. An entry `valid` refuses is computed again.
    `text_keys`: what `valid` accepts has text keys and lists only (the case reader's), so it is
    written with one `json.dumps` unless that finds a date or a key that reads back as one."""
    folder = cache_dir() if len(text) >= min_chars else None
    if folder is None:
        return compute(text)
    # surrogatepass: a text that is not valid Unicode still gets a key (and is never cached)
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=20)
    digest.update(f"\0{_VERSION}:{kind}".encode("utf-8", "surrogatepass"))
    entry = folder / "yaml" / f"{digest.hexdigest()}.json"
    try:
        cached = json.loads(entry.read_bytes(), object_hook=_decode)
    except (OSError, ValueError, TypeError, RecursionError):
        pass  # no entry, or one that is not ours to trust: computed again and replaced
    else:
        if valid is None or valid(cached):
            return cached
    value = compute(text)
    if valid is not None and not valid(value):
        return value
    try:
        data = _entry(value, text_keys)
    except (_Unsupported, ValueError, RecursionError):
        return value
    _write(entry, data)
    return value


def _entry(value: Any, text_keys: bool) -> bytes:
    """The entry's bytes; raises what cannot be cached (a lone surrogate cannot be written)."""
    if text_keys:
        try:
            plain = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError, RecursionError):
            pass  # a date, or what JSON cannot hold: `_encode` says which
        else:
            if _DATE not in plain:  # "$date" and "$datetime": read back as dates
                return plain.encode("utf-8")
    return json.dumps(_encode(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


_pruned: set[Path] = set()


def _write(entry: Path, data: bytes) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, entry)
        except BaseException:
            os.unlink(tmp)
            raise
        if entry.parent not in _pruned:  # once a process: a listing per write would cost more
            _pruned.add(entry.parent)
            _prune(entry.parent)
    except OSError:
        pass  # a read-only or full disk: parse next time instead


def _prune(folder: Path) -> None:
    entries = [p for p in folder.glob("*.json")]
    if len(entries) <= MAX_ENTRIES:
        return
    by_age = sorted(entries, key=lambda p: p.stat().st_mtime)
    for old in by_age[: len(entries) - MAX_ENTRIES]:
        old.unlink(missing_ok=True)


def _encode(obj: Any) -> Any:
    if obj is None or isinstance(obj, (str, bool, int, float)):
        return obj
    if isinstance(obj, list):
        return [_encode(v) for v in obj]
    if isinstance(obj, dict):
        if not all(isinstance(k, str) for k in obj):
            raise _Unsupported("a key that is not a string")
        if len(obj) == 1 and next(iter(obj)) in (_DATE, _DATETIME):
            raise _Unsupported("a mapping that looks like an encoded date")
        return {k: _encode(v) for k, v in obj.items()}
    if isinstance(obj, dt.datetime):
        return {_DATETIME: obj.isoformat()}
    if isinstance(obj, dt.date):
        return {_DATE: obj.isoformat()}
    raise _Unsupported(type(obj).__name__)


def _decode(obj: dict[str, Any]) -> Any:
    if len(obj) == 1:
        if _DATE in obj:
            return dt.date.fromisoformat(obj[_DATE])
        if _DATETIME in obj:
            return dt.datetime.fromisoformat(obj[_DATETIME])
    return obj
