#!/usr/bin/env bash
# The Medusa provider on Medusa's own test harness, run by .ci/run (bash test/platforms/medusa/run.sh).
#
# Builds and packs the package as published, installs the tarball with Medusa 2.21 (this folder's
# package.json) into a folder outside the repo (Node looks for packages in every parent directory:
# inside the repo, the repo's own node_modules would stand in for what the install lacks, as
# test/compat/run.sh explains), then runs this folder's tests/ there with Jest:
# moduleIntegrationTestRunner and medusaIntegrationTestRunner against the PostgreSQL on
# 127.0.0.1:5432 (user postgres, trust auth; each test file creates and drops its own database).
# Prints `medusa: N passed, M failed` last; exits non-zero if anything failed.
#
# Settings (environment): MEDUSA_TESTS_ROOT picks the install folder (default: a fixed folder
# under $TMPDIR or /tmp, reused by the next run so that a second install is quick);
# MEDUSA_TARBALL=<path> installs that tarball (no build, no pack); MEDUSA_WAIT_FOR=<file> holds the
# tests (not the install) until that file exists; MEDUSA_SKIP_BUILD=1 packs the
# dist/ already built; DB_HOST / DB_PORT / DB_USERNAME as Medusa's
# test-utils read them.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
STARTED=$SECONDS

die() {
  echo "medusa: $*" >&2
  echo "medusa: 0 passed, 1 failed"
  exit 1
}

# npm run hands its own project's context down; none of it may reach the install's npm and node.
clean_path=""
IFS=: read -r -a path_parts <<<"$PATH"
for part in "${path_parts[@]}"; do
  case "$part" in */node_modules/.bin | *node-gyp-bin*) ;; *) clean_path="${clean_path:+$clean_path:}$part" ;; esac
done
export PATH="$clean_path"
while IFS= read -r var; do
  case "$var" in npm_package_* | npm_lifecycle_* | npm_config_local_prefix | npm_command | npm_config_call | INIT_CWD) unset "$var" ;; esac
done < <(compgen -e)

DEST="${MEDUSA_TESTS_ROOT:-${TMPDIR:-/tmp}/nestjs-payments-medusa-tests}"
case "$DEST" in "$ROOT"/*) die "MEDUSA_TESTS_ROOT must be outside the repo" ;; esac
mkdir -p "$DEST" || die "cannot create $DEST"
dir="$DEST"
while [ "$dir" != / ]; do
  dir="$(dirname "$dir")"
  [ -e "$dir/node_modules" ] && die "$dir has a node_modules, which the install would see: set MEDUSA_TESTS_ROOT"
done

if ! (exec 3<>"/dev/tcp/${DB_HOST:-127.0.0.1}/${DB_PORT:-5432}") 2>/dev/null; then
  [ -n "${CI:-}" ] && die "PostgreSQL is not reachable on ${DB_HOST:-127.0.0.1}:${DB_PORT:-5432}"
  echo "medusa: skipped (PostgreSQL is not reachable on ${DB_HOST:-127.0.0.1}:${DB_PORT:-5432})"
  exit 0
fi

cd "$ROOT" || die "no repo at $ROOT"
if [ -n "${MEDUSA_TARBALL:-}" ]; then
  cp "$MEDUSA_TARBALL" "$DEST/nestjs-payments.tgz" || die "no tarball at $MEDUSA_TARBALL"
else
  if [ "${MEDUSA_SKIP_BUILD:-}" != 1 ]; then
    npm run build >"$DEST/build.log" 2>&1 || { tail -n 30 "$DEST/build.log"; die "npm run build failed"; }
  fi
  rm -f "$DEST"/nestjs-payments-*.tgz
  npm pack --pack-destination "$DEST" >"$DEST/pack.log" 2>&1 || { tail -n 30 "$DEST/pack.log"; die "npm pack failed"; }
  mv "$DEST"/nestjs-payments-*.tgz "$DEST/nestjs-payments.tgz"
fi

# Without Medusa (the repo has none), the entry fails at once, in one line naming the platform.
expected="nestjs-payments/medusa needs @medusajs/framework, not installed: npm install @medusajs/framework"
peer_check=0
for type in commonjs module; do
  if [ "$type" = commonjs ]; then load="require('./dist/medusa/index.cjs')"; else load="await import('./dist/medusa/index.mjs')"; fi
  said="$(node --input-type="$type" -e "try { ${load}; console.log('loaded') } catch (e) { console.log(e.message) }" 2>&1)"
  if [ "$said" = "$expected" ]; then
    peer_check=$((peer_check + 1))
  else
    echo "medusa: without Medusa, ${load} said: $said"
  fi
done
[ -e "$ROOT/node_modules/@medusajs/framework" ] && echo "medusa: the repo has @medusajs/framework: the missing-platform check proves nothing" && peer_check=0

cp "$HERE/package.json" "$DEST/package.json"
rm -rf "$DEST/tests" "$DEST/docs" "$DEST/app" && cp -r "$HERE/tests" "$DEST/tests"
mkdir -p "$DEST/docs" && cp "$ROOT/docs/medusa.md" "$DEST/docs/medusa.md"
cd "$DEST" || die "cannot enter $DEST"
install_started=$SECONDS
# The tarball's integrity changes with every build: drop it from the lock so npm takes the new one.
rm -f package-lock.json
rm -rf node_modules/nestjs-payments
npm install --no-audit --no-fund --loglevel=error >"$DEST/install.log" 2>&1 || { tail -n 30 "$DEST/install.log"; die "npm install failed (log: $DEST/install.log)"; }
echo "medusa: installed in $((SECONDS - install_started)) s ($(du -sh node_modules | cut -f1)) in $DEST"

# MEDUSA_WAIT_FOR=<file>: the tests (whole Medusa servers) wait for that file to exist; the install
# above does not (.ci/run lets Jest's timing-sensitive tests end first).
if [ -n "${MEDUSA_WAIT_FOR:-}" ]; then
  waited=$SECONDS
  while [ ! -f "$MEDUSA_WAIT_FOR" ]; do sleep 5; done
  echo "medusa: waited $((SECONDS - waited)) s for $MEDUSA_WAIT_FOR"
fi
test_started=$SECONDS
export NODE_OPTIONS="--experimental-vm-modules${NODE_OPTIONS:+ $NODE_OPTIONS}"
# Medusa's app runner turns SSL on for a database URL without "localhost" in it.
export DB_HOST="${DB_HOST:-localhost}" DB_USERNAME="${DB_USERNAME:-postgres}" MEDUSA_DISABLE_TELEMETRY=true
# Its two files side by side (a database, a sandbox and ports of their own each; the module runner's
# file takes no fixed port): a worker each.
node node_modules/jest/bin/jest.js --maxWorkers=2 --json --outputFile="$DEST/results.json" 2>&1 | tail -n 60
node -e '
  const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
  const peers = Number(process.argv[4]);
  console.log(`medusa: tests took ${process.argv[2]} s, ${process.argv[3]} s in all`);
  const passed = r.numPassedTests + peers, failed = r.numFailedTests + 2 - peers;
  console.log(`medusa: ${passed} passed, ${failed} failed${r.numPendingTests ? `, ${r.numPendingTests} skipped` : ""}`);
  process.exit(r.success && failed === 0 && r.numPassedTests > 0 ? 0 : 1);
' "$DEST/results.json" "$((SECONDS - test_started))" "$((SECONDS - STARTED))" "$peer_check"
