"""Document ids of files read from a folder: the path under the folder without its format suffix
(`notes/a b.md` → `notes/a_b`; `README.Debian` keeps its name, `.Debian` being no format; a gzipped
file is named as what it holds, `man1/ls.1.gz` → `man1/ls.1`, `manual.html.gz` → `manual`).

Two files whose ids would be the same (`manual.html` and `manual.pdf`, `README` and `README.md`)
are both kept: each takes its whole path as its id (`manual.html`, `manual.pdf`), so the id says
which. Only such files change: every other file keeps the id the first rule gives it, as before.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path, PurePosixPath

from stores.file_formats.gzipped import is_gzipped

__all__ = ["base_docid", "file_docids", "whole_docid"]


def _id(rel: PurePosixPath) -> str:
    return re.sub(r"\s+", "_", rel.as_posix())


def base_docid(path: Path, root: Path, format_suffix: Callable[[Path], str]) -> str:
    """The id of `path` under `root` by the first rule (see the module docstring); `format_suffix`
    says which suffix names a format (`stores.file_formats.dispatch.format_suffix`)."""
    rel = PurePosixPath(path.relative_to(root).as_posix())
    if is_gzipped(path):
        rel = rel.with_suffix("")
    return _id(rel.with_suffix("") if format_suffix(Path(rel.name)) else rel)


def whole_docid(path: Path, root: Path) -> str:
    """The id of a file whose first-rule id is shared: its whole path under `root`."""
    return _id(PurePosixPath(path.relative_to(root).as_posix()))


def file_docids(files: list[Path], root: Path, format_suffix: Callable[[Path], str]) -> dict[Path, str]:
    """The id of each of `files` (all under `root`): the first rule's, or the whole path for files
    that would share one."""
    groups: dict[str, list[Path]] = {}
    for path in files:
        groups.setdefault(base_docid(path, root, format_suffix), []).append(path)
    return {
        path: base if len(group) == 1 else whole_docid(path, root) for base, group in groups.items() for path in group
    }
