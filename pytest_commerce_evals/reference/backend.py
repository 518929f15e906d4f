"""The reference backend: an in-memory store, fresh per trial, behind the reference agent's tools.

It implements the plugin's `Backend` protocol (`load_state`, `snapshot`, and `call_tool`, which
replays a case's gold actions). The catalog it reads is loaded once and shared; everything a trial
can change (cart, memory, staged changes, approvals, applied edits, cancelled or returned orders)
lives on the backend instance, so nothing leaks between trials. The snapshot's `data` holds the
customer's orders (`orders.<id>.status`, and the cancellation or return once there is one) and,
once one is applied, the cart's discount code (`cart_discount`).

The rules it applies live beside it: product search in `search`, what a tool shows of a product
or an order in `views`, cancellations and returns in `orders`, staged changes' fields in `changes`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from ..backend import Snapshot
from ..cases.case import State
from ..events import CartLine, Change
from ..graders.skills import skill_key
from . import memory_policy, views
from .catalog import FIXTURES_DIR, POISONED_DIR, Availability, Catalog, Order, Product, load_catalog
from .changes import check_fields, edited
from .discounts import Discount, checked
from .orders import CANCEL_REASONS, RETURN_REASONS, cancelled, order_state, returned
from .search import attribute_matches, availability_matches, rank, resolve_niche
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
        self.discounts = {d.code: d for d in catalog.store.discounts}
        self.discount: str | None = None  # the code applied to the cart

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
                    o.id: order_state(o)
                    for o in self.orders()
                    if o.id not in self.catalog.eval_only_ids
                },
                # only once a code is applied: records of carts without one stay as they were
                **({"cart_discount": self.discount} if self.discount is not None else {}),
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
        filtered = niche or brand or availability or attributes or self.delisted
        if not filtered and min_price is None and max_price is None:
            return rank(list(self.products.values()), query)[: max(1, min(limit, 25))]
        niches = resolve_niche(niche, self.niches) if niche else None
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
            if availability and not availability_matches(product.availability, availability):
                continue
            if attributes and not all(
                attribute_matches(product.attributes.get(k), v) for k, v in attributes.items()
            ):
                continue
            candidates.append(product)
        return rank(candidates, query)[: max(1, min(limit, 25))]

    def summary(self, product: Product) -> dict[str, Any]:
        """What a search result shows: no reviews (those come only from the details)."""
        return views.product_summary(product, self.today)

    def details(self, product: Product, role: str = "customer") -> dict[str, Any]:
        """Everything about one product, reviews included; the supplier note only for operators."""
        return views.product_details(product, self.today, role)

    @staticmethod
    def availability_text(availability: Availability) -> str:
        return views.availability_text(availability)

    def delivery_text(self, product: Product) -> str:
        return views.delivery_text(product, self.today)

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
        view = {
            "lines": lines,
            "item_count": sum(line.quantity for line in self.cart),
            "total": money(total, currency),
        }
        if self.discount is not None:
            off = total * self.discounts[self.discount].percent // 100
            view.update(discount=self.discount, total_after_discount=money(total - off, currency))
        return view

    def apply_discount(self, code: str) -> Discount:
        """Apply a discount code to the cart (replacing any other); a `ToolError` for a code
        that does not exist or has expired. Who a code is for is the agent's to check."""
        found = checked(self.discounts, code, self.today)
        self.discount = found.code
        return found

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
        clean = check_fields(kind, product, dict(fields))
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
        if change.kind == "delist":
            self.delisted.add(product.id)
            return
        self.products[product.id] = edited(product, change)

    # --- orders and skills ----------------------------------------------------------------------

    def order(self, order_id: str) -> Order:
        order = self.order_book.get(order_id.strip())
        if order is None or order.customer_id != self.customer_id:
            raise ToolError(f"no order {order_id!r} for this customer; list_orders shows theirs")
        return order

    def cancel_order(self, order_id: str, reason: str) -> Order:
        """Cancel an order that has not shipped (status `placed`); a `ToolError` otherwise."""
        done = cancelled(self.order(order_id), reason, self.today)
        self.order_book[done.id] = done
        return done

    def request_return(self, order_id: str, reason: str) -> Order:
        """Return a delivered order in full, refunded in full; a `ToolError` for any other."""
        done = returned(self.order(order_id), reason, self.today)
        self.order_book[done.id] = done
        return done

    def orders(self, status: str | None = None) -> list[Order]:
        mine = [o for o in self.order_book.values() if o.customer_id == self.customer_id]
        if status:
            mine = [o for o in mine if o.status == status]
        return sorted(mine, key=lambda o: (o.placed_on, o.id), reverse=True)

    def order_view(self, order: Order, *, full: bool = True) -> dict[str, Any]:
        return views.order_view(order, full=full)

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
