"""The model hub: where its cache is, the one place locallens reaches it from (`locallens pull`),
and the timeouts it is held to.

Every request to the hub (the reachability probe, and the hub client's own requests when `pull`
downloads a model) has a connect timeout and a read timeout, so a network that
accepts the connection and then never answers (a captive portal, a stalled proxy) costs seconds,
not a hang:

- `probe(what)` asks the hub for the model's page with `PROBE_TIMEOUT_S` on connecting and on
  every read (the TLS handshake included): any HTTP answer means it is reachable, anything else
  is ModelUnavailableError (exit 6) naming `what`.
- `bounded_client()` sets the hub client's HTTP session (huggingface_hub's `set_client_factory`)
  to one whose request hook caps each request's timeouts at `CONNECT_TIMEOUT_S` and
  `READ_TIMEOUT_S`, whatever a caller inside the hub library asked for (some of its calls ask for
  none), through a proxy too.

Caller: `pull`, the only command that downloads; every other command finds models in the cache
(`hf_cache_dir`) or exits 6 saying which `pull` to run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from locallens.errors import ModelUnavailableError

CONNECT_TIMEOUT_S = 5.0
READ_TIMEOUT_S = 20.0  # between two reads of one response: a large file may take long in all
PROBE_TIMEOUT_S = 5.0
DEFAULT_ENDPOINT = "https://" + "huggingface.co"


def hf_cache_dir() -> Path:
    """The Hugging Face cache: `$HF_HUB_CACHE`, else `$HF_HOME/hub`, else ~/.cache/huggingface/hub."""
    if explicit := os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE"):
        return Path(explicit).expanduser()
    hf_home = os.environ.get("HF_HOME") or str(Path.home() / ".cache" / "huggingface")
    return Path(hf_home).expanduser() / "hub"


def endpoint() -> str:
    """The hub's base URL (`HF_ENDPOINT`, as the hub client reads it)."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def probe(repo_id: str, what: str, advice: str = "") -> None:
    """Return when the hub answers about `repo_id` within the timeouts; else ModelUnavailableError
    saying `what` is missing, that the hub did not answer, then `advice`."""
    import urllib.error
    import urllib.request

    base = endpoint()
    host = urlsplit(base).hostname or base
    request = urllib.request.Request(f"{base}/api/models/{quote(repo_id, safe='/')}", method="HEAD")
    try:
        # One socket timeout: it bounds the connect, the TLS handshake and every read.
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S):
            return
    except urllib.error.HTTPError:
        return  # it answered (401, 404, ...): reachable; loading the model says the rest
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        kind = "no answer" if isinstance(reason, TimeoutError) else type(reason).__name__
        raise ModelUnavailableError(
            f"{what} and the model hub ({host}) cannot be reached to download it ({kind} within "
            f"{PROBE_TIMEOUT_S:g} s)" + (f"; {advice}" if advice else "")
        ) from None


def _capped(timeouts: dict[str, Any]) -> dict[str, Any]:
    caps = {"connect": CONNECT_TIMEOUT_S, "read": READ_TIMEOUT_S, "write": READ_TIMEOUT_S, "pool": READ_TIMEOUT_S}
    return {key: cap if timeouts.get(key) is None else min(timeouts[key], cap) for key, cap in caps.items()}


def cap_timeouts(request: Any) -> None:
    """An httpx request hook: no request waits longer than the caps, whatever it asked for."""
    request.extensions = {**request.extensions, "timeout": _capped(request.extensions.get("timeout") or {})}


def bounded_client() -> None:
    """Make the hub client's HTTP session one whose every request has the capped timeouts."""
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils import _http

    def factory() -> Any:
        client = _http.default_client_factory()  # the hub's own hooks (offline mode, download tags)
        hooks = client.event_hooks
        client.event_hooks = {**hooks, "request": [*hooks.get("request", []), cap_timeouts]}
        return client

    set_client_factory(factory)
