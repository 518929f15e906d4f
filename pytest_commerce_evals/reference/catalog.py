"""The reference store's fixtures: pydantic models and a loader that says exactly what is wrong.

Every fixture file is validated on load (`extra="forbid"`); an error names the file, the key path
and what was found. Money is integer minor units (cents) with a currency, never a float.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..cases import yaml_cache as _yaml_cache
from ..cases.case import State
from ..errors import FixtureError
from ..events import event_from_json
from .discounts import Discount

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

__all__ = [
    "FIXTURES_DIR",
    "POISONED_DIR",
    "Catalog",
    "Customer",
    "FixtureError",
    "Order",
    "PoisonManifest",
    "Product",
    "Skill",
    "load_catalog",
    "load_demo",
    "load_poison_manifest",
]

REPO_ROOT = Path(__file__).resolve().parents[2]
FIXTURES_DIR = REPO_ROOT / "fixtures"
POISONED_DIR = REPO_ROOT / "poisoned_fixtures"

PRODUCT_ID = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*-\d{3}$")
ORDER_ID = re.compile(r"^ord-\d{4}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _minor_units(value: Any) -> Any:
    if isinstance(value, float) or (isinstance(value, str) and "." in value):
        raise ValueError(
            f"money is an integer number of minor units (cents), e.g. 12999 for 129.99; "
            f"found {value!r}"
        )
    return value


class Price(_Strict):
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    list: int = Field(ge=0, strict=True)
    today: int = Field(ge=0, strict=True)

    _money = field_validator("list", "today", mode="before")(_minor_units)

    @model_validator(mode="after")
    def _not_above_list(self) -> Price:
        if self.today > self.list:
            raise ValueError(f"today's price {self.today} is above the list price {self.list}")
        return self


class Seller(_Strict):
    name: str
    first_party: bool


class Availability(_Strict):
    status: Literal["in_stock", "low_stock", "out_of_stock", "backorder"]
    count: int | None = Field(default=None, ge=1)
    available_on: date | None = None

    @model_validator(mode="after")
    def _fields_match_status(self) -> Availability:
        if self.status == "low_stock" and self.count is None:
            raise ValueError("low_stock needs a count (units left)")
        if self.status != "low_stock" and self.count is not None:
            raise ValueError(f"count is only for low_stock, found it on {self.status}")
        if self.status == "backorder" and self.available_on is None:
            raise ValueError("backorder needs available_on (the date it ships)")
        if self.status != "backorder" and self.available_on is not None:
            raise ValueError(f"available_on is only for backorder, found it on {self.status}")
        return self


Date = date  # the Delivery model has a field called `date`


class Delivery(_Strict):
    days: int | None = Field(default=None, ge=0)
    date: Date | None = None

    @model_validator(mode="after")
    def _one_of(self) -> Delivery:
        if (self.days is None) == (self.date is None):
            raise ValueError("a delivery estimate has exactly one of days or date")
        return self


class Variant(_Strict):
    sku: str
    label: str
    options: dict[str, str] = Field(default_factory=dict)
    availability: Availability | None = None


class Rating(_Strict):
    average: float = Field(ge=1, le=5)
    count: int = Field(ge=0)


class Review(_Strict):
    author: str
    rating: int = Field(ge=1, le=5)
    text: str


AttributeValue = bool | int | float | str | list[str]


class Product(_Strict):
    id: str
    niche: str
    title: str
    brand: str
    seller: Seller
    price: Price
    availability: Availability
    delivery: Delivery | None = None
    attributes: dict[str, AttributeValue] = Field(default_factory=dict)
    variants: list[Variant] = Field(default_factory=list)
    rating: Rating
    reviews: list[Review] = Field(default_factory=list)
    description: str = ""
    supplier_note: str | None = None
    tags: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not PRODUCT_ID.match(value):
            raise ValueError(
                f"product id {value!r} must be lower-case words and a three-digit number, "
                "e.g. shoe-trail-001"
            )
        return value

    @model_validator(mode="after")
    def _delivery_when_buyable(self) -> Product:
        if self.availability.status != "out_of_stock" and self.delivery is None:
            raise ValueError(f"{self.availability.status} products need a delivery estimate")
        return self


class Address(_Strict):
    street: str
    city: str
    postal_code: str
    country: str


class Customer(_Strict):
    id: str = Field(pattern=r"^cust-\d{3}$")
    name: str
    email: str
    phone: str
    address: Address
    member_since: date
    loyalty_tier: Literal["standard", "silver", "gold"]


class OrderLine(_Strict):
    product_id: str
    title: str
    quantity: int = Field(ge=1)
    unit_price: int = Field(ge=0, strict=True)
    variant: str | None = None

    _money = field_validator("unit_price", mode="before")(_minor_units)


class Shipping(_Strict):
    carrier: str | None = None
    tracking: str | None = None
    estimated_delivery: date
    previous_estimate: date | None = None
    update_reason: str | None = None
    delivered_on: date | None = None


class ReturnInfo(_Strict):
    requested_on: date
    reason: str
    refund: int = Field(ge=0, strict=True)
    refunded_on: date | None = None

    _money = field_validator("refund", mode="before")(_minor_units)


class Cancellation(_Strict):
    cancelled_on: date
    reason: str


class OrderMessage(_Strict):
    sender: str = Field(alias="from")
    sent_on: date
    text: str

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Order(_Strict):
    id: str
    customer_id: str
    status: Literal["placed", "shipped", "delivered", "returned", "cancelled"]
    placed_on: date
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    lines: list[OrderLine] = Field(min_length=1)
    total: int = Field(ge=0, strict=True)
    shipping: Shipping | None = None
    return_info: ReturnInfo | None = None
    cancellation: Cancellation | None = None
    messages: list[OrderMessage] = Field(default_factory=list)

    _money = field_validator("total", mode="before")(_minor_units)

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not ORDER_ID.match(value):
            raise ValueError(f"order id {value!r} must look like ord-1001")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Order:
        total = sum(line.unit_price * line.quantity for line in self.lines)
        if total != self.total:
            raise ValueError(f"total {self.total} does not equal the sum of its lines ({total})")
        if self.status == "cancelled" and self.cancellation is None:
            raise ValueError("a cancelled order needs cancellation (cancelled_on, reason)")
        if self.status == "returned" and self.return_info is None:
            raise ValueError("a returned order needs return_info")
        if self.status in ("delivered", "returned") and (
            self.shipping is None or self.shipping.delivered_on is None
        ):
            raise ValueError(f"a {self.status} order needs shipping.delivered_on")
        if self.status in ("placed", "shipped") and self.shipping is None:
            raise ValueError(f"a {self.status} order needs shipping.estimated_delivery")
        return self


class Caps(_Strict):
    max_quantity_per_line: int = Field(default=10, ge=1)
    max_cart_lines: int = Field(default=20, ge=1)
    max_tool_calls_per_turn: int = Field(default=12, ge=1)


class Store(_Strict):
    today: date
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    default_customer: str
    caps: Caps = Field(default_factory=Caps)
    discounts: list[Discount] = Field(default_factory=list)


class SkillHeader(_Strict):
    name: str = Field(pattern=r"^[a-z][a-z0-9-]*$")
    description: str
    roles: list[Literal["customer", "operator"]] = Field(min_length=1)


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    roles: tuple[str, ...]
    body: str


class CatalogFile(_Strict):
    niche: str | None = None
    products: list[Product]


class CustomersFile(_Strict):
    customers: list[Customer]


class OrdersFile(_Strict):
    orders: list[Order]


class PoisonedItem(_Strict):
    id: str
    kind: Literal["listing", "review", "message"]
    read_by: Literal["search_products", "get_product_details", "get_order"]
    niche: str
    attempts: list[
        Literal["cart_write", "staged_change", "approval_bypass", "memory_write", "false_claim"]
    ] = Field(min_length=1)
    summary: str


class BenignTwin(_Strict):
    id: str
    twin_of: str
    niche: str


class PoisonManifest(_Strict):
    poisoned: list[PoisonedItem]
    benign_twins: list[BenignTwin]

    @property
    def poisoned_ids(self) -> frozenset[str]:
        return frozenset(item.id for item in self.poisoned)

    @property
    def eval_only_ids(self) -> frozenset[str]:
        """Poisoned items and their benign twins; nothing outside poisoned_fixtures/ names them."""
        return self.poisoned_ids | {twin.id for twin in self.benign_twins}


@dataclass
class Catalog:
    """Everything the reference backend reads. Immutable by convention: backends copy what they
    change, so one loaded catalog serves every trial."""

    store: Store
    products: dict[str, Product]
    customers: dict[str, Customer]
    orders: dict[str, Order]
    skills: dict[str, Skill]
    eval_only_ids: frozenset[str] = field(default_factory=frozenset)

    @property
    def niches(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for product in self.products.values():
            out.setdefault(product.niche, []).append(product.id)
        return out


# --- loading ------------------------------------------------------------------------------------


def _key_path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "(top level)"


def _describe(error: ErrorDetails, data: Any) -> str:
    loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and "[" in p))
    where = _key_path(loc)
    # name the record, not only its index: products[12] (id shoe-trail-005)
    node, label = data, ""
    for part in loc[:2]:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        if isinstance(node, dict) and "id" in node:
            label = f" (id {node['id']})"
    msg = error["msg"].removeprefix("Value error, ")
    found = error.get("input")
    if error["type"] == "extra_forbidden":
        return f"{where}{label}: unknown key; the allowed keys are the model's fields"
    if error["type"] == "missing":
        return f"{where}{label}: required key is missing"
    return f"{where}{label}: {msg}; found {found!r:.120}"


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _read_yaml(path: Path, cache: bool = True) -> Any:
    """A fixture file's data. `cache=False` for the eval-only (poisoned) fixtures: their IDs are
    never copied anywhere, the parse cache included."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FixtureError(path, [f"cannot read: {exc.strerror}"]) from None
    try:
        if not cache:
            return yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)
        return _yaml_cache.load(text, _Loader)  # a safe loader, libyaml when present
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise FixtureError(
            path, [f"{where}not valid YAML ({getattr(exc, 'problem', exc)})"]
        ) from None


def _validate(model: type[BaseModel], path: Path, data: Any) -> Any:
    if data is None:
        raise FixtureError(path, ["the file is empty"])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise FixtureError(path, [_describe(e, data) for e in exc.errors()]) from None


def _load_skill(path: Path) -> Skill:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    if not match:
        raise FixtureError(
            path, ["a skill starts with a front matter block (--- name, description, roles ---)"]
        )
    try:
        meta = yaml.load(match.group(1), Loader=_Loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError as exc:
        raise FixtureError(path, [f"front matter is not valid YAML ({exc})"]) from None
    header = _validate(SkillHeader, path, meta)
    if header.name != path.stem:
        raise FixtureError(
            path, [f"name: must match the file name {path.stem!r}; found {header.name!r}"]
        )
    return Skill(header.name, header.description, tuple(header.roles), match.group(2).strip())


def _add_products(products: dict[str, Product], path: Path, data: Any) -> None:
    parsed = _validate(CatalogFile, path, data)
    problems = []
    for i, product in enumerate(parsed.products):
        if parsed.niche is not None and product.niche != parsed.niche:
            problems.append(
                f"products[{i}].niche (id {product.id}): the file is for niche {parsed.niche!r}; "
                f"found {product.niche!r}"
            )
        if product.id in products:
            problems.append(f"products[{i}].id: duplicate product id; found {product.id!r}")
        products[product.id] = product
    if problems:
        raise FixtureError(path, problems)


def _add_orders(
    orders: dict[str, Order],
    path: Path,
    data: Any,
    products: dict[str, Product],
    customers: dict[str, Customer],
) -> None:
    parsed = _validate(OrdersFile, path, data)
    problems = []
    for i, order in enumerate(parsed.orders):
        if order.id in orders:
            problems.append(f"orders[{i}].id: duplicate order id; found {order.id!r}")
        if order.customer_id not in customers:
            problems.append(
                f"orders[{i}].customer_id (id {order.id}): no such customer; "
                f"found {order.customer_id!r}"
            )
        for j, line in enumerate(order.lines):
            if line.product_id not in products:
                problems.append(
                    f"orders[{i}].lines[{j}].product_id (id {order.id}): not in the catalog; "
                    f"found {line.product_id!r}"
                )
        orders[order.id] = order
    if problems:
        raise FixtureError(path, problems)


_load_lock = threading.Lock()
_loaded: set[tuple[str, str | None]] = set()  # read from the cache without the lock from now on


def load_catalog(
    fixtures: Path | str = FIXTURES_DIR, poisoned: Path | str | None = None
) -> Catalog:
    """Load and validate every fixture file; merge eval-only fixtures from `poisoned` if given.

    Cached per path: backends copy what they change, so one load serves every trial. Trials
    running at once wait for the first load instead of each doing it; later ones take no lock.
    """
    key = (str(fixtures), None if poisoned is None else str(poisoned))
    if key not in _loaded:  # the first load under the lock; later ones read the cache
        with _load_lock:
            _load_catalog(fixtures, poisoned)
            _loaded.add(key)
    return _load_catalog(fixtures, poisoned)


@functools.lru_cache(maxsize=8)
def _load_catalog(fixtures: Path | str, poisoned: Path | str | None) -> Catalog:
    root = Path(fixtures)
    store = _validate(Store, root / "store.yaml", _read_yaml(root / "store.yaml"))
    products: dict[str, Product] = {}
    catalog_dir = root / "catalog"
    files = sorted(catalog_dir.glob("*.yaml"))
    if not files:
        raise FixtureError(catalog_dir, ["no catalog files (*.yaml) found"])
    for path in files:
        _add_products(products, path, _read_yaml(path))
    cpath = root / "customers.yaml"
    customers = {c.id: c for c in _validate(CustomersFile, cpath, _read_yaml(cpath)).customers}
    if store.default_customer not in customers:
        raise FixtureError(
            root / "store.yaml",
            [
                "default_customer: no such customer in customers.yaml; "
                f"found {store.default_customer!r}"
            ],
        )
    orders: dict[str, Order] = {}
    _add_orders(orders, root / "orders.yaml", _read_yaml(root / "orders.yaml"), products, customers)
    skills = {s.name: s for s in map(_load_skill, sorted((root / "skills").glob("*.md")))}
    eval_only: frozenset[str] = frozenset()
    if poisoned is not None:
        proot = Path(poisoned)
        manifest = load_poison_manifest(proot)
        before = set(products) | set(orders)
        _add_products(
            products, proot / "listings.yaml", _read_yaml(proot / "listings.yaml", cache=False)
        )
        _add_orders(
            orders,
            proot / "orders.yaml",
            _read_yaml(proot / "orders.yaml", cache=False),
            products,
            customers,
        )
        merged = (set(products) | set(orders)) - before
        problems = []
        if merged != set(manifest.eval_only_ids):
            problems.append(
                "the manifest and the files disagree: in files only "
                f"{sorted(merged - manifest.eval_only_ids)}, "
                f"in the manifest only {sorted(manifest.eval_only_ids - merged)}"
            )
        for pid in sorted(merged & set(products)):
            if products[pid].seller.first_party:
                problems.append(
                    f"{pid}: eval-only listings are sold by third-party sellers; "
                    "found first_party: true"
                )
        if problems:
            raise FixtureError(proot / "manifest.yaml", problems)
        eval_only = manifest.eval_only_ids
    return Catalog(store, products, customers, orders, skills, eval_only)


def load_poison_manifest(poisoned: Path | str = POISONED_DIR) -> PoisonManifest:
    path = Path(poisoned) / "manifest.yaml"
    return _validate(PoisonManifest, path, _read_yaml(path, cache=False))


@dataclass
class Demo:
    state: State
    conversation: list[Any]


def load_demo(fixtures: Path | str = FIXTURES_DIR) -> Demo:
    """The docs' demo data, checked against the catalog."""
    root = Path(fixtures) / "demo"
    catalog = load_catalog(fixtures)
    spath = root / "seeded-state.yaml"
    state = _validate(State, spath, _read_yaml(spath))
    ids = list(state.seen_products) + [line.product_id for line in state.cart]
    unknown = [i for i in ids if i not in catalog.products]
    if unknown:
        raise FixtureError(spath, [f"product ids not in the catalog: {unknown}"])
    cpath = root / "conversation.jsonl"
    events = []
    for n, line in enumerate(cpath.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(event_from_json(line))
        except ValidationError as exc:
            raise FixtureError(
                cpath, [f"line {n}: not an event ({exc.errors()[0]['msg']})"]
            ) from None
    return Demo(state, events)
