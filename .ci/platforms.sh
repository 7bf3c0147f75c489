#!/usr/bin/env bash
# The platform suites and the compatibility matrix, on the tarball .ci/run packed ($TARBALL),
# each from its own install folder outside the repo. Run by .ci/run in the background.
set -uo pipefail
cd "$(dirname "$0")/.."
# nestjs-payments/vendure on a real Vendure 3.7 (sql.js and PostgreSQL): about 3 minutes.
vendure=0
VENDURE_TARBALL="$TARBALL" bash test/platforms/vendure/run.sh || vendure=$?
# The compatibility matrix (it builds dist/ again, which Jest does not read).
compat=0
if [ -f test/compat/run.sh ]; then npm run test:compat || compat=$?; fi
# The Medusa provider on Medusa's own harness (module and application runners, PostgreSQL):
# 2 to 3 min to install Medusa 2.21, about 5 min of tests. Its restart test starts whole Medusa
# servers: with WAIT_FOR_JEST (set by .ci/run) its tests, not its install, wait for Jest's
# timing-sensitive tests to end rather than take the cores from them (.ci/run marks the end with
# .ci/jest-done).
medusa=0
wait_for=""
if [ -n "${WAIT_FOR_JEST:-}" ]; then wait_for="$PWD/.ci/jest-done"; fi
MEDUSA_TARBALL="$TARBALL" MEDUSA_WAIT_FOR="$wait_for" bash test/platforms/medusa/run.sh || medusa=$?
exit $((vendure || medusa || compat))
