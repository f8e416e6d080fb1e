"""Typed values for TOML and environment settings: coercion with errors that name the place,
and TOML printing with secrets redacted.  Shared by the pager's configuration.

>>> coerce("float", "2.5", "env X", text=True), coerce("list", "a, b", "env Y", text=True)
(2.5, ('a', 'b'))
>>> toml_value(Secret("hunter2")), redact_url("https://u:pw@h/p?token=t")
('"**********"', 'https://**********@h/p?**********')
"""

from __future__ import annotations

from typing import Any

from detector.settings import REDACTED, Secret, toml_value  # noqa: F401 - re-exported


def kind_of(f: Any) -> str:
    t = str(f.type)
    if "tuple" in t:
        return "list"
    for kind in ("float", "int", "str"):
        if kind in t:
            return kind
    return "str"


def coerce(kind: str, value: Any, where: str, *, text: bool = False) -> Any:
    """``value`` (from TOML, or a string from the environment when ``text``) as ``kind``."""
    try:
        if kind == "secret":
            return Secret(str(value))
        if kind == "urls" or kind == "list":
            if text:
                return tuple(x.strip() for x in str(value).split(",") if x.strip())
            if isinstance(value, str):
                return (value,) if kind == "urls" else _fail()
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                raise ValueError
            return tuple(value)
        if kind == "bool":
            if text:
                return {"true": True, "1": True, "false": False, "0": False}[str(value).lower()]
            if not isinstance(value, bool):
                raise ValueError
            return value
        if kind == "int":
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError
            return int(value)
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError
            return float(value)
        if not isinstance(value, str):
            raise ValueError
        return value or None if text else value
    except (ValueError, TypeError, KeyError):
        shown = REDACTED if kind == "secret" else repr(value)
        what = {"urls": "a URL or a list of URLs", "list": "a list of strings"}.get(kind, kind)
        raise ValueError(f"{where}: must be {what}, got {shown}") from None


def redact_url(url: str) -> str:
    head, _, query = url.partition("?")
    scheme, sep, rest = head.partition("://")
    if "@" in rest.split("/", 1)[0]:
        rest = REDACTED + "@" + rest.split("@", 1)[1]
    return f"{scheme}{sep}{rest}" + (f"?{REDACTED}" if query else "")


def _fail() -> Any:
    raise ValueError

