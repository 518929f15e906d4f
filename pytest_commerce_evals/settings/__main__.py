"""`python -m pytest_commerce_evals.settings > docs/options.md`"""

from ._docs import options_markdown

print(options_markdown(), end="")
