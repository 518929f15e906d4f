"""What a run prints and writes for people: the HTML report (`html`), the comparison of two runs
(`compare`), and their hooks (`_plugin`).
"""
