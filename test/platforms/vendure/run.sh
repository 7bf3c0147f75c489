#!/usr/bin/env bash
# nestjs-payments/vendure on a real Vendure 3.7 (Nest 11): builds and packs the package, installs
# the tarball with @vendure/core and @vendure/testing in a directory OUTSIDE the repo (Node looks
# for packages in every parent directory: inside the repo, Vendure would pick up the repo's Nest 12
# for whatever it lacks; see test/compat/run.sh), then runs test/*.test.mjs on sql.js and on
# PostgreSQL on 127.0.0.1:5432 (Vendure's PostgresInitializer drops and creates its own database,
# named after the file creating the environment; skipped with a line when no server answers,
# unless CI is set). About 3 minutes: install 20-30 s, sql.js 60 s, PostgreSQL 90 s.
# Settings: VENDURE_TARBALL=<path> uses that tarball instead of building one; VENDURE_DBS="sqljs"
# runs one database only; VENDURE_TESTS=<name> runs test/<name>.test.mjs only.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
START=$SECONDS

# The same clean environment as the compatibility apps: nothing of npm's own project context.
while IFS= read -r var; do
  case "$var" in npm_package_* | npm_lifecycle_* | npm_config_local_prefix | npm_command | INIT_CWD) unset "$var" ;; esac
done < <(compgen -e)

DIR="$(mktemp -d "${TMPDIR:-/tmp}/nestjs-payments-vendure.XXXXXX")"
dir="$DIR"
while [ "$dir" != / ]; do
  dir="$(dirname "$dir")"
  [ -e "$dir/node_modules" ] && { echo "vendure: $dir/node_modules is above $DIR; set TMPDIR elsewhere" >&2; exit 1; }
done
trap 'rm -rf "$DIR"' EXIT

if [ -n "${VENDURE_TARBALL:-}" ]; then
  cp "$VENDURE_TARBALL" "$DIR/nestjs-payments.tgz"
else
  (cd "$ROOT" && npm run build >"$DIR/build.log" 2>&1) || { tail -n 30 "$DIR/build.log"; exit 1; }
  (cd "$ROOT" && npm pack --pack-destination "$DIR" >/dev/null 2>&1)
  mv "$DIR"/nestjs-payments-*.tgz "$DIR/nestjs-payments.tgz"
fi
cp -R "$HERE/package.json" "$HERE/test" "$HERE/fixtures" "$DIR/"
cp "$ROOT/docs/vendure.md" "$DIR/"

t=$SECONDS
(cd "$DIR" && npm install --no-audit --no-fund --prefer-offline >"$DIR/install.log" 2>&1) || { tail -n 30 "$DIR/install.log"; exit 1; }
echo "vendure: installed in $((SECONDS - t)) s ($(du -sm "$DIR/node_modules" | cut -f1) MB, $(ls "$DIR/node_modules" | wc -l) top-level packages)"

status=0
for db in ${VENDURE_DBS:-sqljs postgres}; do
  if [ "$db" = postgres ]; then
    if ! (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then
      [ -n "${CI:-}" ] && { echo "vendure: no PostgreSQL on 127.0.0.1:5432 (CI is set: failing)"; status=1; continue; }
      echo "vendure: PostgreSQL tests skipped: no server on 127.0.0.1:5432"
      continue
    fi
  fi
  t=$SECONDS
  if (cd "$DIR" && VENDURE_DB="$db" node --test --test-concurrency=1 test/${VENDURE_TESTS:-*}.test.mjs >"$DIR/test-$db.log" 2>&1); then
    echo "vendure ($db): $(grep -E '^# pass' "$DIR/test-$db.log" | cut -c3-) in $((SECONDS - t)) s"
  else
    status=1
    echo "vendure ($db): FAIL"
    grep -vE '^\s*(duration_ms|location|type):' "$DIR/test-$db.log" | tail -n 80
    echo "vendure ($db): failed:"
    grep -E -A14 '^\s*not ok' "$DIR/test-$db.log" | grep -E 'not ok|error:' | cut -c1-400
  fi
done
echo "vendure: $((SECONDS - START)) s in all"
exit $status
