"""A document file as a format reader gets it: where it is, the name that says its format, and
its bytes, decompressed when it is gzipped (`stores.file_formats.gzipped`).

Its own value so every reader (`stores.file_formats.text`, `stores.file_formats.structured`, `stores.file_formats.pdf`,
`stores.file_formats.manpages`) reads a plain file and a gzipped one alike, without a decompressed copy on
disk: a copy of the user's text would be one more place it lies around.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stores.file_formats.gzipped import gunzip, gunzip_head, inner_name, is_gzipped
from stores.file_formats.text_files import SNIFF_BYTES, decode, read_head, read_regular

__all__ = ["FileSource", "file_source"]


@dataclass(frozen=True)
class FileSource:
    """`path` on disk; `name` the name its format comes from (`ls.1` for `ls.1.gz`)."""

    path: Path
    name: str
    gzipped: bool = False

    @property
    def suffix(self) -> str:
        """The lower-cased suffix of `name` (`.1` for `ls.1.gz`)."""
        return Path(self.name).suffix.lower()

    def read(self) -> bytes:
        """All its bytes (decompressed, within `stores.file_formats.gzipped.MAX_GUNZIPPED_BYTES`); `Unreadable`."""
        return gunzip(self.path) if self.gzipped else read_regular(self.path)

    def text(self) -> str:
        """Its decoded text (`stores.file_formats.text_files.decode`); `Unreadable`."""
        return decode(self.read())

    def head(self, size: int = SNIFF_BYTES) -> bytes | None:
        """Its first `size` bytes (decompressed), or None when they cannot be read."""
        return gunzip_head(self.path, size) if self.gzipped else read_head(self.path, size)


def file_source(path: Path) -> FileSource:
    """The `FileSource` of `path`: a `.gz` file is what it holds."""
    return FileSource(path, inner_name(path), is_gzipped(path))
