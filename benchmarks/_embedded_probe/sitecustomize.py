"""The instrument of benchmarks/bench_embedded.py, loaded into the embedded model's server process
(and every other Python process the benchmark starts) through PYTHONPATH; it does nothing unless
COMMERCE_BENCH_STATS names a file.

It wraps `llama_cpp.Llama.generate` and `Llama.create_completion` of whatever llama-cpp-python
the server runs, whatever version of the plugin started it, and appends one JSON line a
completion: which role's prompt it was (read off the prompt's text), the prompt's tokens, how
many of them the context already held (llama.cpp's own prefix match, counted as llama-cpp-python
counts it), the tokens llama.cpp evaluated and generated with its own timings
(`llama_perf_context`), and the wall time of the call.
"""

from __future__ import annotations

import os

_PATH = os.environ.get("COMMERCE_BENCH_STATS")


def _role(prompt: str) -> str:
    head = prompt[:20000]  # the agent's system prompt may follow the tools' turn
    if "You grade one turn of a conversation" in head:
        return "judge"
    if "You coach someone playing a customer" in head:
        return "attacker"
    if "in a test of the assistant's policies" in head:
        return "attacker"
    if "You play a customer of an online store" in head:
        return "customer"
    if "shopping assistant" in head or "catalog assistant" in head:
        return "agent"
    return "other"


def _install() -> None:
    import builtins
    import json
    import threading
    import time

    lock = threading.Lock()
    real_import = builtins.__import__
    done = []

    def patch(llama_mod) -> None:
        Llama = llama_mod.Llama
        generate, create = Llama.generate, Llama.create_completion

        def lcp(a, b) -> int:
            n = 0
            for x, y in zip(a, b, strict=False):
                if x != y:
                    break
                n += 1
            return n

        def wrapped_generate(self, tokens, *args, **kwargs):
            tokens = list(tokens)
            held = lcp(self._input_ids.tolist(), tokens) if self.n_tokens > 0 else 0
            info = getattr(self, "_bench_call", None)
            if info is not None and "tokens" not in info:
                info["tokens"], info["held"] = tokens, held
            for token in generate(self, tokens, *args, **kwargs):
                if info is not None:
                    info.setdefault("generated", []).append(int(token))
                yield token

        real_eval = Llama.eval

        def wrapped_eval(self, tokens):
            info = getattr(self, "_bench_call", None)
            t0 = time.perf_counter()
            try:
                return real_eval(self, tokens)
            finally:
                if info is not None and "prompt_s" not in info:  # the prompt's first eval
                    info["prompt_s"], info["evaluated"] = time.perf_counter() - t0, len(tokens)

        def wrapped_create(self, prompt, *args, **kwargs):
            info = {"pid": os.getpid(), "role": _role(prompt if isinstance(prompt, str) else "")}
            self._bench_call = info
            t0 = time.perf_counter()
            try:
                out = create(self, prompt, *args, **kwargs)
            finally:
                self._bench_call = None
            wall = time.perf_counter() - t0
            usage = (out.get("usage") or {}) if isinstance(out, dict) else {}
            info.update(
                wall_s=wall,
                completion_tokens=usage.get("completion_tokens", 0),
                completion=(out["choices"][0].get("text") or "") if isinstance(out, dict) else "",
                end=time.time(),
            )
            with lock, open(_PATH, "a", encoding="utf-8") as f:
                f.write(json.dumps(info) + "\n")
            return out

        Llama.eval = wrapped_eval
        Llama.generate = wrapped_generate
        Llama.create_completion = wrapped_create

    def hook(name, globals=None, locals=None, fromlist=(), level=0):
        module = real_import(name, globals, locals, fromlist, level)
        if not done and name.startswith("llama_cpp"):
            import sys

            mod = sys.modules.get("llama_cpp.llama")
            if mod is not None and hasattr(mod, "Llama"):
                done.append(True)
                builtins.__import__ = real_import
                patch(mod)
        return module

    builtins.__import__ = hook


if _PATH:
    _install()
