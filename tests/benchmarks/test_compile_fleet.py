"""The compile-fleet benchmark's build count: every build is named, and each program's once."""

from __future__ import annotations

from benchmarks.compile_fleet import Builds, Runner, build_kind, generate_programs, take_turn


def test_each_logged_build_is_named_by_what_it_makes():
    assert build_kind("/c/tmp/sf_program_3_0123456789abcdef.so") == "program"
    assert build_kind("/t/sf_launcher.cpython-311-x86_64-linux-gnu.so") == "launcher"
    assert build_kind("/c/support/tmp/x/sf_support.o") == "support object"
    assert build_kind("/c/tmp/measure-x1/measure") == "tuning measurement"
    assert build_kind("/elsewhere/a.out") == "other: a.out"


def test_a_program_built_twice_is_reported():
    builds = Builds.of([
        "/a/sf_program_1_0123456789abcdef.so",
        "/b/sf_program_1_0123456789abcdef.so",
        "/a/sf_program_2_fedcba9876543210.so",
        "/t/sf_launcher.so",
    ])
    assert builds.kinds == {"program": 3, "launcher": 1}
    assert builds.repeated == ("sf_program_1",)
    assert "built more than once: sf_program_1" in builds.describe()
    assert not builds.each_program_once(2)


def test_a_fleet_passes_with_each_program_once_and_one_of_each_machine_build():
    lines = ["/a/sf_program_1_0123456789abcdef.so", "/a/sf_program_2_fedcba9876543210.so",
             "/t/sf_launcher.so", "/c/support/sf_support.o", "/c/tmp/measure-1/measure"]
    builds = Builds.of(lines)
    assert builds.each_program_once(2) and builds.others_once_per_machine()
    assert not Builds.of([*lines, "/t2/sf_launcher.so"]).others_once_per_machine()
    assert not Builds.of([*lines, "/x/a.out"]).others_once_per_machine()


def test_a_turn_counts_the_set_up_apart_from_the_programs(tmp_path, monkeypatch):
    monkeypatch.setenv("STENCILFORGE_TOOLCHAIN_DIR", str(tmp_path / "toolchain"))
    (tmp_path / "code").mkdir()
    programs = generate_programs(tmp_path / "code", 2, first=900)
    (setup,) = generate_programs(tmp_path / "code", 1, first=902)
    turn = take_turn(Runner("serial", 1, lambda: None), tmp_path / "turn", setup, programs)
    assert turn.builds.kinds == {"program": 2}  # the machine's builds were the set-up's
    assert turn.setup_builds.kinds["program"] == 1
    assert turn.setup_builds.kinds["launcher"] == 1
    assert turn.setup_builds.kinds["support object"] == 1
    assert turn.seconds > 0 and turn.setup_seconds > 0
