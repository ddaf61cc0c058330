#!/usr/bin/env bash
# The repository stands alone: clone it into an empty temporary folder (nothing beside the clone),
# make a fresh virtual environment there, and run the README's Quickstart commands as a new user
# would, each in turn, in the clone. Exits non-zero when any of them fails.
#
# The commands are read from the README's Quickstart block, so this checks what the README says
# today. It clones the committed HEAD of the repository it lives in (uncommitted changes are not
# part of a clone).
#
# Environment:
#   VENV_DIR   where to make the virtual environment (default: inside the temporary folder); CI sets
#              it to keep the environment for the steps after this one (ruff)
#   KEEP=1     keep the temporary folder (its path is printed)
set -euo pipefail

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/vllm-configurator-fresh.XXXXXX")"
if [[ "${KEEP:-0}" != 1 ]]; then
  trap 'rm -rf "$work"' EXIT
fi
clone="$work/vllm-configurator"
venv="${VENV_DIR:-$work/venv}"

echo "fresh-clone-check: cloning $src (HEAD $(git -C "$src" rev-parse --short HEAD)) into $clone"
git clone --quiet --no-hardlinks "$src" "$clone"
# nothing beside the clone: the folder it sits in holds only the clone (and the venv, when inside it)
extra="$(find "$work" -mindepth 1 -maxdepth 1 ! -name vllm-configurator ! -name venv)"
[[ -z "$extra" ]] || { echo "fresh-clone-check: unexpected files beside the clone: $extra" >&2; exit 1; }

rm -rf "$venv"
python3 -m venv "$venv"
# shellcheck disable=SC1091
. "$venv/bin/activate"
python -m pip install -q --upgrade pip

# the README's Quickstart: the commands in the first fenced block after the heading
mapfile -t commands < <(python - "$clone/README.md" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"^#+\s*Quick\s*start.*?```[a-z]*\n(.*?)```", text, re.S | re.M | re.I)
if not m:
    sys.exit("fresh-clone-check: the README has no Quickstart block")
for line in m.group(1).splitlines():
    if line.strip() and not line.lstrip().startswith("#"):
        print(line.strip())
PY
)
[[ ${#commands[@]} -eq 2 ]] || { echo "fresh-clone-check: the Quickstart must hold two commands, found ${#commands[@]}" >&2; exit 1; }

cd "$clone"
for i in "${!commands[@]}"; do
  echo "fresh-clone-check: [$((i + 1))/${#commands[@]}] \$ ${commands[$i]}"
  bash -euo pipefail -c "${commands[$i]}"
done
echo "fresh-clone-check: both Quickstart commands passed in a fresh clone with nothing beside it"
