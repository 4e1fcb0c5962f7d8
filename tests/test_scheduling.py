"""tests/scheduling.py: the units xdist's workers are handed and their order."""

from __future__ import annotations

from tests.scheduling import HEAVIEST, queued, unit_of, unit_seconds


def test_a_unit_is_a_file_of_one_shape_or_a_package_that_shares_servers() -> None:
    assert (
        unit_of("tests/keys/test_auth.py::TestRefusals::test_x[embedded]")
        == "tests/keys/test_auth.py[embedded]"
    )
    assert unit_of("tests/x/test_y.py::test_z[distributed-not-gzip]") == "tests/x/test_y.py[distributed]"
    assert unit_of("tests/x/test_y.py::test_z[zeros-embedded]") == "tests/x/test_y.py[embedded]"
    assert unit_of("tests/test_layers.py::test_layers") == "tests/test_layers.py"
    assert unit_of("tests/x/test_y.py::test_z[embeddedness]") == "tests/x/test_y.py"
    odd = "tests/x/test_y.py::TestA::test_z[distributed-http://[::1]:8080/-[0].msg: unknown]"
    assert unit_of(odd) == "tests/x/test_y.py[distributed]"
    journey = "tests/dashboard/browser/test_keys_journey.py::test_keys[distributed]"
    assert unit_of(journey) == "tests/dashboard/browser/[distributed]"


def test_every_embedded_unit_comes_before_every_distributed_one_heaviest_first() -> None:
    light, heavy = "tests/a/test_light.py", HEAVIEST[1]
    nodeids = [
        f"{light}::test_one[embedded]",
        f"{light}::test_one[distributed]",
        f"{light}::test_two[embedded]",
        "tests/test_layers.py::test_layers",
        f"{heavy}::test_long[embedded]",
        f"{heavy}::test_long[distributed]",
    ]
    assert queued(nodeids) == [
        f"{heavy}::test_long[embedded]",
        f"{light}::test_one[embedded]",
        f"{light}::test_two[embedded]",
        "tests/test_layers.py::test_layers",
        f"{heavy}::test_long[distributed]",
        f"{light}::test_one[distributed]",
    ]


def test_durations_are_summed_per_unit() -> None:
    report = [
        "============================= slowest durations =============================",
        "12.50s call     tests/cli/test_operator.py::test_init[distributed]",
        "2.00s setup    tests/cli/test_operator.py::test_other[distributed]",
        "0.50s teardown tests/cli/test_operator.py::test_init[embedded]",
        "(1523 durations < 0.005s hidden.  Use -vv to show these durations.)",
    ]
    assert unit_seconds(report) == {
        "tests/cli/test_operator.py[distributed]": 14.5,
        "tests/cli/test_operator.py[embedded]": 0.5,
    }
