"""Secrets kept out of everything the package writes or says: the one masking function behind config export, MLflow
params and artifacts, the replay journal, logs and every error message.

A secret here is a password inside a URL (``scheme://user:PASSWORD@host``) or a query or connection-string
parameter that names one (``password=``, ``api_key=``, ``token=``, ``secret=`` …). Secrets that a config names by
environment variable (``api_key_env``) never reach a config at all; these are the ones a user typed into a URL.

Examples:
    >>> mask_secrets("http://alice:s3cret@10.0.0.5:4000/v1")
    'http://alice:***@10.0.0.5:4000/v1'
    >>> mask_secrets("store postgresql://app:pw@db/mem?sslmode=require&password=pw2 failed")
    'store postgresql://app:***@db/mem?sslmode=require&password=*** failed'
    >>> mask_secrets("host=db user=app password=hunter2 dbname=mem")
    'host=db user=app password=*** dbname=mem'
    >>> mask_data({"reflect": {"llm": {"api_base": "http://u:p@h"}}, "top_k": 5})
    {'reflect': {'llm': {'api_base': 'http://u:***@h'}}, 'top_k': 5}
"""

from __future__ import annotations

import re
from typing import Any, Iterable

__all__ = ["MASK", "has_secret", "mask_data", "mask_secrets"]

MASK = "***"

# scheme://user:password@ — the password is everything between the first ':' after '//' and the last '@' before
# the host (a password may itself hold '@' or ':' when the user did not percent-encode it).
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s/:@?#]*:)(?P<secret>[^\s/?#]*)(?=@[^\s@]*)")
_PARAM_NAMES = r"password|passwd|pwd|pass|secret|token|api[_-]?key|apikey|access[_-]?token|auth|sslpassword"
# name=value in a query string (?a=1&password=x) or a libpq connection string (password=x user=y)
_PARAM = re.compile(rf"(?P<head>(?:^|[?&;\s])(?:{_PARAM_NAMES})=)(?P<secret>[^&;\s#]+)", re.IGNORECASE)


def mask_secrets(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every URL password, every secret-named parameter and each of ``secrets`` (values known to be
    secret, e.g. a password a driver may echo on its own) replaced by ``***``."""
    if not isinstance(text, str) or not text:
        return text
    out = _USERINFO.sub(lambda m: m["head"] + (MASK if m["secret"] else ""), text)
    out = _PARAM.sub(lambda m: m["head"] + MASK, out)
    for secret in secrets:
        if secret and len(secret) >= 3:
            out = out.replace(secret, MASK)
    return out


def has_secret(text: str) -> bool:
    """Whether :func:`mask_secrets` would change ``text``."""
    return mask_secrets(text) != text


def mask_data(value: Any) -> Any:
    """A copy of ``value`` (nested dicts, lists, tuples) with :func:`mask_secrets` applied to every string in it,
    keys included; other values are returned as they are."""
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {mask_data(k): mask_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(mask_data(v) for v in value)
    return value
