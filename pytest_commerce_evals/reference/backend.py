"""The reference backend: an in-memory store, fresh per trial, behind the reference agent's tools.

It implements the plugin's `Backend` protocol (`load_state`, `snapshot`, and `call_tool`, which
replays a case's gold actions). The catalog it reads is loaded once and shared; everything a trial
can change (cart, memory, staged changes, approvals, applied edits, cancelled or returned orders)
lives on the backend instance, so nothing leaks between trials. The snapshot's `data` holds the
customer's orders (`orders.<id>.status`, and the cancellation or return once there is one).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar

from ..backend import Snapshot
from ..cases.case import State
from ..events import CartLine, Change
from ..graders.skills import skill_key
from . import memory_policy
from .catalog import (
    FIXTURES_DIR,
    POISONED_DIR,
    Availability,
    Cancellation,
    Catalog,
    Order,
    Product,
    ReturnInfo,
    load_catalog,
)
from .units import CHANGE_KINDS, ToolError, money, to_minor

__all__ = [
    "CANCEL_REASONS",
    "CHANGE_KINDS",
    "RETURN_REASONS",
    "MemoryRecord",
    "ReferenceBackend",
    "ToolError",
    "money",
    "to_minor",
]

CANCEL_REASONS = ("no longer needed", "ordered by mistake", "found a better price")
"""Why a customer cancels an order, as the order records it (a fixed list, so a gold action's
final state can be compared exactly)."""
RETURN_REASONS = (
    "damaged or defective",
    "wrong size or fit",
    "not as described",
    "changed my mind",
)
"""Why a customer returns an order, as the order records it."""

_STOPWORDS = frozenset(
    "a an and any are for from i in is it me my of on or please show some that the this to "
    "under over with want need looking find get something good best which what".split()
)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _stem(token: str) -> str:
    if len(token) > 3 and token.endswith("es") and token[:-2].endswith(("sh", "ch", "x")):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


@dataclass
class MemoryRecord:
    """What happened to one memory write: stored, or dropped by the policy (and why)."""

    action: str  # "stored" | "dropped" | "forgotten"
    text: str
    reason: str | None = None


class ReferenceBackend:
    """In-memory store for one trial. Build one per trial with `ReferenceBackend.fresh()`."""

    def __init__(self, catalog: Catalog, *, customer_id: str | None = None) -> None:
        self.catalog = catalog
        self.customer_id = customer_id or catalog.store.default_customer
        self.caps = catalog.store.caps
        self.today = catalog.store.today
        self.products: dict[str, Product] = dict(catalog.products)  # applied edits replace entries
        self.delisted: set[str] = set()
        self.seen_products: list[str] = []
        self.cart: list[CartLine] = []
        self.memory: list[str] = []
        self.memory_log: list[MemoryRecord] = []
        self.changes: list[Change] = []
        self.approvals: set[str] = set()
        self._next_change = 1
        self.order_book: dict[str, Order] = dict(catalog.orders)  # a change replaces an entry

    @classmethod
    def fresh(
        cls,
        *,
        poisoned: bool = False,
        fixtures: Path | str = FIXTURES_DIR,
        poisoned_fixtures: Path | str = POISONED_DIR,
        customer_id: str | None = None,
    ) -> ReferenceBackend:
        """A new backend over the fixtures; `poisoned=True` merges the eval-only fixtures."""
        catalog = load_catalog(Path(fixtures), Path(poisoned_fixtures) if poisoned else None)
        return cls(catalog, customer_id=customer_id)

    # --- the Backend protocol -------------------------------------------------------------------

    def load_state(self, state: State) -> None:
        unknown = [p for p in state.seen_products if p not in self.products]
        unknown += [line.product_id for line in state.cart if line.product_id not in self.products]
        unknown += [
            c.product_id
            for c in state.staged_changes
            if c.product_id and c.product_id not in self.products
        ]
        if unknown:
            raise ValueError(
                f"state names products that are not in the catalog: {', '.join(unknown)}"
            )
        self.seen_products = list(dict.fromkeys(state.seen_products))
        self.cart = [line.model_copy() for line in state.cart]
        self.memory = list(state.memory)
        for staged in state.staged_changes:
            change = staged.to_change()
            if change.change_id is None:
                change.change_id = self._new_change_id()
            if change.status == "approved":  # approved by a person before the trial began
                self.approvals.add(change.change_id)
            self.changes.append(change)

    def snapshot(self) -> Snapshot:
        return Snapshot(
            cart=[line.model_copy() for line in self.cart],
            memory=list(self.memory),
            changes=[c.model_copy(deep=True) for c in self.changes],
            # eval-only (poisoned) orders stay out of what a trial records
            data={
                "orders": {
                    o.id: _order_state(o)
                    for o in self.orders()
                    if o.id not in self.catalog.eval_only_ids
                }
            },
        )

    tool_runner: ClassVar[Callable[[ReferenceBackend, str, dict[str, Any]], Any] | None] = None
    """Runs one tool on a backend; `reference.tools` sets it when imported (the tools are built
    on this backend, so it cannot import them)."""

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run one tool as the agent's tools run it (no guardrails: a gold action is the case
        author's), for replaying a case's gold actions; raises `ToolError` or `ValueError` when
        the tool refuses it."""
        runner = type(self).tool_runner
        if runner is None:
            raise RuntimeError("import pytest_commerce_evals.reference to load the tools")
        return runner(self, name, arguments)

    # --- products -------------------------------------------------------------------------------

    def has_product(self, product_id: Any) -> bool:
        return isinstance(product_id, str) and product_id in self.products

    def product(self, product_id: str) -> Product:
        product = self.products.get(product_id)
        if product is None or product_id in self.delisted:
            raise ToolError(f"no product with id {product_id!r}; use an id from search_products")
        return product

    @property
    def niches(self) -> list[str]:
        return sorted({p.niche for p in self.products.values()})

    def _resolve_niche(self, niche: str) -> set[str]:
        wanted = niche.strip().lower().replace(" ", "-").replace("_", "-")
        names = self.niches
        if wanted in names:
            return {wanted}
        close = {n for n in names if wanted in n or _stem(wanted) in n or n in wanted}
        if close:
            return close
        raise ToolError(f"unknown niche {niche!r}; niches: {', '.join(names)}")

    def search(
        self,
        query: str = "",
        *,
        niche: str | None = None,
        brand: str | None = None,
        min_price: int | None = None,
        max_price: int | None = None,
        availability: str | None = None,
        attributes: dict[str, Any] | None = None,
        limit: int = 10,
    ) -> list[Product]:
        niches = self._resolve_niche(niche) if niche else None
        candidates = []
        for product in self.products.values():
            if product.id in self.delisted:
                continue
            if niches is not None and product.niche not in niches:
                continue
            if brand and product.brand.lower() != brand.strip().lower():
                continue
            if min_price is not None and product.price.today < min_price:
                continue
            if max_price is not None and product.price.today > max_price:
                continue
            if availability and not _availability_matches(product.availability, availability):
                continue
            if attributes and not all(
                _attribute_matches(product.attributes.get(k), v) for k, v in attributes.items()
            ):
                continue
            candidates.append(product)
        words = [t for t in _tokens(query) if t not in _STOPWORDS]
        if not words:
            ranked = [(0, p) for p in candidates]
        else:
            pairs = [(w, _stem(w)) for w in words]
            scored = [(_score(p, pairs), p) for p in candidates]
            ranked = [(s, p) for s, p in scored if s == len(words)]
            if not ranked:  # nothing matches every word: fall back to the best partial matches
                floor = max(1, (len(words) + 1) // 2)
                ranked = [(s, p) for s, p in scored if s >= floor]
        ranked.sort(key=lambda sp: (-sp[0], -sp[1].rating.average, sp[1].id))
        return [p for _, p in ranked[: max(1, min(limit, 25))]]

    def summary(self, product: Product) -> dict[str, Any]:
        """What a search result shows: no reviews (those come only from the details)."""
        out: dict[str, Any] = {
            "id": product.id,
            "title": product.title,
            "brand": product.brand,
            "niche": product.niche,
            "seller": product.seller.name,
            "first_party": product.seller.first_party,
            "price": money(product.price.today, product.price.currency),
        }
        if product.price.list != product.price.today:
            out["list_price"] = money(product.price.list, product.price.currency)
        out["availability"] = self.availability_text(product.availability)
        out["delivery"] = self.delivery_text(product)
        out["rating"] = f"{product.rating.average} of 5 ({product.rating.count} ratings)"
        out["attributes"] = dict(product.attributes)
        out["description"] = product.description
        return out

    def details(self, product: Product, role: str = "customer") -> dict[str, Any]:
        """Everything about one product, reviews included; the supplier note only for operators."""
        out = self.summary(product)
        out["price_cents"] = {
            "today": product.price.today,
            "list": product.price.list,
            "currency": product.price.currency,
        }
        out["variants"] = [
            {
                "sku": v.sku,
                "label": v.label,
                **v.options,
                "availability": self.availability_text(v.availability or product.availability),
            }
            for v in product.variants
        ]
        out["reviews"] = [r.model_dump() for r in product.reviews]
        out["tags"] = list(product.tags)
        if role == "operator" and product.supplier_note:
            out["supplier_note"] = product.supplier_note
        return out

    @staticmethod
    def availability_text(availability: Availability) -> str:
        match availability.status:
            case "in_stock":
                return "in stock"
            case "low_stock":
                return f"low stock: {availability.count} left"
            case "out_of_stock":
                return "out of stock"
            case _:
                assert availability.available_on is not None  # a backorder has its date
                return f"backorder: ships {availability.available_on.isoformat()}"

    def delivery_text(self, product: Product) -> str:
        if product.delivery is None:
            return "unavailable while out of stock"
        if product.delivery.days is not None:
            if product.delivery.days == 0:
                return "instant (by email)"
            by = self.today + timedelta(days=product.delivery.days)
            return f"{product.delivery.days} days (arrives by {by.isoformat()})"
        assert product.delivery.date is not None  # an estimate has its days or its date
        return f"arrives by {product.delivery.date.isoformat()}"

    # --- cart -----------------------------------------------------------------------------------

    def find_line(self, product_id: Any, variant: Any = None) -> CartLine | None:
        for line in self.cart:
            if line.product_id == product_id and (variant is None or line.variant == variant):
                return line
        return None

    def _variant(self, product: Product, variant: str | None) -> str | None:
        if variant is None:
            return None
        for v in product.variants:
            if variant in (v.sku, v.label) or variant.lower() == v.label.lower():
                if v.availability is not None and v.availability.status == "out_of_stock":
                    raise ToolError(f"{product.id} variant {v.label} is out of stock")
                return v.sku
        labels = ", ".join(v.sku for v in product.variants) or "none"
        raise ToolError(f"{product.id} has no variant {variant!r}; variants: {labels}")

    def add_to_cart(self, product_id: str, quantity: int = 1, variant: str | None = None) -> None:
        product = self.product(product_id)
        if product.availability.status == "out_of_stock":
            raise ToolError(f"{product_id} is out of stock and cannot be added to the cart")
        sku = self._variant(product, variant)
        line = self.find_line(product_id, sku)
        if line is not None and line.variant == sku:
            line.quantity += quantity
        else:
            self.cart.append(CartLine(product_id=product_id, quantity=quantity, variant=sku))

    def remove_from_cart(self, product_id: str, variant: str | None = None) -> None:
        line = self.find_line(product_id, variant)
        if line is None:
            raise ToolError(f"{product_id} is not in the cart")
        self.cart.remove(line)

    def update_cart(self, product_id: str, quantity: int, variant: str | None = None) -> None:
        line = self.find_line(product_id, variant)
        if line is None:
            raise ToolError(f"{product_id} is not in the cart; use add_to_cart")
        if quantity == 0:
            self.cart.remove(line)
        else:
            line.quantity = quantity

    def cart_view(self) -> dict[str, Any]:
        lines, total, currency = [], 0, self.catalog.store.currency
        for line in self.cart:
            product = self.products[line.product_id]
            amount = product.price.today * line.quantity
            total += amount
            lines.append(
                {
                    "product_id": line.product_id,
                    "title": product.title,
                    "variant": line.variant,
                    "quantity": line.quantity,
                    "unit_price": money(product.price.today, currency),
                    "line_total": money(amount, currency),
                }
            )
        return {
            "lines": lines,
            "item_count": sum(line.quantity for line in self.cart),
            "total": money(total, currency),
        }

    # --- memory ---------------------------------------------------------------------------------

    def save_memory(self, fact: str) -> MemoryRecord:
        """Store a durable preference, unless the memory policy drops it (silently to the user)."""
        fact = fact.strip()
        if not fact:
            raise ToolError("fact is empty")
        kind = memory_policy.violation(fact)
        if kind is not None:
            record = MemoryRecord("dropped", "", f"contains a {kind}")
        else:
            if fact not in self.memory:
                self.memory.append(fact)
            record = MemoryRecord("stored", fact)
        self.memory_log.append(record)
        return record

    def forget_memory(self, fact: str) -> int:
        needle = fact.strip().lower()
        if not needle:
            raise ToolError("fact is empty")
        gone = [m for m in self.memory if needle in m.lower() or m.lower() in needle]
        self.memory = [m for m in self.memory if m not in gone]
        self.memory_log.extend(MemoryRecord("forgotten", m) for m in gone)
        return len(gone)

    # --- staged changes -------------------------------------------------------------------------

    def _new_change_id(self) -> str:
        taken = {c.change_id for c in self.changes}
        while f"chg-{self._next_change:03d}" in taken:
            self._next_change += 1
        change_id = f"chg-{self._next_change:03d}"
        self._next_change += 1
        return change_id

    def stage_change(self, kind: str, product_id: str, fields: dict[str, Any]) -> Change:
        if kind not in CHANGE_KINDS:
            raise ToolError(f"unknown change kind {kind!r}; kinds: {', '.join(CHANGE_KINDS)}")
        product = self.product(product_id)
        clean = _check_fields(kind, product, dict(fields))
        change = Change(
            change_id=self._new_change_id(),
            kind=kind,
            product_id=product_id,
            fields=clean,
            status="staged",
        )
        self.changes.append(change)
        return change

    def change(self, change_id: str) -> Change:
        for c in self.changes:
            if c.change_id == change_id:
                return c
        raise ToolError(f"no staged change {change_id!r}")

    def approve(self, change_id: str) -> None:
        """A person approved the change in the review screen. No tool can call this."""
        change = self.change(change_id)
        change.status = "approved"
        self.approvals.add(change_id)

    def approved_changes(self) -> list[str]:
        """The ids of changes a person approved that are not applied yet."""
        return [
            c.change_id
            for c in self.changes
            if c.status == "approved" and c.change_id in self.approvals
        ]

    def apply_changes(self, change_ids: list[str]) -> list[Change]:
        applied = []
        for change_id in change_ids:
            change = self.change(change_id)
            if change_id not in self.approvals:
                raise ToolError(f"{change_id} has no human approval")
            self._apply(change)
            change.status = "applied"
            applied.append(change)
        return applied

    def _apply(self, change: Change) -> None:
        if change.product_id is None:  # a change injected through the case's state
            raise ToolError(f"{change.change_id} names no product: there is nothing to apply")
        product = self.products[change.product_id]
        f = change.fields
        if change.kind == "delist":
            self.delisted.add(product.id)
            return
        update: dict[str, Any] = {}
        if change.kind == "price_change":
            today = to_minor(f["price"])
            update["price"] = product.price.model_copy(
                update={"today": today, "list": max(today, product.price.list)}
            )
        elif change.kind == "availability_change":
            update["availability"] = Availability(**{k: v for k, v in f.items() if k != "reason"})
        elif change.kind == "title_change":
            update["title"] = f["title"]
        elif change.kind == "description_change":
            update["description"] = f["description"]
        elif change.kind == "attribute_change":
            update["attributes"] = {**product.attributes, **f["attributes"]}
        self.products[product.id] = product.model_copy(update=update)

    # --- orders and skills ----------------------------------------------------------------------

    def order(self, order_id: str) -> Order:
        order = self.order_book.get(order_id.strip())
        if order is None or order.customer_id != self.customer_id:
            raise ToolError(f"no order {order_id!r} for this customer; list_orders shows theirs")
        return order

    def cancel_order(self, order_id: str, reason: str) -> Order:
        """Cancel an order that has not shipped (status `placed`); a `ToolError` otherwise."""
        order = self.order(order_id)
        if order.status != "placed":
            raise ToolError(
                f"order {order.id} is {order.status}: only an order that has not shipped "
                "(placed) can be cancelled"
            )
        if reason not in CANCEL_REASONS:
            raise ToolError(f"reason: one of {', '.join(CANCEL_REASONS)}; found {reason!r}")
        done = order.model_copy(
            update={
                "status": "cancelled",
                "cancellation": Cancellation(cancelled_on=self.today, reason=reason),
            }
        )
        self.order_book[order.id] = done
        return done

    def request_return(self, order_id: str, reason: str) -> Order:
        """Return a delivered order in full, refunded in full; a `ToolError` for any other."""
        order = self.order(order_id)
        if order.status != "delivered":
            raise ToolError(
                f"order {order.id} is {order.status}: only a delivered order can be returned"
            )
        if reason not in RETURN_REASONS:
            raise ToolError(f"reason: one of {', '.join(RETURN_REASONS)}; found {reason!r}")
        done = order.model_copy(
            update={
                "status": "returned",
                "return_info": ReturnInfo(
                    requested_on=self.today, reason=reason, refund=order.total
                ),
            }
        )
        self.order_book[order.id] = done
        return done

    def orders(self, status: str | None = None) -> list[Order]:
        mine = [o for o in self.order_book.values() if o.customer_id == self.customer_id]
        if status:
            mine = [o for o in mine if o.status == status]
        return sorted(mine, key=lambda o: (o.placed_on, o.id), reverse=True)

    def order_view(self, order: Order, *, full: bool = True) -> dict[str, Any]:
        data = order.model_dump(mode="json", by_alias=True, exclude_none=True)
        for line in data["lines"]:
            line["unit_price"] = money(line["unit_price"], order.currency)
        data["total"] = money(order.total, order.currency)
        if "return_info" in data:
            assert order.return_info is not None  # dumped without its None fields
            data["return_info"]["refund"] = money(order.return_info.refund, order.currency)
        if order.shipping is not None and order.shipping.previous_estimate is not None:
            data["shipping"]["delivery_date_changed"] = True
        if not full:
            data.pop("messages", None)
        return data

    def resolve_skill(self, name: str, role: str) -> str:
        """The skill a requested name means (`Gift_Finding`, `sizing.md` → `gift-finding`,
        `sizing`); a `ToolError` when this role has no such skill."""
        key = skill_key(name)
        skill = self.catalog.skills.get(key)
        if skill is None or role not in skill.roles:
            names = ", ".join(self.skill_names(role))
            raise ToolError(f"no skill {name!r}; skills: {names}")
        return skill.name

    def skill(self, name: str, role: str) -> str:
        return self.catalog.skills[self.resolve_skill(name, role)].body

    def skill_names(self, role: str) -> list[str]:
        return [s.name for s in self.catalog.skills.values() if role in s.roles]

    def copy(self) -> ReferenceBackend:
        return copy.deepcopy(self)


def _order_state(order: Order) -> dict[str, Any]:
    """What a snapshot records of an order: its status, and its cancellation or return."""
    state: dict[str, Any] = {"status": order.status}
    if order.cancellation is not None:
        state["cancellation"] = order.cancellation.model_dump(mode="json")
    if order.return_info is not None:
        state["return_info"] = order.return_info.model_dump(mode="json")
    return state


def _availability_matches(availability: Availability, wanted: str) -> bool:
    wanted = wanted.strip().lower().replace(" ", "_").replace("-", "_")
    if wanted in ("available", "buyable", "in_stock_or_low"):
        return availability.status in ("in_stock", "low_stock")
    if wanted == "in_stock":
        return availability.status in ("in_stock", "low_stock")
    return availability.status == wanted


def _attribute_matches(have: Any, want: Any) -> bool:
    if have is None:
        return False
    if isinstance(have, list):
        return any(_attribute_matches(h, want) for h in have)
    if isinstance(have, bool) or isinstance(want, bool):
        truthy = {"true", "yes", "1"}
        return (
            str(have).lower() in truthy
            if str(want).lower() in truthy
            else (str(have).lower() not in truthy)
        )
    if isinstance(have, int | float) and not isinstance(want, str):
        return Decimal(str(have)) == Decimal(str(want))
    return str(want).strip().lower() in str(have).lower()


_FLAG_WORDS = {
    "anc": "anc noise cancelling canceling",
    "wireless": "wireless bluetooth",
    "waterproof": "waterproof water resistant",
    "vegan": "vegan",
    "grain_free": "grain free",
}


_HAYSTACKS: dict[int, tuple[Product, frozenset[str]]] = {}
_HAYSTACKS_MAX = 8192


def _haystack(product: Product) -> frozenset[str]:
    """The product's searchable words, computed once per product object (the catalog is shared
    by every trial; an edit makes a new object, so it is never served stale words)."""
    hit = _HAYSTACKS.get(id(product))
    if hit is not None and hit[0] is product:
        return hit[1]
    hay = _words(product)
    if len(_HAYSTACKS) >= _HAYSTACKS_MAX:
        _HAYSTACKS.clear()
    _HAYSTACKS[id(product)] = (product, hay)
    return hay


def _words(product: Product) -> frozenset[str]:
    parts = [
        product.title,
        product.brand,
        product.niche,
        product.description,
        product.seller.name,
        " ".join(product.tags),
    ]
    for key, value in product.attributes.items():
        if value is True:
            parts.append(_FLAG_WORDS.get(key, key.replace("_", " ")))
        elif isinstance(value, str | list):
            parts.append(f"{key} {' '.join(value) if isinstance(value, list) else value}")
    words = set(_tokens(" ".join(parts)))
    return frozenset(words | {_stem(w) for w in words})


def _score(product: Product, pairs: list[tuple[str, str]]) -> int:
    """How many query words (each with its stem) the product's words hold."""
    hay = _haystack(product)
    return sum(1 for w, stem in pairs if w in hay or stem in hay)


def _check_fields(kind: str, product: Product, fields: dict[str, Any]) -> dict[str, Any]:
    """Validate and normalise a staged change's fields; the error names what is allowed."""
    allowed = {
        "price_change": {"price", "reason"},
        "availability_change": {"status", "count", "available_on", "reason"},
        "title_change": {"title", "reason"},
        "description_change": {"description", "reason"},
        "attribute_change": {"attributes", "reason"},
        "delist": {"reason"},
    }[kind]
    extra = sorted(set(fields) - allowed)
    if extra:
        raise ToolError(f"{kind} takes fields {sorted(allowed)}; found {extra}")
    if kind == "price_change":
        if "price" not in fields:
            raise ToolError('price_change needs fields.price, in dollars, e.g. "89.99"')
        cents = to_minor(fields["price"], "fields.price")
        if cents == 0:
            raise ToolError("fields.price: a price of zero is not a price change; use delist")
        fields["price"] = f"{Decimal(cents) / 100:.2f}"
        fields["previous_price"] = f"{Decimal(product.price.today) / 100:.2f}"
    elif kind == "availability_change":
        try:
            Availability(**{k: v for k, v in fields.items() if k != "reason"})
        except ValueError as exc:
            raise ToolError(f"availability_change fields: {exc}") from None
    elif kind in ("title_change", "description_change"):
        key = kind.removesuffix("_change")
        if not str(fields.get(key, "")).strip():
            raise ToolError(f"{kind} needs fields.{key}")
    elif kind == "attribute_change" and not isinstance(fields.get("attributes"), dict):
        raise ToolError("attribute_change needs fields.attributes, a mapping")
    return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in fields.items()}
