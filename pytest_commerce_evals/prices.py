"""What a model call costs: the user's price table (ini `commerce_prices`), then pydantic's
`genai-prices` library, in US dollars as `Decimal` (never float). A model neither knows has an
unknown price (None), never 0; the embedded model runs on this machine and costs 0.

    commerce_prices =
        my-finetune = 0.30 1.20          # USD per million input and output tokens
        gpt-4.1-mini = 0.40 1.60 0.10    # and per million cached input tokens
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from .errors import ConfigurationError
from .usage import ModelCall

__all__ = [
    "MAX_DOLLARS",
    "PER_TOKENS",
    "Price",
    "PriceBook",
    "dollars",
    "money",
    "own_server",
    "parse_price_table",
]

PER_TOKENS = Decimal(1_000_000)
"""Prices are per million tokens."""

_LINE = re.compile(r"^\s*(?P<model>[^=]+?)\s*=\s*(?P<prices>.+?)\s*$")


@dataclass(frozen=True)
class Price:
    """US dollars per million input, output and cached input tokens (cached: the input price
    when not given). `source` says where it came from, as the reports show it."""

    input: Decimal
    output: Decimal
    cached: Decimal | None = None
    source: str = "commerce_prices"

    def cost(self, call: ModelCall) -> Decimal | None:
        if call.input_tokens is None or call.output_tokens is None:
            return None
        cached = min(call.cached_tokens or 0, call.input_tokens)
        cached_price = self.input if self.cached is None else self.cached
        return (
            (call.input_tokens - cached) * self.input
            + cached * cached_price
            + call.output_tokens * self.output
        ) / PER_TOKENS


_AMOUNT = re.compile(r"[0-9]+(?:\.[0-9]+)?|\.[0-9]+")
MAX_DOLLARS = 10**9
"""The largest amount of US dollars a budget or a price may name: past it a number is a typo."""


def dollars(text: str) -> Decimal | None:
    """An amount written in ASCII digits with an optional decimal part (`5`, `0.02`, `.5`), at
    most `MAX_DOLLARS`; None for anything else (other scripts' digits, `1_000`, `1e3`, `nan`)."""
    if not _AMOUNT.fullmatch(text):
        return None
    amount = Decimal(text)
    return amount if amount <= MAX_DOLLARS else None


def _decimal(text: str, where: str) -> Decimal:
    value = dollars(text)
    if value is None:
        raise ConfigurationError(
            f"{where}: {text!r} is not a price; write US dollars per million tokens as a "
            f"number of 0 to {MAX_DOLLARS:,} in ASCII digits, e.g. 0.15"
        )
    return value


def parse_price_table(lines: Iterable[str], where: str = "commerce_prices") -> dict[str, Price]:
    """The ini's price table: one `MODEL = INPUT OUTPUT [CACHED]` line per model (US dollars
    per million tokens; `#` starts a comment). A line that is not one raises
    `ConfigurationError` naming it."""
    table: dict[str, Price] = {}
    lines_of: dict[str, int] = {}
    for n, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        at = f"{where} line {n} ({raw.strip()!r})"
        match = _LINE.match(line)
        parts = match.group("prices").split() if match else []
        if match is None or len(parts) not in (2, 3):
            raise ConfigurationError(
                f"{at}: expected MODEL = INPUT OUTPUT [CACHED], US dollars per million tokens "
                "(e.g. gpt-4.1-mini = 0.40 1.60 0.10)"
            )
        values = [_decimal(p, at) for p in parts]
        model = match.group("model")
        if model in table:
            raise ConfigurationError(
                f"{at}: {model!r} is priced twice (line {lines_of[model]} too); keep one line"
            )
        lines_of[model] = n
        table[model] = Price(values[0], values[1], values[2] if len(values) == 3 else None)
    return table


def money(value: Decimal | None, unpriced: int = 0) -> str:
    """Dollars as the reports write them: `$0.0123` (4 decimals below a dollar, 2 above),
    `unknown` for None; with calls that have no price, `≥ $0.0123 (2 calls unpriced)`."""
    if value is None:
        return "unknown"
    places = Decimal("0.01") if abs(value) >= 1 else Decimal("0.0001")
    try:
        text = f"${value.quantize(places, rounding=ROUND_HALF_UP):,}"
    except InvalidOperation:  # more digits than the context holds: written as a power of ten
        text = f"${value:.4e}"
    if value and value < Decimal("0.0001"):
        text = f"${value:.2e}"
    return f"≥ {text} ({unpriced} call(s) unpriced)" if unpriced else text


class PriceBook:
    """Prices by model: `table` first (the user's), then `genai-prices` when installed and
    `library` is on; models in `free` (the embedded model) cost 0."""

    def __init__(
        self,
        table: Mapping[str, Price] | None = None,
        *,
        free: Iterable[str] = (),
        library: bool = True,
    ) -> None:
        self.table = dict(table or {})
        self.free = set(free)
        self.library = library
        self._known: dict[tuple[str, str | None], bool] = {}
        self._lock = threading.Lock()

    def source(self, model: str | None, server: str | None = None) -> str | None:
        """Where `model`'s price comes from (`commerce_prices`, `genai-prices`, `embedded`) for
        a call to `server`, or None when it has none."""
        if not model:
            return None
        if model in self.table:
            return "commerce_prices"
        if model in self.free:
            return "embedded"
        return "genai-prices" if self._library_knows(model, server) else None

    def cost(self, call: ModelCall) -> Decimal | None:
        """The call's price in US dollars; None when the model or its tokens are unknown. A call
        to a server of one's own (loopback or a private network), or to a server not known, has
        no public price: only the table prices it."""
        model = call.model
        if not model or call.input_tokens is None or call.output_tokens is None:
            return None
        price = self.table.get(model)
        if price is not None:
            return price.cost(call)
        if model in self.free:
            return Decimal(0)
        if not self._library_knows(model, call.server):
            return None
        return _library_cost(call)

    def _library_knows(self, model: str, server: str | None = None) -> bool:
        """genai-prices has `model`'s price for a call to `server`: only a server known to be
        a provider's (never one of one's own, so a self-hosted run never loads the library, nor
        a call whose server is not known); asked once per pair."""
        key = (model, server)
        with self._lock:
            known = self._known.get(key)
        if known is None:
            known = (
                self.library
                and server is not None  # a call whose server is not known is not priced publicly
                and not own_server(server)
                and _library_cost(ModelCall("agent", model, 1000, 1000, server=server)) is not None
            )
            with self._lock:
                self._known[key] = known
        return known


_OWN_SUFFIXES = (
    ".local",
    ".localhost",
    ".internal",
    ".intranet",
    ".lan",
    ".home",
    ".home.arpa",
    ".corp",
    ".private",
)
_SHARED = None  # 100.64.0.0/10, carrier-grade NAT and tailnets: not a provider's address


def own_server(server: str | None) -> bool:
    """A server on this machine or a private network (`http://127.0.0.1`, `http://127.1`,
    `http://10.0.0.5`, `http://100.100.1.2`, `http://gpu-box.local`, `http://nas.home.arpa`,
    `http://vllm`, a name with no dot): self-hosted, so no provider's price list has its
    model's price."""
    global _SHARED
    if not server:
        return False
    import ipaddress

    host = server.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[2]
    if host.startswith("["):
        host = host[1:].partition("]")[0]
    elif host.count(":") == 1:
        host = host.partition(":")[0]
    host = host.lower().rstrip(".")
    if host == "localhost" or host.endswith(_OWN_SUFFIXES):
        return True
    try:
        address: Any = ipaddress.ip_address(host)
    except ValueError:
        address = _shorthand_ipv4(host)
        if address is None:
            return "." not in host  # a single-label name (`vllm`, `ollama`): a local network's
    if _SHARED is None:
        _SHARED = ipaddress.ip_network("100.64.0.0/10")
    return bool(
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or (address.version == 4 and address in _SHARED)
    )


def _shorthand_ipv4(host: str) -> Any:
    """`127.1`, `10.1.2` or a single number, as the C library reads an IPv4 address; None when
    the host is not one."""
    import ipaddress
    import socket

    if not host or not all(part.isascii() and part.isdigit() for part in host.split(".")):
        return None
    try:
        return ipaddress.ip_address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def _library_cost(call: ModelCall) -> Decimal | None:
    try:
        import genai_prices
    except ImportError:
        return None
    usage: Any = genai_prices.Usage(
        input_tokens=call.input_tokens,
        output_tokens=call.output_tokens,
        cache_read_tokens=min(call.cached_tokens or 0, call.input_tokens or 0),
    )
    found = None
    if call.server:  # the provider the call went to, when genai-prices knows its address
        try:
            found = genai_prices.calc_price(
                usage, model_ref=str(call.model), provider_api_url=call.server
            )
        except Exception:  # a gateway or proxy it does not know: priced by the model alone
            found = None
    if found is None:
        try:
            found = genai_prices.calc_price(usage, model_ref=str(call.model))
        except Exception:  # LookupError for an unknown model; anything else is no price either
            return None
    total = getattr(found, "total_price", None)
    return total if isinstance(total, Decimal) else None
