#!/usr/bin/env bash
# The platform suites and the compatibility matrix, on the tarball .ci/run packed ($TARBALL),
# each from its own install folder outside the repo. Run by .ci/run in the background.
set -uo pipefail
cd "$(dirname "$0")/.."
# Seconds since .ci/run started (CI_STARTED), or since this script did.
CI_STARTED="${CI_STARTED:-$(date +%s)}"
stamp() { echo "platforms: $1 at $(($(date +%s) - CI_STARTED)) s"; }
# The Medusa provider on Medusa's own harness (module and application runners, PostgreSQL): its
# install (2 min) starts now, beside Vendure's, and its two test files wait for their moment: its
# restart test starts whole Medusa servers, so with WAIT_FOR_JEST (set by .ci/run) they wait until
# Jest is down to its last file rather than take the cores from Jest's timing-sensitive tests
# (.ci/run's tail reporter marks that moment with .ci/jest-tail). Its output is printed at the end.
stamp "medusa (install now, tests after Jest) and vendure"
wait_for=""
if [ -n "${WAIT_FOR_JEST:-}" ]; then wait_for="$PWD/.ci/jest-tail"; fi
MEDUSA_TARBALL="$TARBALL" MEDUSA_WAIT_FOR="$wait_for" bash test/platforms/medusa/run.sh >.ci/medusa.log 2>&1 &
medusa_pid=$!
# nestjs-payments/vendure on a real Vendure 3.7 (sql.js, PostgreSQL, MariaDB).
vendure=0
VENDURE_TARBALL="$TARBALL" bash test/platforms/vendure/run.sh || vendure=$?
# The tarball as published (from the dist/ .ci/run built, which nothing rebuilds): attw (types in
# node10, node16 CJS and ESM, bundler, for every subpath), publint, npm publish --dry-run; no
# problem allowed. Beside the compatibility matrix, on the same tarball.
stamp "compatibility matrix and the package check"
bash scripts/check-package.sh >.ci/check-package.log 2>&1 &
check_package=$!
compat=0
if [ -f test/compat/run.sh ]; then COMPAT_TARBALL="$TARBALL" npm run test:compat || compat=$?; fi
package=0
wait "$check_package" || package=$?
cat .ci/check-package.log
[ "$package" -eq 0 ] || echo "check-package: failed (exit $package)"
stamp "waiting for medusa"
medusa=0
wait "$medusa_pid" || medusa=$?
cat .ci/medusa.log
stamp "done"
exit $((vendure || medusa || compat || package))
