"""Reading a document file's bytes safely and decoding them as text.

Its own module because every text-based reader (`stores.file_formats.text`, `stores.file_formats.structured`)
and the suffix dispatch (`stores.file_formats.dispatch`, which sniffs extension-less files) need the same
byte-level rules, apart from any one format. Text is read only from a regular file, opened without
blocking (a FIFO renamed `notes.txt` would otherwise hang the ingest for ever). Text files are
decoded as UTF-8 when they are, else by `charset-normalizer`'s detection (a Latin-1 note reads as
Latin-1); a file that decodes as nothing is not text (`Unreadable`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from stores.file_formats.file_document import Unreadable

# Extension-less files (README, NEWS, ChangeLog, INSTALL, AUTHORS, TODO …) are read as plain text
# when their first SNIFF_BYTES look like UTF-8 text: no NUL byte, valid UTF-8 (a character cut at
# the sniff's end allowed) and at least TEXT_PRINTABLE_SHARE of the characters printable or
# whitespace. Anything else (an executable, a compressed blob) is a file of an unsupported type,
# named and not read, like a .pptx.
SNIFF_BYTES = 8192
TEXT_PRINTABLE_SHARE = 0.95


# -- decoding ------------------------------------------------------------------------------------


def decode(raw: bytes) -> str:
    """Text of a file: UTF-16 when its byte-order mark says so and its bytes agree, UTF-8 (BOM or
    not) when valid, else the detected encoding."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            if b"\x00" in raw[:SNIFF_BYTES]:  # UTF-16 indeed (its ASCII has NUL halves), but cut mid-character
                raise Unreadable("UTF-16 text that ends mid-character: the file looks cut short") from None
            # else not UTF-16 after all (a Latin-1 text may begin with "ÿþ"): read as if unmarked
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    if b"\x00" in raw[:SNIFF_BYTES]:
        raise Unreadable("binary data, not text")
    from charset_normalizer import from_bytes

    results = from_bytes(raw)
    best = results.best()
    if best is None:
        raise Unreadable("not text: no character encoding fits its bytes")
    # Short Western text fits several single-byte code pages equally well ("élèves" is as clean
    # in cp1250 as "élčves"); on a tie, Windows-1252 (Latin-1's superset) is the likeliest.
    tied = [m for m in results if (m.chaos, m.coherence) == (best.chaos, best.coherence)]
    return str(next((m for m in tied if m.encoding == "cp1252"), best))


def read_regular(path: Path) -> bytes:
    """The bytes of `path` if it is a regular file. Opened non-blocking and checked on the open
    descriptor, so a FIFO or device put in the file's place after the folder was listed is
    refused without ever waiting for a writer."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise Unreadable(f"cannot read the file ({exc.strerror or exc})") from exc
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable("not a regular file")
        try:
            return fh.read()
        except OSError as exc:
            raise Unreadable(f"cannot read the file ({exc.strerror or exc})") from exc


def read_text(path: Path) -> str:
    """The decoded text of the regular file `path` (`read_regular`, then `decode`)."""
    return decode(read_regular(path))


def read_head(path: Path, size: int = SNIFF_BYTES) -> bytes | None:
    """The first `size` bytes of the regular file `path`, or None when it cannot be opened or is
    not a regular file. Opened non-blocking, like `read_regular`."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        try:
            return fh.read(size)
        except OSError:
            return None


def sniff_text(path: Path) -> bool:
    """Whether a file without a suffix is text to read (see `SNIFF_BYTES`); a file that cannot be
    opened is not text here (reading it would say why)."""
    head = read_head(path)
    return head is not None and looks_like_text(head)


def looks_like_text(head: bytes) -> bool:
    """Whether a file's first bytes (`SNIFF_BYTES` at most, from a file or a decompressed stream)
    are text to read (see `SNIFF_BYTES`)."""
    if not head or b"\x00" in head:
        return False
    try:
        sample = head.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3 or exc.reason != "unexpected end of data":
            return False
        sample = head[: exc.start].decode("utf-8-sig")
    printable = sum(ch.isprintable() or ch in "\t\n\r\f\v" for ch in sample)
    return printable >= TEXT_PRINTABLE_SHARE * len(sample)
