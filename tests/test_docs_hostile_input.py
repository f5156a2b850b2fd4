"""docs/hostile-input.md stays true to the tests: every command-line case of
tests/test_hostile_input.py is a row there, and every row of its command-line table is a case."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_hostile_input import CLI_CASES

PAGE = Path(__file__).resolve().parents[1] / "docs" / "hostile-input.md"


def _command_line_rows() -> set[str]:
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Command line", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.M))


def test_every_command_line_case_is_on_the_page_and_no_other() -> None:
    cases = {case for case, _, _ in CLI_CASES}
    rows = _command_line_rows()
    assert cases - rows == set(), "cases without a row in docs/hostile-input.md"
    assert rows - cases == set(), "rows in docs/hostile-input.md without a case"


def test_each_row_names_the_code_its_case_expects() -> None:
    text = PAGE.read_text(encoding="utf-8")
    for case, _, code in CLI_CASES:
        row = re.search(rf"^\| `{re.escape(case)}` \|(.*)\|$", text, flags=re.M)
        assert row is not None, case
        said = row.group(1)
        if code is None:
            assert "succeeds" in said, case
        elif code == "usage":
            assert "usage" in said, case
        else:
            assert f"`{code}`" in said, case
