"""A hand-made stand-in for a τ²-bench checkout's user simulator base: its ending markers."""

STOP = "###STOP###"
TRANSFER = "###TRANSFER###"
OUT_OF_SCOPE = "###OUT-OF-SCOPE###"
