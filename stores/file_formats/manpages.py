"""Man pages (roff sources `ls.1`, `bash.1.gz`, `printf.3`, `x.man`) as documents: the text as
pandoc renders it, the NAME line as the title, the `.TH` (or mdoc `.Dd`) date as the year and the
AUTHOR section's names as authors.

Why pandoc (`pandoc -f man|mdoc -t plain`, shipped by pypandoc-binary): roff is a macro language
(fonts, escapes, tables, conditionals); pandoc's readers know man(7) and mdoc(7), and a rule of
ours for each macro would be a second, worse roff. It runs with `--sandbox`, so a page's `.so
/etc/passwd` includes nothing, and `--wrap=none`, so a paragraph is one line (the store wraps
it). Without pandoc a man page is skipped with that reason; the rest of the folder is read.

A file named like a man page that is not roff (`ChangeLog.1`, a rotated log) is not a man page:
`looks_like_roff` decides, and such a file is read as the text it is when its name is a
conventional document name (`stores.file_formats.dispatch`).
"""

from __future__ import annotations

import re
import shutil
import subprocess

from stores.file_formats.file_document import FileDocument, Unreadable
from stores.file_formats.file_source import FileSource
from stores.file_formats.metadata_sources import Claim, bibliographic

__all__ = ["is_man_name", "looks_like_roff", "read_man"]

_MAN_SUFFIX = re.compile(r"\.(?:[1-9][a-z]{0,8}|man)$", re.IGNORECASE)
# A roff source opens with a comment (`.\"`, `'\"`) or a request; one of these macros is in any
# man page's first lines (`.so` is a page that only points at another one).
_ROFF_START = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:[.']\\\"|\.(?:TH|Dd|Dt|SH|Sh|so|de|ig|if|ds|nr)\b)")
_ROFF_MACRO = re.compile(rb"^[.'][ \t]*(?:TH|Dd|Dt)[ \t]", re.MULTILINE)
_SO_ONLY = re.compile(r"\A(?:[.']\\\".*\n|\s*\n)*\.so[ \t]+(\S+)\s*\Z")
_ARGS = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')
_ESCAPES = (("\\-", "-"), ("\\ ", " "), ("\\~", " "), ("\\&", ""), ("\\|", ""), ("\\^", ""), ("\\e", "\\"))
_FONT = re.compile(r"\\f(?:\[[^\]]*\]|\(..|.)")
_EMAIL = re.compile(r"<[^<>@\s]+@[^<>\s]+>|\([^()@\s]+@[^()\s]+\)|\S+@\S+")
_PARENS = re.compile(r"\([^()]*\)")
_SEPARATORS = re.compile(r",\s*and\s+|,\s*|\s+and\s+|\s+and$")
_WRITTEN_BY = re.compile(r"\b(?:written|made|created|developed)\s+by\s+(.+)", re.IGNORECASE)
_BY_END = re.compile(r"\s+(?:for|with|from|as|in|at|based)\b|;|\.\s+(?=[A-Z][a-z]+\s+(?!and\b)[a-z])")
_NAME = re.compile(r"^[A-Z][\w'.\-]*(?: (?:[A-Z][\w'.\-]*|van|von|der|de|la|da|di|le)){1,4}$")
PANDOC_TIMEOUT_SECONDS = 60
_HEADINGS = ("NAME", "Name")
_AUTHOR_HEADINGS = ("AUTHOR", "AUTHORS", "Author", "Authors")


def is_man_name(name: str) -> bool:
    """Whether a file name says man page: section `.1`-`.9` (with a suffix such as `.3pm`,
    `.1ssl`) or `.man`."""
    return bool(_MAN_SUFFIX.search(name))


def looks_like_roff(head: bytes | None) -> bool:
    """Whether a file's first bytes are a roff source: it opens with a comment or a request, or a
    `.TH`/`.Dd`/`.Dt` macro comes early."""
    return bool(head) and bool(_ROFF_START.match(head or b"") or _ROFF_MACRO.search(head or b""))


def _plain(arg: str) -> str:
    """A macro argument without roff escapes and font changes (`04\\ \\&April` → "04 April")."""
    arg = _FONT.sub("", arg.replace('""', '"'))
    for escape, char in _ESCAPES:
        arg = arg.replace(escape, char)
    return " ".join(arg.split())


def macro_args(source: str, macro: str) -> list[str] | None:
    """The arguments of the first `.macro` line (`.TH LS 1 "2023-01-08" …` → ["LS", "1",
    "2023-01-08", …]), None when there is none."""
    m = re.search(rf"^[.'][ \t]*{macro}(?:[ \t]+(.*))?$", source, re.MULTILINE)
    if m is None:
        return None
    found = _ARGS.finditer(m.group(1) or "")
    return [_plain(a.group(1) if a.group(1) is not None else a.group(2)) for a in found]


def _date_claims(source: str) -> list[Claim]:
    th = macro_args(source, "TH")
    out = [Claim("date", th[2], "man:.TH")] if th and len(th) > 2 else []
    dd = macro_args(source, "Dd")
    if dd:
        date = " ".join(dd).replace("$Mdocdate:", "").replace("$", "")
        out.append(Claim("date", date, "man:.Dd"))
    return out


def _section(text: str, headings: tuple[str, ...]) -> list[str]:
    """The paragraphs of the rendered section under one of `headings` (one paragraph a line)."""
    lines = text.splitlines()
    at = next((n for n, line in enumerate(lines) if line.strip() in headings and not line[:1].isspace()), None)
    if at is None:
        return []
    out: list[str] = []
    for line in lines[at + 1 :]:
        if line.strip() and not line[:1].isspace() and line.strip().isupper() and len(line.split()) <= 4:
            break  # the next section's heading
        if line.strip():
            out.append(line.strip())
    return out


def _name_list(text: str) -> list[str]:
    """Names out of "A, B and C", emails and remarks in parentheses left out."""
    text = _PARENS.sub("", _EMAIL.sub("", text))
    return [" ".join(p.split()).strip(" .,") for p in _SEPARATORS.split(text) if p.strip(" .,")]


def author_names(paragraphs: list[str]) -> list[str]:
    """Personal names an AUTHOR section states: "Written by A, B and C." ("This manual page was
    written by A <email> for Debian"), or a name (with its email) a line. Nothing unless every
    part is a name: prose about the authors gives none."""
    if not paragraphs:
        return []
    by = _WRITTEN_BY.search(paragraphs[0])
    if by:
        names = _name_list(_BY_END.split(by.group(1))[0])
    else:  # a name a line; a later "This manual page was written by …" is about the page, not the program
        names = [n for line in paragraphs[:20] if not _WRITTEN_BY.search(line) for n in _name_list(line)]
    return names if names and all(_NAME.match(n) for n in names) else []


def _pandoc() -> str:
    """The pandoc binary: pypandoc-binary's, else one on PATH; `Unreadable` naming the fix."""
    try:
        import pypandoc

        return str(pypandoc.get_pandoc_path())
    except (ImportError, OSError):
        found = shutil.which("pandoc")
        if found:
            return found
    raise Unreadable("a man page, and pandoc (which reads roff) is not installed: pip install pypandoc-binary")


# A macro definition block (`.de NAME` … `..`, also `.am`, `.ig`). Pandoc's roff reader expands the
# definitions it can and stops at one it cannot parse: Tcl's man.macros, copied into every Tcl
# and Tk man page, hold a `.el \}\` that made pandoc refuse 121 of 122 Tcl command pages.
_MACRO_BLOCK = re.compile(
    r"^[.'][ \t]*(?:de|de1|am|am1|ig)\b[^\n]*\n.*?^[.'][ \t]*\.[ \t]*$\n?", re.MULTILINE | re.DOTALL
)


def render(source: str, mdoc: bool) -> str:
    """The plain text of a roff source, by pandoc; when pandoc cannot parse the page, once more
    without its macro definitions (the page's own macros are then left unexpanded, and their
    arguments kept as text where pandoc reads them so)."""
    try:
        return _render(source, mdoc)
    except Unreadable:
        stripped = _MACRO_BLOCK.sub("", source)
        if stripped == source:
            raise
        return _render(stripped, mdoc)


def _render(source: str, mdoc: bool) -> str:
    try:
        run = subprocess.run(
            [_pandoc(), "-f", "mdoc" if mdoc else "man", "-t", "plain", "--wrap=none", "--sandbox"],
            input=source.encode("utf-8"),
            capture_output=True,
            timeout=PANDOC_TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired:
        raise Unreadable(f"pandoc did not finish rendering this man page in {PANDOC_TIMEOUT_SECONDS} s") from None
    except OSError as exc:
        raise Unreadable(f"pandoc could not run ({exc})") from exc
    if run.returncode != 0:
        why = run.stderr.decode("utf-8", "replace").strip().splitlines()
        raise Unreadable(f"pandoc cannot read this man page ({why[0] if why else f'exit {run.returncode}'})")
    return run.stdout.decode("utf-8", "replace").replace("\r\n", "\n").strip()


def read_man(source: FileSource) -> FileDocument:
    """A roff man page as title (its NAME line, else "ls(1)"), text and bibliographic metadata."""
    roff = source.text()
    pointer = _SO_ONLY.match(roff)
    if pointer:
        raise Unreadable(f"a pointer to another man page (.so {pointer.group(1)}), which is read in its place")
    mdoc = macro_args(roff, "Dd") is not None and macro_args(roff, "TH") is None
    text = render(roff, mdoc)
    if not text:
        raise Unreadable("empty file (nothing to search)")
    name = _section(text, _HEADINGS)
    title = name[0] if name else ""
    if not title:
        head = macro_args(roff, "Dt" if mdoc else "TH") or []
        title = f"{head[0].lower()}({head[1]})" if len(head) > 1 else ""
    claims = _date_claims(roff)
    authors = author_names(_section(text, _AUTHOR_HEADINGS))
    if authors:
        claims.append(Claim("authors", authors, "man:AUTHOR"))
    return FileDocument(title, text, bibliographic(claims))
