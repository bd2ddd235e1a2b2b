#!/usr/bin/env bash
# scripts/release.sh — release archives of mcp-bridge for every platform.
#
#   scripts/release.sh [--out DIR] [--targets "OS/ARCH ..."]
#
# Builds cmd/mcp-bridge with CGO_ENABLED=0 (a static binary, no libc) for
# linux, darwin and windows on amd64 and arm64, and writes to DIR (default
# dist/):
#   mcp-bridge_VERSION_OS_ARCH.tar.gz   (.zip for windows)
#   SHA256SUMS                          (check with: sha256sum -c SHA256SUMS)
# Each archive holds one directory with the binary, README.md, LICENSE and
# docs/ (every page the README links to).
#
# VERSION is the tag at HEAD, else `git describe --tags --always --dirty`;
# the binary's `mcp-bridge version` prints it with the commit and the Go
# version. Builds are reproducible: the same commit and Go version give the
# same bytes (-trimpath, no VCS stamping but the explicit -X values,
# archive entries sorted, owned by 0 and dated at the commit time).
# Needs git, GNU tar, gzip, zip and sha256sum (or shasum).
set -euo pipefail
cd "$(dirname "$0")/.."

out=dist
targets="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
while [ $# -gt 0 ]; do
	case $1 in
	--out) out=${2:?--out needs a directory}; shift 2 ;;
	--out=*) out=${1#--out=}; shift ;;
	--targets) targets=${2:?--targets needs a list}; shift 2 ;;
	-h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "scripts/release.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done

version=$(git describe --tags --exact-match 2>/dev/null || git describe --tags --always --dirty)
commit=$(git rev-parse HEAD)
epoch=$(git log -1 --format=%ct)
sum() { if command -v sha256sum >/dev/null; then sha256sum "$@"; else shasum -a 256 "$@"; fi; }

mkdir -p "$out"
out=$(cd "$out" && pwd)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

archives=()
for t in $targets; do
	goos=${t%/*} goarch=${t#*/}
	name=mcp-bridge_${version}_${goos}_${goarch}
	dir=$stage/$name
	exe=mcp-bridge
	[ "$goos" = windows ] && exe=mcp-bridge.exe
	start=$(date +%s)
	CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.version=$version -X main.commit=$commit" \
		-o "$dir/$exe" ./cmd/mcp-bridge
	mkdir -p "$dir/docs"
	cp README.md LICENSE "$dir/"
	cp docs/*.md "$dir/docs/"
	find "$dir" -exec touch -h -d "@$epoch" {} +
	if [ "$goos" = windows ]; then
		archive=$name.zip
		rm -f "$out/$archive"
		# zip stores local times: UTC keeps them the same everywhere.
		(cd "$stage" && find "$name" | LC_ALL=C sort | TZ=UTC zip -X -q -@ "$out/$archive")
	else
		archive=$name.tar.gz
		tar -C "$stage" --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner \
			--format=ustar -cf - "$name" | gzip -n -9 >"$out/$archive"
	fi
	archives+=("$archive")
	echo "$archive ($(($(date +%s) - start))s)"
done

(cd "$out" && sum "${archives[@]}" >SHA256SUMS)
echo "$out/SHA256SUMS"
