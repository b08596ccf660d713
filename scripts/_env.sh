# Shared by scripts/test, scripts/demo and scripts/bench: a project virtualenv
# in .venv with ikigai installed (editable) and the extras asked for.
# Re-installs only when pyproject.toml or the extras change.

pick_python() {
  for py in "${PYTHON:-}" python3.11 python3.12 python3.13 python3; do
    [ -n "$py" ] || continue
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
      echo "$py"; return 0
    fi
  done
  echo "ikigai needs Python 3.11 or newer; none found (set PYTHON=/path/to/python3.11)" >&2
  return 1
}

ensure_venv() {
  local extras=${1:-test}
  local py stamp want have_sum have_extras missing all e
  if [ ! -x .venv/bin/python ]; then
    py=$(pick_python) || exit 1
    echo "creating .venv with $py" >&2
    "$py" -m venv .venv || { echo "python -m venv failed: on Debian, apt-get install python3-venv" >&2; exit 1; }
  fi
  # the stamp holds pyproject's checksum and the extras installed with it; a
  # request for extras already there (test after test,bench) installs nothing
  stamp=.venv/.ikigai-installed
  want=$(cksum < pyproject.toml)
  have_sum="" have_extras=""
  if [ -f "$stamp" ]; then
    have_sum=$(sed -n 1p "$stamp")
    have_extras=$(sed -n 2p "$stamp")
  fi
  missing=""
  if [ "$have_sum" = "$want" ]; then
    for e in $(echo "$extras" | tr ',' ' '); do
      case ",$have_extras," in *",$e,"*) ;; *) missing="$missing $e" ;; esac
    done
  else
    missing=$extras
    have_extras=""
  fi
  if [ -n "$missing" ]; then
    all=$(printf '%s\n' $(echo "$have_extras,$extras" | tr ',' ' ') | sort -u | paste -sd, -)
    echo "installing ikigai[$all] into .venv" >&2
    .venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
    .venv/bin/python -m pip install -q -e ".[$all]"
    printf '%s\n%s\n' "$want" "$all" > "$stamp"
  fi
}
