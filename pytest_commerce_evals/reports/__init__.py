"""What a run prints and writes for people: the HTML report of a run (`html`, its cases and
trials in `html_trials`, its cost in `html_cost`), the comparison of two runs (`compare`, its HTML
in `html_compare`), the page and run summary both reports share (`html_page`, `html_summary`,
the CSS and JS in `assets/`), what a run cost side by side (`run_cost`), and their hooks
(`_plugin`).
"""
