"""The JSON Schema of the case format, generated from the case model, for editors.

Regenerate with `python -m pytest_commerce_evals.cases.schema docs/case-schema.json`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .case import Case

__all__ = ["case_json_schema", "render"]


def case_json_schema() -> dict[str, Any]:
    schema = Case.model_json_schema()
    single = dict(schema)
    defs = single.pop("$defs", {})
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "commerce-evals case file",
        "description": "One case, or a list of cases.",
        "$defs": {**defs, "Case": single},
        "oneOf": [
            {"$ref": "#/$defs/Case"},
            {"type": "array", "items": {"$ref": "#/$defs/Case"}},
        ],
    }


def render() -> str:
    return json.dumps(case_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/case-schema.json")
    target.write_text(render(), encoding="utf-8")
    print(f"wrote {target}")
