"""Case files: the `Case` model and its JSON schema, loading and validating YAML/JSON case files
(`loader`), the parsed-YAML cache, and the collection hooks that turn files into pytest items
(`_plugin`).
"""
