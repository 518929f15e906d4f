"""τ²-bench in pytest: its retail domain as a backend (`retail`), its published simulations as
trials (`simulations`), and its tasks as cases (`tasks`)."""
