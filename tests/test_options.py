"""strategy=, rotation=, sort_diagonal=: checking, defaults, rendering."""

from __future__ import annotations

import numpy as np
import pytest

import cljacobi
from cljacobi.host.pointwise_plan import PointwiseSpec
from cljacobi.host.programs import render
from cljacobi.options import DEFAULTS, STRATEGY_CHOICES, JacobiOptions, resolve_options


def test_strategy_choices_are_exactly_the_documented_names():
    assert STRATEGY_CHOICES == ("mm", "me", "ring", "round-robin", "auto")


def test_auto_and_none_resolve_to_the_defaults():
    strategy, rotation = DEFAULTS["pointwise"]
    assert resolve_options() == JacobiOptions(strategy, rotation, True)
    assert resolve_options("auto", None, False) == JacobiOptions(strategy, rotation, False)
    assert resolve_options("mm", 3, np.bool_(True)) == JacobiOptions("mm", 3, True)
    assert resolve_options("mm", 3, 0) == JacobiOptions("mm", 3, False)
    assert resolve_options("round-robin", np.int64(1)).rotation == 1


@pytest.mark.parametrize("bad", ["odd-even", "MM", "round_robin", "", None, 1, ("mm",)])
def test_unknown_strategy_lists_the_names(bad):
    with pytest.raises(ValueError) as exc:
        resolve_options(bad)
    for name in STRATEGY_CHOICES:
        assert repr(name) in str(exc.value)


@pytest.mark.parametrize("bad", [0, 4, -1, True, 2.0, "2"])
def test_bad_rotation_lists_1_2_3(bad):
    with pytest.raises(ValueError, match="allowed: 1, 2, 3"):
        resolve_options("mm", bad)


@pytest.mark.parametrize("bad", [2, "yes", None, 1.0])
def test_sort_diagonal_must_be_bool(bad):
    with pytest.raises(TypeError, match="sort_diagonal"):
        resolve_options("mm", 1, bad)


def test_unknown_variant():
    with pytest.raises(ValueError, match="variant"):
        resolve_options(variant="bo-and-fb")


@pytest.mark.parametrize("call", [
    lambda **kw: cljacobi.eig_indefinite(np.eye(3), **kw),
    lambda **kw: cljacobi.hsvd(np.eye(3), np.ones(3), **kw),
])
def test_public_calls_check_options_first(call):
    """Options are checked before the array (scipy's order): a bad array is not reached."""
    with pytest.raises(ValueError, match="unknown strategy 'odd-even'; allowed: 'mm', 'me'"):
        call(strategy="odd-even")
    with pytest.raises(ValueError, match="unknown rotation 4"):
        call(rotation=4)
    with pytest.raises(TypeError, match="sort_diagonal"):
        call(sort_diagonal="no")


def test_options_are_checked_before_the_array():
    with pytest.raises(ValueError, match="unknown strategy"):
        cljacobi.eig_indefinite(np.ones((2, 3)), strategy="bogus")


def test_render_strategy_and_rotation():
    mm = render(PointwiseSpec("float64", 32, False))
    table = render(PointwiseSpec("float64", 32, False, strategy="table"))
    assert "cjac_stepper_update(s, r)" in mm and "pairs[" not in mm
    step_parameters = table.split("void cjac_step(")[1].split(")")[0]
    assert "__global const int2 *pairs,\n    const int step," in step_parameters
    assert "stepper[k] =" not in table.split("void cjac_step")[1]
    plain = render(PointwiseSpec("float64", 32, True, rotation=1))
    two = render(PointwiseSpec("float64", 32, True, rotation=2))
    three = render(PointwiseSpec("float64", 32, True, rotation=3))
    assert "const bool exchange = false;" in plain
    assert "D[i] = new_i;" in two and "D[i] = new_i;" not in three
    assert "yn = -old_xn;" in three and "real_columns" in three and "real_columns" not in two
    with pytest.raises(ValueError, match="strategy"):
        PointwiseSpec("float64", 32, False, strategy="ring")
    with pytest.raises(ValueError, match="rotation"):
        PointwiseSpec("float64", 32, False, rotation=4)
