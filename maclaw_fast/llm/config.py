"""Connection settings of one LLM endpoint, and where they come from in the environment."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import msgspec

from maclaw_fast.errors import ValidationError

PROTOCOLS: tuple[str, ...] = ("openai", "anthropic")

_ENDPOINTS = {"openai": "chat/completions", "anthropic": "messages"}
# A base URL that already names a version ("/v1", "/api/paas/v4") only needs the endpoint.
_VERSIONED = re.compile(r"/v\d+[a-z0-9]*$")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


class LLMConfig(msgspec.Struct, frozen=True, kw_only=True):
    """Where and how to reach one chat model.

    Parameters
    ----------
    protocol : {"openai", "anthropic"}
        Wire protocol: OpenAI chat-completions or Anthropic messages.
    base_url : str
        Server root (``https://api.openai.com/v1``, ``https://api.anthropic.com``) or the full
        endpoint URL; see :meth:`endpoint`.
    model : str
        Model name sent with every request.
    api_key : str
        Sent as ``Authorization: Bearer`` (openai) or ``x-api-key`` (anthropic); may be empty
        for local servers.
    timeout_s : float
        Connect / read / write / pool timeout of one HTTP attempt, in seconds.
    max_retries : int
        Extra attempts after a 429, a 5xx, a connection error or a timeout.
    backoff_s : float
        First retry delay; doubles on every further retry.
    max_backoff_s : float
        Cap of any single delay, including one asked for by ``Retry-After``.
    merge_system : bool
        Merge every system message into one leading message (providers such as MiniMax reject
        more than one, or one that is not first).
    max_tokens : int
        Reply token limit (required by the Anthropic protocol, sent for both).
    temperature : float or None
        Sampling temperature; ``None`` leaves the provider default.

    Examples
    --------
    >>> cfg = LLMConfig(base_url="http://127.0.0.1:8000/v1", model="m")
    >>> cfg.endpoint()
    'http://127.0.0.1:8000/v1/chat/completions'
    """

    protocol: str = "openai"
    base_url: str
    model: str
    api_key: str = ""
    timeout_s: float = 30.0
    max_retries: int = 2
    backoff_s: float = 0.5
    max_backoff_s: float = 8.0
    merge_system: bool = False
    max_tokens: int = 4096
    temperature: float | None = None

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValidationError(
                f"LLM protocol must be one of {PROTOCOLS}, got {self.protocol!r}"
            )
        if not re.match(r"^https?://[^/\s]+", self.base_url or ""):
            raise ValidationError(
                f"LLM base_url must be an http(s) URL, got {self.base_url!r}"
            )
        if not self.model or not self.model.strip():
            raise ValidationError("LLM model must be a non-empty name")
        if not self.timeout_s > 0:
            raise ValidationError(f"timeout_s must be > 0, got {self.timeout_s!r}")
        if self.max_retries < 0:
            raise ValidationError(f"max_retries must be >= 0, got {self.max_retries!r}")
        if self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ValidationError("backoff_s and max_backoff_s must be >= 0")
        if self.max_tokens <= 0:
            raise ValidationError(f"max_tokens must be > 0, got {self.max_tokens!r}")

    def __repr__(self) -> str:
        # Configs end up in logs and tracebacks; the key must not.
        key = "'***'" if self.api_key else "''"
        return (f"LLMConfig(protocol={self.protocol!r}, base_url={self.base_url!r}, "
                f"model={self.model!r}, api_key={key}, timeout_s={self.timeout_s!r}, "
                f"max_retries={self.max_retries!r}, merge_system={self.merge_system!r})")

    def endpoint(self) -> str:
        """The URL requests are POSTed to.

        A base URL that already ends with the protocol's endpoint is used as is; one that ends
        with a version segment (``/v1``, ``/v4``) gets the endpoint appended; anything else gets
        ``/v1/<endpoint>``.

        Examples
        --------
        >>> LLMConfig(protocol="anthropic", base_url="https://api.anthropic.com",
        ...           model="m").endpoint()
        'https://api.anthropic.com/v1/messages'
        """
        path = _ENDPOINTS[self.protocol]
        base = self.base_url.rstrip("/")
        if base.endswith("/" + path):
            return base
        if _VERSIONED.search(base):
            return f"{base}/{path}"
        return f"{base}/v1/{path}"

    @classmethod
    def from_env(
        cls, prefix: str = "MACLAW_LLM_", environ: Mapping[str, str] | None = None
    ) -> LLMConfig | None:
        """Read the configuration from environment variables.

        Reads ``<prefix>BASE_URL``, ``MODEL``, ``API_KEY``, ``PROTOCOL`` and, optionally,
        ``TIMEOUT_S``, ``MAX_RETRIES``, ``MAX_TOKENS`` and ``MERGE_SYSTEM``. When
        ``MERGE_SYSTEM`` is unset it is switched on for MiniMax (by URL or model name).

        Returns
        -------
        LLMConfig or None
            ``None`` when no base URL or no model is set: running without an LLM is normal.

        Raises
        ------
        ValidationError
            A variable is set but unusable (unknown protocol, non-numeric timeout, ...).

        Examples
        --------
        >>> LLMConfig.from_env(environ={}) is None
        True
        >>> LLMConfig.from_env(environ={"MACLAW_LLM_BASE_URL": "http://h/v1",
        ...                             "MACLAW_LLM_MODEL": "m"}).protocol
        'openai'
        """
        env = os.environ if environ is None else environ

        def get(name: str) -> str:
            return (env.get(prefix + name) or "").strip()

        base_url, model = get("BASE_URL"), get("MODEL")
        if not base_url or not model:
            return None
        kwargs: dict = {
            "base_url": base_url,
            "model": model,
            "api_key": get("API_KEY"),
            "protocol": (get("PROTOCOL") or "openai").lower(),
        }
        for name, field, kind in (
            ("TIMEOUT_S", "timeout_s", float),
            ("MAX_RETRIES", "max_retries", int),
            ("MAX_TOKENS", "max_tokens", int),
        ):
            raw = get(name)
            if raw:
                try:
                    kwargs[field] = kind(raw)
                except ValueError:
                    raise ValidationError(f"{prefix}{name} is not a number: {raw!r}") from None
        merge = get("MERGE_SYSTEM").lower()
        if merge in _TRUE:
            kwargs["merge_system"] = True
        elif merge and merge not in _FALSE:
            raise ValidationError(f"{prefix}MERGE_SYSTEM must be true/false, got {merge!r}")
        elif not merge and "minimax" in (base_url + " " + model).lower():
            kwargs["merge_system"] = True
        return cls(**kwargs)
