"""bench/bootstrap.py's pure logic: the order its designs alternate in."""

from __future__ import annotations

from collections import Counter

from bench.bootstrap import DESIGNS, order


def test_the_designs_alternate_abba_so_each_is_first_as_often_as_second():
    assert order(4) == ["consumer", "spark", "spark", "consumer"]
    eight = order(8)
    assert Counter(eight) == {d: 4 for d in DESIGNS}
    # Every pair of rounds holds both designs, so a slow drift of the machine falls on both alike.
    assert all(set(eight[i:i + 2]) == set(DESIGNS) for i in range(0, 8, 2))


def test_an_odd_number_of_rounds_still_starts_with_the_consumer():
    assert order(1) == ["consumer"]
    assert order(3) == ["consumer", "spark", "spark"]
