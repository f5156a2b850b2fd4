"""Gzipped document files (`ls.1.gz`, `changelog.Debian.gz`, `manual.html.gz`) read as what they
hold, within a bound on what they expand to.

Why: documentation folders as they come (Debian's /usr/share/doc and /usr/share/man) keep most
of their man pages, changelogs and READMEs gzipped; read as "unsupported type" they were simply
missing from the corpus. The inner name (the file's name without `.gz`) says the format, as the
name of any other file does.

Why a bound: a gzip stream expands about 1,000-fold (10 MB of zeros is 10 KB gzipped), so a small
file could fill memory before any size check sees its text. Decompression stops one byte past
`MAX_GUNZIPPED_BYTES` and the file is refused with that reason; text beyond
`stores.file_formats.file_document.MAX_DOCUMENT_CHARS` is refused later anyway, so the bound leaves room only
for a PDF's or a page's markup.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

from stores.file_formats.file_document import Unreadable
from stores.file_formats.text_files import read_regular

__all__ = ["MAX_GUNZIPPED_BYTES", "gunzip", "gunzip_head", "inner_name", "is_gzipped"]

MAX_GUNZIPPED_BYTES = 64 * 1024 * 1024


def is_gzipped(path: Path) -> bool:
    """Whether `path` is named as a gzip file (`.gz`, any case) with a name before the suffix."""
    return path.suffix.lower() == ".gz" and len(path.name) > 3


def inner_name(path: Path) -> str:
    """The name of what a `.gz` file holds (`ls.1.gz` → `ls.1`); a plain file's own name."""
    return path.name[:-3] if is_gzipped(path) else path.name


def _expand(raw: bytes, limit: int) -> bytes:
    """At most `limit + 1` bytes of the gzip stream(s) in `raw`; `Unreadable` when it is not one."""
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            return stream.read(limit + 1)
    except (OSError, EOFError, zlib.error) as exc:
        raise Unreadable(f"not a valid gzip file ({exc})") from exc


def gunzip(path: Path, limit: int = MAX_GUNZIPPED_BYTES) -> bytes:
    """The decompressed bytes of the gzip file `path`; `Unreadable` when it is damaged or expands
    past `limit` bytes (a gzip bomb is refused having produced one byte more than the limit)."""
    data = _expand(read_regular(path), limit)
    if len(data) > limit:
        raise Unreadable(
            f"expands to more than {limit:,} bytes when decompressed (a gzip bomb?): not read; "
            "decompress it yourself if it is a real document"
        )
    return data


def gunzip_head(path: Path, size: int) -> bytes | None:
    """The first `size` decompressed bytes of `path`, or None when it cannot be read or is not
    gzip (what sniffing needs: reading it properly says why)."""
    try:
        return _expand(read_regular(path), size - 1)[:size]
    except Unreadable:
        return None
