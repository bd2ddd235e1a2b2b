#!/usr/bin/env bash
# scripts/release_test.sh — the test of scripts/release.sh, run by
# scripts/test.sh: six archives whose SHA256SUMS `sha256sum -c` accepts, a
# zip for each Windows target, LICENSE and docs/ in each, the host's binary stamped with the commit,
# and a second build of the host's archive identical byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "release_test: FAIL: $*" >&2; exit 1; }
for tool in git tar gzip zip unzip sha256sum cmp; do
	command -v "$tool" >/dev/null || fail "$tool is required"
done

start=$(date +%s)
scripts/release.sh --out "$tmp/a" >"$tmp/log" || { cat "$tmp/log" >&2; fail "release.sh failed"; }
echo "release_test: six targets built and archived in $(($(date +%s) - start))s"

n=$(find "$tmp/a" -name 'mcp-bridge_*.tar.gz' -o -name 'mcp-bridge_*.zip' | wc -l)
[ "$n" -eq 6 ] || fail "want 6 archives, got $n: $(ls "$tmp/a")"
[ "$(wc -l <"$tmp/a/SHA256SUMS")" -eq 6 ] || fail "SHA256SUMS does not list 6 files"
(cd "$tmp/a" && sha256sum -c --quiet SHA256SUMS) || fail "sha256sum -c rejected SHA256SUMS"
for arch in amd64 arm64; do
	# (the listing is read whole: grep -q quitting early would fail the pipe)
	names=$(unzip -Z1 "$tmp"/a/mcp-bridge_*_windows_$arch.zip)
	grep -q '/mcp-bridge\.exe$' <<<"$names" || fail "the windows/$arch zip holds no mcp-bridge.exe"
done

for f in LICENSE README.md docs/README.md docs/platforms.md docs/auth.md; do
	grep -q "/$f\$" <<<"$names" || fail "the windows/arm64 zip holds no $f"
done

host=$(go env GOOS)_$(go env GOARCH)
archive=$(basename "$tmp"/a/mcp-bridge_*_"$host".tar.gz)
tar -C "$tmp" -xzf "$tmp/a/$archive"
for f in LICENSE README.md docs/README.md docs/platforms.md docs/auth.md; do
	[ -f "$tmp/${archive%.tar.gz}/$f" ] || fail "$archive holds no $f"
done
line=$("$tmp/${archive%.tar.gz}/mcp-bridge" version)
echo "release_test: $line"
case $line in
*"(commit $(git rev-parse HEAD)"*) ;;
*) fail "the version line does not name commit $(git rev-parse HEAD)" ;;
esac

scripts/release.sh --out "$tmp/b" --targets "$(go env GOOS)/$(go env GOARCH)" >/dev/null
cmp -s "$tmp/a/$archive" "$tmp/b/$archive" || fail "a second build of $archive differs: not reproducible"
echo "release_test: ok ($(($(date +%s) - start))s)"
