#!/usr/bin/env bash
# Runs the test suite (vitest) on another Node.js major, taken from the npm registry's `node` package (this
# machine has Node 20 only, and reaches no other download site). Usage: scripts/test-node.sh 22|24
#
# The suite runs in a copy of this checkout (node_modules included), so the checkout itself stays as it is
# for Node 20. In the copy, better-sqlite3 is 13.x: 12.x aborts the process at exit on Node 24 (its
# Statement destructor trips `RemoveEnvironmentCleanupHook`'s `env != nullptr` check), 13.x is built on
# Node-API with prebuilds in the package and needs Node >= 22, so users on 22+ get 13 and users on 20 get
# 12 (the peer range takes both). Lint, formatting and the type-check do not depend on the Node version
# and run once, in `npm test`.
set -euo pipefail
cd "$(dirname "$0")/.."

major="${1:?usage: scripts/test-node.sh 22|24}"
case "$major" in
  22) pkg='node@22.23.3' ;;
  24) pkg='node@24.21.0' ;;
  *) echo "scripts/test-node.sh: no pinned Node for major $major (22 or 24)" >&2; exit 2 ;;
esac
sqlite='better-sqlite3@13.2.0'

bin="$(npx -y -p "$pkg" node -p 'process.execPath')"
bindir="$(dirname "$bin")"
version="$("$bin" --version)"
case "$version" in
  "v$major".*) ;;
  *) echo "scripts/test-node.sh: $pkg gave $version" >&2; exit 1 ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/toolgate-node$major-XXXXXX")"
trap 'rm -rf "$work"' EXIT
tar --exclude=./.git --exclude=./test-results.json -cf - . | tar -xf - -C "$work"
cd "$work"
export PATH="$bindir:$PATH"
echo "Node $version (from $pkg) in $work"
npm install --no-save --no-audit --no-fund --ignore-scripts=false "$sqlite" >/dev/null
node -e "new (require('better-sqlite3'))(':memory:').close()"
npm run build >/dev/null
if [ -n "${CI:-}" ]; then
  npx vitest run --reporter=default --reporter=json --outputFile.json=test-results.json
  node -e '
    const r = JSON.parse(require("node:fs").readFileSync("test-results.json", "utf8"));
    console.log(`Node ${process.version}: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests} skipped`);
  '
else
  npx vitest run
fi
