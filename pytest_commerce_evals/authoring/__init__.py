"""Authoring checks: the case linter (`lint`, `--commerce-lint`) and the vacuity check (`vacuity`,
`--commerce-vacuity`), with their hooks (`_plugin`).
"""
