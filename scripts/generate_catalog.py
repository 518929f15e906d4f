"""Write fixtures/catalog/*.yaml from the curated tables in scripts/catalog_tables/.

The tables hold the facts a rubric can cite (weights, materials, prices, delivery, fit); this
script only expands them into the fixture format: integer minor units, variants, a few reviews
written from each product's own facts. Deterministic: running it twice writes identical files.

    python scripts/generate_catalog.py

The tables are YAML, read with yaml.safe_load. To change the catalog, edit them and rerun:

- niches/<niche>.yaml: one file per niche, expanded into fixtures/catalog/<niche>.yaml.
  `variants` says how each product's variants are made (shoes, color, size, bag, laptop, or null
  for none; see variants_for). `products` lists the products, each with these fields:
  id, title, brand; seller (a code from sellers.yaml); list_price and today_price (dollars as
  quoted strings, '19.99', so no float rounding gets in); rating (the average) and rating_count;
  availability (in, out, lowN for N left, or back:YYYY-MM-DD); delivery (days as an integer, an
  ISO date as a quoted string, or null); attributes (the product's facts, in the order the
  description lists them; facts() reads some of them by name for the niche's reviews); tags.
- sellers.yaml: the seller codes the products use; "1P" is the store itself.
- reviews.yaml: the review authors, and the opening and closing line for each star rating.
"""

from __future__ import annotations

import hashlib
from decimal import Decimal
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "fixtures" / "catalog"
TABLES = Path(__file__).resolve().parent / "catalog_tables"
FIELDS = {
    "id",
    "title",
    "brand",
    "seller",
    "list_price",
    "today_price",
    "rating",
    "rating_count",
    "availability",
    "delivery",
    "attributes",
    "tags",
}


def load(path: Path):
    return yaml.safe_load(path.read_text(encoding="utf-8"))


SELLERS: dict[str, dict] = load(TABLES / "sellers.yaml")
NICHES: dict[str, dict] = {p.stem: load(p) for p in sorted((TABLES / "niches").glob("*.yaml"))}
_REVIEW_LINES = load(TABLES / "reviews.yaml")
AUTHORS: list[str] = _REVIEW_LINES["authors"]
OPENERS: dict[int, str] = _REVIEW_LINES["openers"]
CLOSERS: dict[int, str] = _REVIEW_LINES["closers"]


def cents(dollars: str) -> int:
    if not isinstance(dollars, str):
        raise TypeError(f"price {dollars!r}: write dollars as a quoted string, e.g. '19.99'")
    return int(Decimal(dollars) * 100)


def pick(seed: str, options: list, n: int = 1) -> list:
    """Deterministic choice of n distinct options, keyed by a string."""
    order = sorted(options, key=lambda o: hashlib.sha256(f"{seed}:{o}".encode()).hexdigest())
    return order[:n]


def availability(code: str) -> dict:
    if code == "in":
        return {"status": "in_stock"}
    if code == "out":
        return {"status": "out_of_stock"}
    if code.startswith("low"):
        return {"status": "low_stock", "count": int(code[3:])}
    if code.startswith("back:"):
        return {"status": "backorder", "available_on": code[5:]}
    raise ValueError(code)


def delivery(value: int | str | None) -> dict | None:
    if value is None:
        return None
    if isinstance(value, int):
        return {"days": value}
    return {"date": value}


# --- variants -----------------------------------------------------------------------------------


def variants_for(kind: str | None, pid: str, attrs: dict) -> list[dict]:
    if kind == "shoes":
        sizes = ["7", "8", "9", "10", "11", "12"]
        if attrs.get("half_sizes"):
            sizes = ["7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5", "11", "11.5", "12"]
        if "kids" in pid or attrs.get("closure") == "hook-and-loop":
            sizes = ["1Y", "2Y", "3Y", "4Y", "5Y"]
        width = {"wide": "2E", "narrow": "B", "standard": "D"}[attrs["fit"]]
        out = []
        for s in sizes:
            # a couple of sold-out sizes so "is size 11 available" has a checkable answer
            gone = s in pick(pid + "sold-out", sizes, 1)
            v = {
                "sku": f"{pid}-{s}-{width}",
                "label": f"US {s} ({width})",
                "options": {"size": f"US {s}", "width": width},
            }
            if gone:
                v["availability"] = {"status": "out_of_stock"}
            out.append(v)
        return out
    if kind == "color":
        colors = pick(
            pid, ["black", "white", "graphite", "navy", "sand", "olive", "red", "silver"], 2
        )
        return [{"sku": f"{pid}-{c}", "label": c.title(), "options": {"color": c}} for c in colors]
    if kind == "size":
        ml = attrs["volume_ml"]
        return [
            {"sku": f"{pid}-{ml}ml", "label": f"{ml} ml", "options": {"size": f"{ml} ml"}},
            {
                "sku": f"{pid}-travel",
                "label": "Travel size 15 ml",
                "options": {"size": "15 ml"},
                "price_today": None,
            },
        ]
    if kind == "bag":
        g = attrs["bag_weight_g"]
        return [
            {"sku": f"{pid}-{g}g", "label": f"{g / 1000:g} kg bag", "options": {"bag": f"{g} g"}}
        ]
    if kind == "laptop":
        return [
            {
                "sku": f"{pid}-base",
                "label": f"{attrs['ram_gb']} GB / {attrs['storage_gb']} GB",
                "options": {"ram_gb": str(attrs["ram_gb"]), "storage_gb": str(attrs["storage_gb"])},
            },
        ]
    return []


# --- reviews ------------------------------------------------------------------------------------


def facts(niche: str, a: dict) -> list[str]:
    """Sentences a reviewer would write, each drawn from the product's own attributes."""
    f: list[str] = []
    if "weight_g" in a and a["weight_g"]:
        f.append(f"It weighs {a['weight_g']} g on my scale, same as the listing says.")
    if niche == "running-shoes":
        f.append(
            {
                "wide": "The wide toe box finally gives my feet room.",
                "narrow": "Runs narrow; great for my slim feet but size up if yours are wide.",
                "standard": "True to size with a standard width.",
            }[a["fit"]]
        )
        f.append(f"The {a['drop_mm']} mm drop feels natural after a week.")
        if a.get("waterproof"):
            f.append("Kept my feet dry through wet grass and puddles.")
        if a.get("surface") == "trail":
            f.append(f"The {a['lug_depth_mm']} mm lugs grip well on loose dirt.")
    if niche == "espresso-machines":
        f.append(
            f"The {a['water_tank_ml']} ml tank lasts me about "
            f"{max(1, a['water_tank_ml'] // 400)} days."
        )
        f.append(
            {
                "steam wand": "Steam wand takes practice but makes proper microfoam.",
                "none": "No milk frother, so I only drink straight espresso.",
            }.get(a["milk"], "Milk drinks at one touch, very convenient.")
        )
        if a["built_in_grinder"]:
            f.append("Having the grinder built in saves counter space.")
    if niche == "headphones":
        if a.get("anc"):
            f.append("Noise cancelling blocks out the train completely.")
        if a.get("battery_hours"):
            f.append(f"Battery really does last around {a['battery_hours']} hours.")
        if a.get("multipoint"):
            f.append("Switches between my laptop and phone without re-pairing.")
        if not a.get("wireless"):
            f.append("Wired, so no battery to worry about.")
    if niche == "strollers":
        f.append(
            f"At {a['weight_g'] / 1000:g} kg it is "
            f"{'easy' if a['weight_g'] < 8000 else 'heavy'} to lift into the car."
        )
        if a.get("one_hand_fold"):
            f.append("Folds with one hand while holding the baby.")
        if a.get("cabin_size"):
            f.append("Fit in the overhead bin on our flight.")
    if niche == "skincare":
        f.append(
            "No scent at all, which my sensitive skin appreciates."
            if a["fragrance_free"]
            else "Has a light fragrance."
        )
        if a.get("spf"):
            f.append(f"SPF {a['spf']} without a white cast for me.")
        f.append(f"A {a['volume_ml']} ml tube lasts about two months.")
    if niche == "pet-food":
        f.append(f"My {a['species']} loves the {a['protein']}.")
        if a.get("grain_free"):
            f.append("Grain-free, which our vet suggested trying.")
        f.append(f"The {a['bag_weight_g'] / 1000:g} kg bag lasts us about a month.")
    if niche == "kitchen-knives":
        if "steel" in a:
            f.append(f"The {a['steel']} holds an edge for months.")
        if a.get("dishwasher_safe") is False:
            f.append("Hand wash only, as the listing says.")
        if a.get("rust_prone"):
            f.append("Carbon steel: dry it right away or it spots.")
    if niche == "bags":
        f.append(f"The {a['material']} looks good after a year of daily use.")
        f.append(f"{a['capacity_l']} L is plenty for a day.")
        if a.get("laptop_sleeve_in"):
            f.append(f"My {a['laptop_sleeve_in']}-inch laptop fits the sleeve.")
        if a.get("waterproof"):
            f.append("Stayed dry inside in a downpour.")
    if niche == "toys":
        f.append(f"Bought for a {a['age_min_years'] + 1}-year-old, perfect fit.")
        if a.get("batteries_required"):
            f.append(f"Needs batteries: {a.get('battery_type', 'check the box')}.")
        if a.get("pieces", 0) > 1:
            f.append(f"All {a['pieces']} pieces were in the box.")
    if niche == "supplements":
        f.append(f"{a['servings']} servings per container, good value.")
        f.append("Vegan, as labelled." if a["vegan"] else "Not vegan, read the label.")
        if a.get("third_party_tested"):
            f.append("Third-party tested, which matters to me.")
    if niche == "laptops":
        f.append(f"Battery gets close to {a['battery_hours']} hours of light use.")
        f.append(f"{a['ram_gb']} GB RAM handles my workload.")
        f.append(
            f"At {a['weight_g'] / 1000:g} kg it is "
            f"{'easy' if a['weight_g'] < 1500 else 'okay'} to carry."
        )
    if niche == "gifts":
        if a.get("personalizable"):
            f.append(
                f"Personalization took {a.get('personalization_days', 2)} days before shipping."
            )
        if a.get("gift_wrap"):
            f.append("The gift wrap looked lovely.")
        if a.get("delivery_method"):
            f.append(
                f"Arrived by {a['delivery_method'].split(',')[0]}, great for a last-minute gift."
            )
    if niche == "camping-stoves":
        if a.get("boil_time_s_1l"):
            f.append(
                f"Boiled a litre in about {a['boil_time_s_1l'] // 60} minutes "
                f"{a['boil_time_s_1l'] % 60} seconds."
            )
        f.append(f"Runs on {a['fuel']}.")
        if a.get("piezo_ignition"):
            f.append("The push-button igniter works every time.")
        else:
            f.append("No igniter, so bring a lighter.")
    if niche == "coffee-grinders":
        f.append(
            "Grinds fine enough for espresso."
            if a["espresso_capable"]
            else "Not fine enough for espresso, fine for drip."
        )
        if a.get("noise_db"):
            f.append(
                f"About {a['noise_db']} dB, "
                f"{'quiet' if a['noise_db'] < 75 else 'loud'} in the morning."
            )
        if a.get("manual"):
            f.append("Hand cranking takes about 40 seconds per dose.")
    return f


def reviews(niche: str, pid: str, rating: float, attrs: dict) -> list[dict]:
    pool = facts(niche, attrs)
    n = 3 if len(pool) >= 3 else 2
    base = round(rating)
    stars = [min(5, base + 1) if rating - base > 0.2 else base, base, max(1, base - 2)][:n]
    authors = pick(pid + "authors", AUTHORS, n)
    chosen = pick(pid + "facts", pool, n) if pool else []
    out = []
    for i in range(n):
        s = stars[i]
        fact = chosen[i] if i < len(chosen) else ""
        out.append(
            {
                "author": authors[i],
                "rating": s,
                "text": f"{OPENERS[s]} {fact} {CLOSERS[s]}".replace("  ", " ").strip(),
            }
        )
    return out


def description(title: str, attrs: dict) -> str:
    # false flags are left out: "vegan: no" would make a cowhide bag match a search for "vegan"
    parts = []
    for k, v in list(attrs.items())[:5]:
        if v is False or v == [] or v == 0:
            continue
        name = k.replace("_", " ")
        if v is True:
            parts.append(name)
        elif isinstance(v, list):
            parts.append(f"{name}: {', '.join(v)}")
        else:
            parts.append(f"{name}: {v}")
    return f"{title}. " + "; ".join(parts) + "."


def build() -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for niche, spec in NICHES.items():
        products = []
        for row in spec["products"]:
            if set(row) != FIELDS:
                wrong = sorted(set(row) ^ FIELDS)
                raise ValueError(f"{niche} {row.get('id')}: missing or unknown fields {wrong}")
            pid, title, attrs, rating = row["id"], row["title"], row["attributes"], row["rating"]
            variants = variants_for(spec["variants"], pid, attrs)
            for v in variants:
                v.pop("price_today", None)
            products.append(
                {
                    "id": pid,
                    "niche": niche,
                    "title": title,
                    "brand": row["brand"],
                    "seller": SELLERS[row["seller"]],
                    "price": {
                        "currency": "USD",
                        "list": cents(row["list_price"]),
                        "today": cents(row["today_price"]),
                    },
                    "availability": availability(row["availability"]),
                    "delivery": delivery(row["delivery"]),
                    "attributes": attrs,
                    "variants": variants,
                    "rating": {"average": rating, "count": row["rating_count"]},
                    "reviews": reviews(niche, pid, rating, attrs),
                    "description": description(title, attrs),
                    "tags": row["tags"],
                }
            )
        out[niche] = products
    return out


class _NoAliases(yaml.SafeDumper):
    """Write shared values (the first-party seller) out in full: fixtures are read by people."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for niche, products in build().items():
        path = OUT / f"{niche}.yaml"
        header = (
            f"# {niche}: {len(products)} products. Generated by scripts/generate_catalog.py "
            "from its curated tables;\n# edit the tables there and rerun, not this file.\n"
        )
        body = yaml.dump(
            {"niche": niche, "products": products},
            Dumper=_NoAliases,
            sort_keys=False,
            allow_unicode=True,
            width=100,
        )
        path.write_text(header + body, encoding="utf-8")
        print(f"{path.relative_to(ROOT)}: {len(products)}")


if __name__ == "__main__":
    main()
