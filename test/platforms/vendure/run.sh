#!/usr/bin/env bash
# nestjs-payments/vendure on a real Vendure 3.7 (Nest 11): builds and packs the package, installs
# the tarball with @vendure/core and @vendure/testing in a directory OUTSIDE the repo (Node looks
# for packages in every parent directory: inside the repo, Vendure would pick up the repo's Nest 12
# for whatever it lacks; see test/compat/run.sh), then runs test/*.test.mjs on sql.js, on
# PostgreSQL on 127.0.0.1:5432 (Vendure's PostgresInitializer drops and creates its own database,
# named after the file creating the environment) and on MariaDB on 127.0.0.1:3306 (root, no
# password; a database per file and run, named with VENDURE_RUN_ID, dropped at the end). A
# server that does not answer is skipped with a line, unless CI is set.
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
export VENDURE_RUN_ID="r$$"
# The run's MariaDB databases (e2e_<file>_<run id>), dropped with the folder.
drop_mariadb() {
  [ -d "$DIR/node_modules/mysql2" ] || return 0
  (cd "$DIR" && node --input-type=module -e '
    import mysql from "mysql2/promise";
    const c = await mysql.createConnection({ host: "127.0.0.1", port: 3306, user: "root" });
    const [rows] = await c.query("SHOW DATABASES LIKE ?", [`e2e\\_%\\_${process.env.VENDURE_RUN_ID}`]);
    for (const row of rows) await c.query(`DROP DATABASE \`${Object.values(row)[0]}\``);
    await c.end();
  ' 2>/dev/null) || true
}
trap 'drop_mariadb; rm -rf "$DIR"' EXIT

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
for db in ${VENDURE_DBS:-sqljs postgres mariadb}; do
  case "$db" in postgres) server=PostgreSQL db_port=5432 ;; mariadb) server=MariaDB db_port=3306 ;; *) server="" ;; esac
  if [ -n "$server" ] && ! (exec 3<>"/dev/tcp/127.0.0.1/$db_port") 2>/dev/null; then
    [ -n "${CI:-}" ] && { echo "vendure: no $server on 127.0.0.1:$db_port (CI is set: failing)"; status=1; continue; }
    echo "vendure: $server tests skipped: no server on 127.0.0.1:$db_port"
    continue
  fi
  t=$SECONDS
  files="test/${VENDURE_TESTS:-*}.test.mjs"
  # MariaDB runs the files whose outcome rests on what differs between databases (transactions and
  # row locks, the order's transitions and Payments written, a restart's state); the channels'
  # accounts, the emails, the merchant's subscribers and the request hook write nothing that
  # differs, and run on sql.js and PostgreSQL. VENDURE_MARIADB_ALL=1 runs every file on MariaDB too.
  if [ "$db" = mariadb ] && [ -z "${VENDURE_TESTS:-}" ] && [ "${VENDURE_MARIADB_ALL:-}" != 1 ]; then
    files="test/checkout.test.mjs test/crash.test.mjs test/exactly-once.test.mjs test/operations.test.mjs test/restart.test.mjs"
  fi
  # shellcheck disable=SC2086 # the list is words of file names
  if (cd "$DIR" && VENDURE_DB="$db" node --test --test-concurrency=1 $files >"$DIR/test-$db.log" 2>&1); then
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
