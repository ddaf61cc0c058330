#!/usr/bin/env bash
# Package the krew plugin: dist/kubectl-vllm_check.tar.gz (reproducible: fixed order, owner, time and
# no gzip timestamp, so the same sources give the same sha256) and plugins/vllm-check.yaml with its
# sha256. PLUGIN_URI (default the archive's path in this repository) is where the archive is served;
# install from a checkout with
#   kubectl krew install --manifest=plugins/vllm-check.yaml --archive=dist/kubectl-vllm_check.tar.gz
# CHECK=1 builds into DIST (default <repo>/dist) and only compares: exit 1 when the committed
# manifest's sha256 is not the archive's (tests/test_distribution.py runs it so).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dist="${DIST:-$root/dist}"
archive="$dist/kubectl-vllm_check.tar.gz"
mkdir -p "$dist"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --mode=u+rwX,go+rX,go-w \
  -C "$root" -cf - plugins/kubectl-vllm_check | gzip -n -9 > "$archive"
sha="$(sha256sum "$archive" | cut -d' ' -f1)"
if [[ "${CHECK:-0}" == 1 ]]; then
  committed="$(sed -n 's/^ *sha256: *//p' "$root/plugins/vllm-check.yaml")"
  [[ "$committed" == "$sha" ]] || { echo "plugins/vllm-check.yaml says sha256 $committed, the archive is $sha: run bash plugins/package.sh" >&2; exit 1; }
  echo "$archive $sha"
  exit 0
fi
uri="${PLUGIN_URI:-dist/kubectl-vllm_check.tar.gz}"
python3 - "$root/plugins/vllm-check.yaml" "$sha" "$uri" <<'PY'
import re, sys
path, sha, uri = sys.argv[1:]
text = open(path).read()
text = re.sub(r"(?m)^(\s*sha256: ).*$", rf"\g<1>{sha}", text)
text = re.sub(r"(?m)^(\s*uri: ).*$", rf"\g<1>{uri}", text)
open(path, "w").write(text)
PY
echo "$archive $sha"
