#!/usr/bin/env bash
# Checks the package as it would be published (`npm run check:package`; CI runs it after the
# build): packs dist/ with npm pack, then on that very tarball
#   - @arethetypeswrong/cli (attw), strict profile: every subpath resolves, with types matching the
#     JavaScript Node loads, under TypeScript's node10 (typesVersions), node16 from CommonJS and
#     from ESM, and bundler modes; no rule is ignored;
#   - publint --strict: package.json fields, exports and files agree with the tarball's content;
# and finally `npm publish --dry-run`. Fails on any problem either tool reports.
# Expects a build in dist/ (`npm run build`); builds one if there is none.
set -euo pipefail
cd "$(dirname "$0")/.."

[ -f dist/index.cjs ] || npm run build
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
npm pack --silent --pack-destination "$out" >/dev/null
tarball="$(ls "$out"/*.tgz)"

echo "check-package: attw $(basename "$tarball")"
node_modules/.bin/attw "$tarball" --profile strict --format table-flipped

echo "check-package: publint $(basename "$tarball")"
# No colours (picocolors turns them on when CI is set), so the verdict line can be matched.
publint_out="$(NO_COLOR=1 node_modules/.bin/publint run "$tarball" --strict 2>&1)" || { echo "$publint_out"; exit 1; }
echo "$publint_out"
# publint exits 0 on suggestions; they are problems here too.
sed 's/\x1b\[[0-9;]*m//g' <<<"$publint_out" | grep -q '^All good!$' || { echo "check-package: publint has suggestions (above)"; exit 1; }

echo "check-package: npm publish --dry-run"
npm publish --dry-run >"$out/publish.log" 2>&1 || { cat "$out/publish.log"; exit 1; }
tail -n 1 "$out/publish.log"
