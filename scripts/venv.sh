# Sourced by scripts/test and scripts/demo: make $VENV with $PYTHON, again when it was made by another Python
# (another implementation, installation or version) or is broken.
PYTHON=${PYTHON:-python3}
VENV=${VENV:-.venv}
who='import sys; print(sys.implementation.name, sys.base_prefix, *sys.version_info[:3])'
want=$("$PYTHON" -c "$who")
have=$("$VENV/bin/python" -c "$who" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  [ -e "$VENV" ] && echo "recreating $VENV: it was made by ${have:-a Python that no longer runs}, not $want" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
fi
