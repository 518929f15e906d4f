"""Interpreter settings raised for a stretch of a run: raised only upwards, put back unless
something else changed them since."""

from __future__ import annotations

import gc
import sys

import pytest

from pytest_commerce_evals.interpreter import raise_gc_threshold, raise_switch_interval


@pytest.fixture(autouse=True)
def _kept():
    interval, thresholds = sys.getswitchinterval(), gc.get_threshold()
    yield
    sys.setswitchinterval(interval)
    gc.set_threshold(*thresholds)


def test_a_raised_switch_interval_is_put_back():
    sys.setswitchinterval(0.005)
    restore = raise_switch_interval(0.02)
    assert sys.getswitchinterval() == pytest.approx(0.02)
    restore()
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_a_switch_interval_is_never_lowered_nor_put_back_over_a_later_change():
    sys.setswitchinterval(0.05)
    restore = raise_switch_interval(0.02)
    assert sys.getswitchinterval() == pytest.approx(0.05)
    restore()
    assert sys.getswitchinterval() == pytest.approx(0.05)
    sys.setswitchinterval(0.005)
    restore = raise_switch_interval(0.02)
    sys.setswitchinterval(0.03)  # changed since: kept
    restore()
    assert sys.getswitchinterval() == pytest.approx(0.03)


def test_a_raised_gc_threshold_keeps_the_older_generations_and_is_put_back():
    gc.set_threshold(700, 11, 12)
    restore = raise_gc_threshold(50_000)
    assert gc.get_threshold() == (50_000, 11, 12)
    restore()
    assert gc.get_threshold() == (700, 11, 12)


def test_a_gc_threshold_is_never_lowered_never_turned_on_nor_put_back_over_a_change():
    gc.set_threshold(90_000, 10, 10)
    raise_gc_threshold(50_000)()
    assert gc.get_threshold() == (90_000, 10, 10)
    gc.set_threshold(0, 10, 10)  # automatic collection off: left off
    restore = raise_gc_threshold(50_000)
    assert gc.get_threshold() == (0, 10, 10)
    restore()
    gc.set_threshold(700, 10, 10)
    restore = raise_gc_threshold(50_000)
    gc.set_threshold(2_000, 10, 10)
    restore()
    assert gc.get_threshold() == (2_000, 10, 10)
