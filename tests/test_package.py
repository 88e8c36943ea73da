"""The package's public names: imported lazily, each one resolving to the object its module defines."""

import importlib
import subprocess
import sys

import ntrace


def test_every_public_name_resolves_to_its_module_object() -> None:
    assert sorted(ntrace.__all__) == sorted(ntrace._SOURCES)
    for name in ntrace.__all__:
        assert getattr(ntrace, name) is getattr(importlib.import_module(ntrace._SOURCES[name]), name)
    assert set(ntrace.__all__) <= set(dir(ntrace))


def test_importing_the_cli_leaves_the_heavy_modules_unloaded() -> None:
    code = "import sys, ntrace.cli; print(sorted(m for m in ('ntrace.capture', 'ntrace.render.html', 'ntrace.decode') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_unknown_name_raises_attribute_error() -> None:
    try:
        ntrace.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "no_such_name" in str(exc)
    else:
        raise AssertionError("expected AttributeError")
