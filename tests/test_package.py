"""The package's public API: exactly the pinned names, each imported lazily and resolving to the object its module defines, nothing else visible."""

import importlib
import importlib.resources
import os
import platform
import subprocess
import sys

import pytest

import ntrace

#: The public API. Changing it is a decision: this list, ntrace._PUBLIC and the README change together.
PUBLIC = {
    "load", "Profile", "Trace", "Summary", "OpView", "Part",
    "analyze", "Analysis", "compare", "diff", "convert", "ranks", "RankAnalysis",
    "report", "export_perfetto",
    "find_traces", "find_sessions", "read_neff", "lane_table",
    "profiling", "step", "capture_study",
    "NtraceError", "InputError", "TraceFormatError", "CaptureError", "OutputError",
}  # fmt: skip


def test_the_public_api_is_exactly_the_pinned_names() -> None:
    assert set(ntrace.__all__) == PUBLIC and ntrace.__all__ == sorted(ntrace._PUBLIC)
    assert dir(ntrace) == ntrace.__all__  # no helper (Any, TYPE_CHECKING, importlib) shows


def test_every_public_name_resolves_to_its_module_object() -> None:
    for name in ntrace.__all__:
        assert getattr(ntrace, name) is getattr(importlib.import_module(ntrace._PUBLIC[name]), name)
        assert getattr(ntrace, name).__doc__, f"{name} has no docstring"


def test_the_package_is_typed() -> None:
    assert (importlib.resources.files("ntrace") / "py.typed").is_file()


def test_importing_the_cli_leaves_the_heavy_modules_unloaded() -> None:
    code = "import sys, ntrace.cli; print(sorted(m for m in ('ntrace.capture', 'ntrace.render.html', 'ntrace.io.kineto', 'torch') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_name_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        ntrace.no_such_name  # noqa: B018


def _allocator_conf(code: str, env: dict[str, str]) -> str:
    full = {k: v for k, v in os.environ.items() if k != "_RJEM_MALLOC_CONF"} | env
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=full).stdout.strip()


def test_cli_returns_freed_memory_sooner_unless_the_user_chose() -> None:
    code = "import os, ntrace.cli, polars; print(os.environ['_RJEM_MALLOC_CONF'])"
    assert _allocator_conf(code, {}).endswith(",dirty_decay_ms:100,muzzy_decay_ms:0,oversize_threshold:65536")  # appended after Polars' defaults: it wins
    assert _allocator_conf(code, {"_RJEM_MALLOC_CONF": "narenas:1"}).endswith(",narenas:1")
    assert "dirty_decay_ms:100" not in _allocator_conf("import os, polars, ntrace; print(os.environ['_RJEM_MALLOC_CONF'])", {})


_MAPPED = """
import ctypes, os, sys
if sys.argv[1] == "cli":
    import ntrace.cli
libc = ctypes.CDLL(None)
libc.malloc.restype, libc.malloc.argtypes, libc.free.argtypes = ctypes.c_void_p, [ctypes.c_size_t], [ctypes.c_void_p]
libc.free(libc.malloc(30 << 20))  # freeing a mapped block raises glibc's own threshold to its size (up to 32 MiB)
block = libc.malloc(24 << 20)  # more than the heap has free: mapped, or the heap grows for it
print(bool(ctypes.c_size_t.from_address(block - 8).value & 2), os.environ.get("MALLOC_MMAP_THRESHOLD_"))  # the chunk header's IS_MMAPPED bit; the environment a workload inherits
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")
def test_cli_keeps_large_blocks_mapped_so_freeing_returns_them() -> None:
    """After the CLI's import a 24 MiB block is still mapped on its own once a 30 MiB one was freed (glibc alone grows its heap for it); the environment, which a captured workload inherits, is left alone."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    run = lambda *args: subprocess.run([sys.executable, "-c", _MAPPED, *args], capture_output=True, text=True, check=True, env=env).stdout.split()  # noqa: E731
    assert run("bare") == ["False", "None"]
    assert run("cli") == ["True", "None"]
