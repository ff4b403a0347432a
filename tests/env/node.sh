#!/usr/bin/env bash
# tests/env/node.sh -- is there a Node.js the TypeScript example runs on?
# Prisma 7 needs Node.js 20.19 or later (and npm). Exits 0 when there is;
# otherwise prints why on stderr and exits 1. Installs nothing: Debian 12's
# own nodejs is 18, too old, and no other source of Node.js is reachable
# from a plain build machine; make check then skips the examples' test
# (t470) with this reason, and make demo leaves the TypeScript pair out.
set -euo pipefail
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "Node.js and npm not found (the TypeScript example needs Node.js >= 20.19)" >&2
	exit 1
fi
v=$(node -p 'process.versions.node')
IFS=. read -r major minor _ <<<"$v"
if ((major < 20 || (major == 20 && minor < 19))); then
	echo "Node.js $v is too old (the TypeScript example needs >= 20.19: Prisma 7)" >&2
	exit 1
fi
