"""The litehit commands of README.md and docs/litehit.md run as written, in order, from a
copy of the repository root, and print what the documents show."""
from __future__ import annotations

import os
import shlex
import shutil

import pytest

from litehit.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = ".venv/bin/litehit"
PIPE_TAIL = "2>/dev/null | tail -1"
TIMED = "litehit replay: "              # its seconds and accesses/s vary from run to run


@pytest.fixture
def repo_copy(tmp_path, monkeypatch):
    """A fresh-clone-like root: the shipped traces and configs, no out/."""
    os.symlink(os.path.join(ROOT, "data"), tmp_path / "data")
    shutil.copytree(os.path.join(ROOT, "conf"), tmp_path / "conf")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _blocks(path: str) -> list[tuple[str, list[str]]]:
    """(command, output lines) for every indented line that runs the litehit script,
    continuation lines joined; the output is the indented lines that follow it."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    found = []
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        if lines[i].startswith("    ") and text.lstrip("$ ").startswith(SCRIPT):
            command = text.lstrip("$ ")
            while command.endswith("\\"):
                i += 1
                command = command[:-1] + lines[i].strip()
            output = []
            while i + 1 < len(lines) and lines[i + 1].startswith("    ") and \
                    not lines[i + 1].strip().lstrip("$ ").startswith(SCRIPT):
                i += 1
                output.append(lines[i][4:].rstrip())    # the block's indent only
            found.append((command.split("#")[0].strip(), output))
        i += 1
    return found


def _run(command: str, capsys) -> tuple[int, list[str]]:
    tail = command.endswith(PIPE_TAIL)
    argv = shlex.split(command[:-len(PIPE_TAIL)] if tail else command)
    assert argv[0] == SCRIPT
    with pytest.raises(SystemExit) as info:
        main(argv[1:])
    captured = capsys.readouterr()
    if tail:
        return info.value.code, captured.out.splitlines()[-1:]
    return info.value.code, (captured.out + captured.err).splitlines()


def _same(shown: list[str], printed: list[str]) -> bool:
    if len(shown) != len(printed):
        return False
    return all(a == b.rstrip() or (a.startswith(TIMED) and b.startswith(TIMED)
                          and a.split(" instances, ")[0] == b.split(" instances, ")[0]
                          and a.split(" -> ")[1] == b.split(" -> ")[1])
               for a, b in zip(shown, printed))


def test_docs_litehit_commands_print_what_the_guide_shows(repo_copy, capsys):
    blocks = _blocks(os.path.join(ROOT, "docs", "litehit.md"))
    assert len(blocks) >= 7
    for command, shown in blocks:
        code, printed = _run(command, capsys)
        failing = any(line.startswith("litehit: error:") for line in shown)
        assert code == (1 if failing else 0), command
        assert _same(shown, printed), (command, shown, printed)


def test_readme_litehit_snippet_runs_and_prints_its_summary(repo_copy, capsys):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    section = readme[readme.index("## litehit on the shared Mooncake trace"):]
    section = section[:section.index("\n## ", 1)]
    path = repo_copy / "readme-section.md"
    path.write_text(section)
    printed = {}
    for command, _ in _blocks(str(path)):
        code, printed[command.split()[1]] = _run(command, capsys)
        assert code == 0, command
    assert [c for c in printed] == ["convert", "replay", "query", "plot"]
    for line in printed["query"]:
        assert "    " + line in section, line
    assert (repo_copy / "out" / "curve.svg").exists()
