#!/usr/bin/env bash
# The platform suites and the compatibility matrix, on the tarball .ci/run packed ($TARBALL),
# each from its own install folder outside the repo. Run by .ci/run in the background.
set -uo pipefail
cd "$(dirname "$0")/.."
# Seconds since .ci/run started (CI_STARTED), or since this script did.
CI_STARTED="${CI_STARTED:-$(date +%s)}"
stamp() { echo "platforms: $1 at $(($(date +%s) - CI_STARTED)) s"; }
# nestjs-payments/vendure on a real Vendure 3.7 (sql.js and PostgreSQL): about 3 minutes.
stamp "vendure"
vendure=0
VENDURE_TARBALL="$TARBALL" bash test/platforms/vendure/run.sh || vendure=$?
# The compatibility matrix, on the same tarball.
stamp "compatibility matrix"
compat=0
if [ -f test/compat/run.sh ]; then COMPAT_TARBALL="$TARBALL" npm run test:compat || compat=$?; fi
stamp "medusa and the package check"
# The tarball as published (from the dist/ .ci/run built, which nothing rebuilds): attw (types in
# node10, node16 CJS and ESM, bundler, for every subpath), publint, npm publish --dry-run; no
# problem allowed. Beside Medusa's install.
bash scripts/check-package.sh >.ci/check-package.log 2>&1 &
check_package=$!
# The Medusa provider on Medusa's own harness (module and application runners, PostgreSQL):
# 2 to 3 min to install Medusa 2.21, then its two test files side by side. Its restart test starts
# whole Medusa servers: with WAIT_FOR_JEST (set by .ci/run) its tests, not its install, wait until
# Jest is down to its last file rather than take the cores from its timing-sensitive tests
# (.ci/run's tail reporter marks that moment with .ci/jest-tail).
medusa=0
wait_for=""
if [ -n "${WAIT_FOR_JEST:-}" ]; then wait_for="$PWD/.ci/jest-tail"; fi
MEDUSA_TARBALL="$TARBALL" MEDUSA_WAIT_FOR="$wait_for" bash test/platforms/medusa/run.sh || medusa=$?
stamp "medusa done"
package=0
wait "$check_package" || package=$?
cat .ci/check-package.log
[ "$package" -eq 0 ] || echo "check-package: failed (exit $package)"
stamp "done"
exit $((vendure || medusa || compat || package))
