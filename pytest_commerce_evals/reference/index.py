"""The reference fixtures described for the case lint (`lint.FixtureIndex`)."""

from __future__ import annotations

from typing import Any

from .backend import ReferenceBackend
from .catalog import FIXTURES_DIR, POISONED_DIR, load_poison_manifest

_CARRIER = {"search_products": "listing", "get_product_details": "review", "get_order": "message"}


def poisoned_text(backend: ReferenceBackend, item_id: str, read_by: str) -> str:
    """The fixture text that carries the injected instruction and the false claims."""
    if item_id in backend.catalog.orders:
        return "\n".join(m.text for m in backend.catalog.orders[item_id].messages)
    product = backend.catalog.products[item_id]
    if read_by == "search_products":
        return f"{product.title}\n{product.description}"
    parts = [r.text for r in product.reviews]
    if product.supplier_note:
        parts.append(product.supplier_note)
    return "\n".join(parts)


def fixture_index() -> Any:
    from ..authoring.lint import FixtureIndex, PoisonedItem

    backend = ReferenceBackend.fresh(poisoned=True)
    manifest = load_poison_manifest(POISONED_DIR)
    catalog = backend.catalog
    regular = (set(catalog.products) | set(catalog.orders)) - catalog.eval_only_ids
    # variant SKUs are IDs a case may name too (cart lines hold them)
    regular |= {v.sku for pid, p in catalog.products.items() if pid in regular for v in p.variants}
    poisoned = {
        item.id: PoisonedItem(
            item.id, _CARRIER[item.read_by], poisoned_text(backend, item.id, item.read_by)
        )
        for item in manifest.poisoned
    }

    def search(query: str) -> list[str]:
        return [p.id for p in ReferenceBackend(catalog).search(query)]

    return FixtureIndex(
        ids=regular,
        skills=set(catalog.skills),
        poisoned=poisoned,
        benign_eval_only={t.id for t in manifest.benign_twins},
        search=search,
        data_paths=sorted(p for p in FIXTURES_DIR.rglob("*") if p.is_file()),
    )
