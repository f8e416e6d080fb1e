"""The ``faultline`` command's help says true things: every flag it names an environment
variable for can come from that variable, and the subcommands it lists all answer --help."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from detector.cli.main import build_parser, main

ENV = re.compile(r"\[env (FAULTLINE_[A-Z0-9_]+)")


def actions(p: argparse.ArgumentParser, path: tuple[str, ...] = ()
            ) -> Iterator[tuple[tuple[str, ...], argparse.Action]]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                yield from actions(sub, (*path, name))
        else:
            yield path, a


def test_a_required_flag_named_with_a_variable_can_come_from_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    named = {(path, a.dest): ENV.findall(a.help or "") for path, a in actions(build_parser())}
    for names in named.values():
        for name in names:
            monkeypatch.setenv(name, "7")
    still = [f"faultline {' '.join(path)} {'/'.join(a.option_strings)}"
             for path, a in actions(build_parser()) if a.required and named[path, a.dest]]
    assert still == []  # argparse ignores a default for a required flag


def test_the_import_output_can_come_from_the_environment(
        monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    out = tmp_path / "steps.jsonl"
    csv = tmp_path / "job_1_norm.csv"
    csv.write_text("")
    monkeypatch.setenv("FAULTLINE_IMPORT_OUT", str(out))
    assert main(["import", "alibaba", str(csv)]) == 0
    assert out.exists()


def subcommands() -> list[tuple[str, ...]]:
    return sorted({path for path, _ in actions(build_parser()) if path})


@pytest.mark.parametrize("path", subcommands(), ids=" ".join)
def test_every_subcommand_answers_help(path: tuple[str, ...],
                                       capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main([*path, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    assert text.startswith(f"usage: faultline {' '.join(path)}")
