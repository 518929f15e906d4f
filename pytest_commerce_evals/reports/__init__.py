"""What a run prints and writes for people: the HTML report (`html`) and terminal helpers
(`terminal`).
"""
