"""Build the Debian documentation corpus of the answer set: real files, as a user's folder holds them.

    python -m evals.debian_docs.build_corpus [OUT]      # default: build/debian-docs

Downloads five documentation packages with `apt-get download` (no root needed for the download
itself; nothing is installed), unpacks them with `dpkg-deb -x` and copies a fixed selection of
their pages into OUT, one folder per product — so a document's id is `PRODUCT/PATH` and the
product is the first part of every id. The selection is a list of patterns per product, not a
sample, so the same package versions give the same files. The versions used are written to
OUT/VERSIONS.txt; the answer set (`questions.jsonl`, `intents.jsonl`) was written against the
versions in `evals/debian_docs/VERSIONS.txt`, and the script says when they differ.

The products share words on purpose: SQLite and PostgreSQL (transactions, vacuum, locks, WAL),
Python and Tcl (threads, sockets, regular expressions, Tk), and Apache httpd (timeouts, logs,
modules), so a question about one is easily answered from another's page.
"""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Product:
    """One product: its package, the folder inside the package, the patterns of the pages kept
    (relative to that folder) and the patterns left out."""

    name: str
    package: str
    root: str
    keep: tuple[str, ...]
    drop: tuple[str, ...] = ()
    rename: tuple[tuple[str, str], ...] = ()  # suffixes changed on copy


PYTHON_MODULES = (
    "sqlite3 threading _thread multiprocessing concurrent.futures queue socket socketserver ssl select "
    "selectors asyncio-task asyncio-sync asyncio-stream asyncio-eventloop asyncio-subprocess subprocess "
    "signal re json csv zlib gzip bz2 lzma zipfile tarfile logging logging.handlers logging.config "
    "time datetime calendar http.server http.client urllib.request urllib.parse tkinter tkinter.ttk "
    "tempfile shutil os.path pathlib hashlib hmac secrets random statistics decimal dbm shelve pickle "
    "configparser argparse locale gettext unittest timeit"
).split()

PRODUCTS = (
    Product(
        "sqlite",
        "sqlite3-doc",
        "usr/share/doc/sqlite3",
        keep=("*.html",),
        drop=(
            "*/*",
            "index.html",
            "toc.html",
            "sitemap.html",
            "docs.html",
            "changes.html",
            "chronology.html",
            "doclist.html",
            "keyword_index.html",
            "news.html",
            "oldnews.html",
            "support.html",
            "prosupport.html",
            "download.html",
            "mostdeployed.html",
            "famous.html",
            "copyright.html",
            "crew.html",
        ),
    ),
    Product(
        "postgresql",
        "postgresql-doc-15",
        "usr/share/doc/postgresql-doc-15/html",
        keep=(
            "runtime-config-*.html",
            "sql-*.html",
            "app-*.html",
            "routine-vacuuming.html",
            "mvcc*.html",
            "wal-*.html",
            "explicit-locking.html",
            "transaction-iso.html",
            "datatype-*.html",
        ),
        drop=("sql-commands.html", "*-dl-*"),
    ),
    Product(
        "apache",
        "apache2-doc",
        "usr/share/doc/apache2-doc/manual/en",
        keep=("mod/*.html", "programs/*.html", "*.html", "howto/*.html"),
        drop=(
            "index.html",
            "sitemap.html",
            "mod/index.html",
            "mod/quickreference.html",
            "mod/directives.html",
            "programs/index.html",
            "howto/index.html",
            "glossary.html",
        ),
    ),
    Product(
        "python",
        "python3.11-doc",
        "usr/share/doc/python3.11/html/library",
        keep=tuple(f"{m}.html" for m in PYTHON_MODULES),
    ),
    Product(
        "tcl",
        "tcl8.6-doc",
        "usr/share/man/man3",
        # The script-level commands (lower-case names); the C API pages (Tcl_*) are left out.
        keep=("[a-z]*.3tcl.gz",),
        drop=("tcltest.3tcl.gz",),
    ),
)


def fetch_packages(work: Path) -> dict[str, str]:
    """Download and unpack each product's package into `work`; {package: version}."""
    packages = [p.package for p in PRODUCTS]
    subprocess.run(["apt-get", "download", *packages], cwd=work, check=True, capture_output=True)
    versions: dict[str, str] = {}
    for deb in sorted(work.glob("*.deb")):
        package, version = deb.name.split("_")[:2]
        subprocess.run(["dpkg-deb", "-x", str(deb), str(work / package)], check=True)
        versions[package] = version
    return versions


def selected(product: Product, root: Path) -> list[Path]:
    """The product's pages under `root`: regular files (not links) matching `keep`, not `drop`."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or not path.is_file():
            continue
        if any(fnmatch.fnmatchcase(rel, k) for k in product.keep) and not any(
            fnmatch.fnmatchcase(rel, d) for d in product.drop
        ):
            out.append(path)
    return out


def build(out: Path, work: Path) -> dict[str, int]:
    """Fill `out` with the selection; {product: files}."""
    versions = fetch_packages(work)
    if out.exists():
        shutil.rmtree(out)
    counts: dict[str, int] = {}
    for product in PRODUCTS:
        root = work / product.package / product.root
        files = selected(product, root)
        for path in files:
            target = out / product.name / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        counts[product.name] = len(files)
    (out / "VERSIONS.txt").write_text("".join(f"{p} {v}\n" for p, v in sorted(versions.items())))
    return counts


def main(argv: list[str]) -> int:
    out = Path(argv[0] if argv else "build/debian-docs").resolve()
    with tempfile.TemporaryDirectory() as tmp:
        counts = build(out, Path(tmp))
    for name, n in counts.items():
        print(f"{name}: {n} files")
    print(f"{sum(counts.values())} files in {out}")
    wanted, got = HERE / "VERSIONS.txt", out / "VERSIONS.txt"
    if wanted.is_file() and wanted.read_text() != got.read_text():
        print(f"note: package versions differ from {wanted} (the answers were written against those)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
