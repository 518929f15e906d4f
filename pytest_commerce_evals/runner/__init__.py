"""Running trials: `trial.run_trial` (one trial: backend, agent, turns, events, graders, judge),
the scheduler that overlaps trials, the pytest items and their outcomes, the run's summary and
exit status (`_plugin`, `summary`).
"""
