#!/usr/bin/env bash
# Compatibility matrix, run by `npm run test:compat`.
#
# Builds and packs the package exactly as it would be published, then installs the tarball, with
# the framework versions each one targets from the npm registry, into:
#   - the apps of test/compat/apps/<name>/: small real projects that build (tsc), start a
#     PaymentsSandbox, take a payment through the plugin, receive its signed webhook, refund it,
#     and print `<name>: ok (...)`; the Nest ones with a src/ only get the shared scenario and
#     shop module of test/compat/shared/ copied into their src/; those with a test/ (Jest, Vitest)
#     get test/compat/shared/e2e/{src,test}/ copied into their src/ and test/;
#   - the type checks of test/compat/types/: every entry point under TypeScript moduleResolution
#     node16 (Nest 11), node20, nodenext and bundler, against the Nest 11 and the Nest 12 peers.
# One line per entry, then `compat: N passed, M failed`; exits non-zero if anything failed.
#
# Where things go: test/compat/.work/ (git-ignored) holds the tarball, one log per entry and a
# link `apps` to the directory the projects are installed in. That directory is outside the repo
# (under $TMPDIR, /tmp, /var/tmp or $HOME, whichever has no node_modules above it), because Node
# and TypeScript look for packages in every parent directory: inside the repo, a project would
# silently use the repo's own node_modules (Nest 12, Express 5...) for whatever it lacks.
# The installs are kept when something failed (to look at), removed when all passed.
#
# Settings (environment): COMPAT_ONLY="nest11-cjs types-nest12" runs only those entries (apps by
# name, types-nest11 / types-nest12); COMPAT_RUN_TIMEOUT (s, default 60) bounds each app's run (an
# app that needs longer says so in its package.json: "compat": { "runTimeout": <s> }, the larger wins);
# COMPAT_INSTALL_TIMEOUT (s, default 300) bounds each npm install; COMPAT_APPS_ROOT picks the
# parent directory of the installs; COMPAT_TARBALL names a tarball already packed from this
# checkout (CI's, packed once for every suite), installed instead of building and packing again.
set -uo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
WORK="$HERE/.work"
LOGS="$WORK/logs"
RUN_TIMEOUT="${COMPAT_RUN_TIMEOUT:-60}"
INSTALL_TIMEOUT="${COMPAT_INSTALL_TIMEOUT:-300}"
BUILD_TIMEOUT="${COMPAT_BUILD_TIMEOUT:-180}"
ONLY="${COMPAT_ONLY:-}"
TYPE_STACKS=(nest11 nest12)
# TypeScript module modes per stack. The package's code is CommonJS (see docs/module-formats.md):
# with Nest 12, whose packages are ES modules only, that takes Node >= 20.19 (require() of ES
# modules), which TypeScript models as `node20` (and `nodenext`); `node16` models older Nodes, so
# it rightly reports the Nest 12 imports of the package's .d.ts files (unless skipLibCheck).
# node10 (`module: commonjs`, as Nest 10 projects have it) ignores "exports": the subpaths resolve
# through "typesVersions".
declare -A TYPE_MODES=([nest11]="node10 node16 node20 nodenext bundler" [nest12]="node10 node20 nodenext bundler")
STARTED=$SECONDS

die() {
  echo "compat: $*" >&2
  echo "compat: 0 passed, 1 failed"
  exit 1
}

command -v timeout >/dev/null || die "needs 'timeout' (GNU coreutils)"

# When run through `npm run`, npm hands its own project's context down (its node_modules/.bin on
# PATH, npm_package_*, npm_config_local_prefix...). None of it may reach the projects' own npm and
# node runs: drop it. The user's npm settings (registry, cache...) stay.
clean_path=""
IFS=: read -r -a path_parts <<<"$PATH"
for part in "${path_parts[@]}"; do
  case "$part" in
    */node_modules/.bin | *node-gyp-bin*) ;;
    *) clean_path="${clean_path:+$clean_path:}$part" ;;
  esac
done
export PATH="$clean_path"
while IFS= read -r var; do
  case "$var" in
    npm_package_* | npm_lifecycle_* | npm_config_local_prefix | npm_command | npm_config_call | INIT_CWD) unset "$var" ;;
  esac
done < <(compgen -e)

wanted() { [ -z "$ONLY" ] || [[ " $ONLY " == *" $1 "* ]]; }

# A directory for the installs that has no node_modules in itself or any parent.
clean_ancestry() {
  local dir="$1"
  while :; do
    [ -e "$dir/node_modules" ] && return 1
    [ "$dir" = / ] && return 0
    dir="$(dirname "$dir")"
  done
}
pick_apps_root() {
  local base
  for base in ${COMPAT_APPS_ROOT:+"$COMPAT_APPS_ROOT"} "${TMPDIR:-/tmp}" /tmp /var/tmp "$HOME"; do
    [ -d "$base" ] && [ -w "$base" ] || continue
    base="$(cd "$base" && pwd -P)"
    if clean_ancestry "$base"; then
      mktemp -d "$base/nestjs-payments-compat.XXXXXX" && return 0
    fi
  done
  return 1
}

# Start afresh: drop the previous run's work dir and its installs.
if [ -L "$WORK/apps" ]; then
  previous="$(readlink "$WORK/apps")"
  case "$previous" in */nestjs-payments-compat.*) rm -rf "$previous" ;; esac
fi
rm -rf "$WORK"
mkdir -p "$LOGS"

# --- build and pack -----------------------------------------------------------------------------
cd "$ROOT" || die "no repo at $ROOT"
if [ ! -x node_modules/.bin/tsc ]; then
  # A clean clone run on its own (CI runs `npm ci` before). If the lock file cannot be installed
  # as is (npm ci refuses it), install from it without rewriting it.
  echo "compat: installing the repo's dependencies (npm ci)"
  if ! npm ci --no-audit --no-fund >"$LOGS/npm-ci.log" 2>&1; then
    echo "compat: npm ci failed (log: test/compat/.work/logs/npm-ci.log); trying npm install --no-save"
    npm install --no-save --no-audit --no-fund >"$LOGS/npm-install.log" 2>&1 ||
      { tail -n 30 "$LOGS/npm-install.log"; die "npm install failed (log: $LOGS/npm-install.log)"; }
  fi
fi
if [ -n "${COMPAT_TARBALL:-}" ]; then
  [ -f "$COMPAT_TARBALL" ] || die "COMPAT_TARBALL: no file at $COMPAT_TARBALL"
  echo "compat: installing $(basename "$COMPAT_TARBALL") (COMPAT_TARBALL)"
  cp "$COMPAT_TARBALL" "$WORK/"
  FIRST="the tarball given"
else
  echo "compat: building and packing nestjs-payments"
  npm run build >"$LOGS/build.log" 2>&1 || { tail -n 40 "$LOGS/build.log"; die "npm run build failed (log: $LOGS/build.log)"; }
  npm pack --pack-destination "$WORK" >"$LOGS/pack.log" 2>&1 || { tail -n 40 "$LOGS/pack.log"; die "npm pack failed (log: $LOGS/pack.log)"; }
  FIRST="build and pack first"
fi
shopt -s nullglob
tarballs=("$WORK"/nestjs-payments-*.tgz)
shopt -u nullglob
[ "${#tarballs[@]}" -eq 1 ] || die "expected one tarball in $WORK, found ${#tarballs[@]}"
VERSION="$(node -p 'require("./package.json").version')"

APPS="$(pick_apps_root)" || die "found no writable directory without a node_modules above it for the installs; set COMPAT_APPS_ROOT"
ln -s "$APPS" "$WORK/apps"
# Every project depends on "file:../nestjs-payments.tgz".
cp "${tarballs[0]}" "$APPS/nestjs-payments.tgz"
echo "compat: nestjs-payments $VERSION packed; projects installed in $APPS (linked as test/compat/.work/apps)"

# --- entries ------------------------------------------------------------------------------------
PASSED=0
FAILED=0
FAILURES=()
GUIDE="$ROOT/docs/testing.md"
declare -A RECIPE_APPS=() # recipe name -> the apps that ran it and passed

pass() {
  PASSED=$((PASSED + 1))
  echo "$1"
}
fail() { # name, reason, log
  FAILED=$((FAILED + 1))
  FAILURES+=("$1")
  echo "$1: FAIL ($2)"
  if [ -n "${3:-}" ] && [ -f "$3" ]; then
    echo "  --- last lines of $3 ---"
    tail -n 40 "$3" | grep -v "Unknown user config" | sed 's/^/  | /'
  fi
}

# step LOG SECONDS COMMAND...: runs COMMAND, output appended to LOG, killed (with its children)
# after SECONDS. Prints nothing; its status is the command's, 124 on a time-out.
step() {
  local log="$1" limit="$2"
  shift 2
  echo "\$ $*" >>"$log"
  timeout -k 5 "$limit" "$@" >>"$log" 2>&1
}
why() { # status, what, limit
  if [ "$1" -eq 124 ] || [ "$1" -eq 137 ]; then echo "$2 timed out after $3 s"; else echo "$2 exited with $1"; fi
}

# Every project installs through the user's npm cache (shared by all of them and by earlier runs);
# --prefer-offline takes package metadata from it when it has them instead of asking the registry
# again (COMPAT_NPM_ONLINE=1 asks every time).
NPM_INSTALL_FLAGS=(--no-audit --no-fund)
[ "${COMPAT_NPM_ONLINE:-}" = 1 ] || NPM_INSTALL_FLAGS+=(--prefer-offline)
npm_install() { # dir, log
  (cd "$1" && step "$2" "$INSTALL_TIMEOUT" npm install "${NPM_INSTALL_FLAGS[@]}")
}

run_app() {
  local name="$1" src="$HERE/apps/$1" dir="$APPS/$1" log="$LOGS/$1.log" status
  cp -RL "$src" "$dir" # -L: a linked file (express4/main.js) becomes a copy
  rm -rf "$dir/node_modules" "$dir/dist" "$dir/package-lock.json"
  # The TypeScript Nest apps share their scenario. Those with a test/ (e2e tests run by a test
  # runner) get test/compat/shared/e2e/{src,test}/*.ts in their src/ and test/; the others (with
  # a src/ only) get test/compat/shared/*.ts in their src/, beside their own main.ts. Never over a
  # file of the app.
  local pairs=() pair from to shared recipes prepare
  # Apps made by `nest new` (package.json "compat": { "recipes": [...] }) run the testing guide's
  # recipes instead, extracted from docs/testing.md now (never a copy kept in the app).
  recipes="$(node -p '(require(process.argv[1]).compat?.recipes ?? []).join(" ")' "$dir/package.json")"
  # An app with its own preparation (package.json "compat": { "prepare": "<script under test/compat>" })
  # gets what that script puts in it (nest11-inbox: the guide's inbox recipes), nothing shared.
  prepare="$(node -p 'require(process.argv[1]).compat?.prepare ?? ""' "$dir/package.json")"
  if [ -n "$prepare" ]; then
    node "$HERE/$prepare" "$ROOT" "$dir" >>"$log" 2>&1 || { fail "$name" "$prepare failed" "$log"; return; }
  elif [ -n "$recipes" ]; then
    # shellcheck disable=SC2086 # one word per recipe name
    node "$HERE/recipes.mjs" "$GUIDE" write "$dir" $recipes >>"$log" 2>&1 || { fail "$name" "cannot take its recipes ($recipes) from docs/testing.md" "$log"; return; }
    cp "$HERE/shared/recipes/compat-report.cjs" "$dir/"
  elif [ -d "$dir/test" ]; then
    pairs=("$HERE/shared/e2e/src:src" "$HERE/shared/e2e/test:test")
  elif [ -d "$dir/src" ]; then
    pairs=("$HERE/shared:src")
  fi
  for pair in "${pairs[@]}"; do
    from="${pair%:*}" to="${pair##*:}"
    for shared in "$from"/*.ts; do
      if [ -e "$dir/$to/${shared##*/}" ]; then
        fail "$name" "$to/${shared##*/} is also in ${from#"$HERE"/}/; one of them must go"
        return
      fi
      cp "$shared" "$dir/$to/"
    done
  done
  npm_install "$dir" "$log"
  status=$?
  [ $status -eq 0 ] || { fail "$name" "$(why $status "npm install" "$INSTALL_TIMEOUT")" "$log"; return; }
  if node -e 'process.exit(require(process.argv[1]).scripts?.build ? 0 : 1)' "$dir/package.json"; then
    (cd "$dir" && step "$log" "$BUILD_TIMEOUT" npm run build)
    status=$?
    [ $status -eq 0 ] || { fail "$name" "$(why $status "build" "$BUILD_TIMEOUT")" "$log"; return; }
  fi
  local out="$LOGS/$name.out" limit
  limit="$(node -p 'Math.max(Number(process.argv[2]), require(process.argv[1]).compat?.runTimeout ?? 0)' "$dir/package.json" "$RUN_TIMEOUT")"
  (cd "$dir" && echo "\$ npm run --silent check" >>"$log" && timeout -k 5 "$limit" npm run --silent check >"$out" 2>&1)
  status=$?
  cat "$out" >>"$log"
  local line
  line="$(grep -E "^$name: ok " "$out" | tail -n 1)"
  rm -f "$out"
  if [ $status -eq 0 ] && [ -n "$line" ]; then
    pass "$line"
    for recipe in $recipes; do RECIPE_APPS[$recipe]+="${RECIPE_APPS[$recipe]:+, }$name"; done
  elif [ $status -eq 0 ]; then
    fail "$name" "exited 0 without printing '$name: ok'" "$log"
  else
    fail "$name" "$(why $status "the app" "$limit")" "$log"
  fi
}

run_types() {
  local stack="$1" name="types-$1" dir="$APPS/types-$1" log="$LOGS/types-$1.log" status mode
  mkdir -p "$dir"
  local modes
  read -r -a modes <<<"${TYPE_MODES[$stack]}"
  cp "$HERE"/types/*.ts "$HERE"/types/*.cts "$HERE"/types/tsconfig.*.json "$dir/"
  cp "$HERE/types/$stack/package.json" "$dir/package.json"
  npm_install "$dir" "$log"
  status=$?
  if [ $status -ne 0 ]; then
    for mode in "${modes[@]}"; do fail "$name $mode" "$(why $status "npm install" "$INSTALL_TIMEOUT")" "$log"; done
    return
  fi
  local versions
  versions="$(cd "$dir" && node -p '["typescript", "@nestjs/core", "@nestjs/event-emitter", "express", "ioredis"].map((p) => p.replace("@nestjs/", "") + " " + require(p + "/package.json").version).join(", ")')"
  for mode in "${modes[@]}"; do
    local mlog="$LOGS/types-$stack-$mode.log"
    (cd "$dir" && step "$mlog" "$BUILD_TIMEOUT" ./node_modules/.bin/tsc -p "tsconfig.$mode.json")
    status=$?
    if [ $status -eq 0 ]; then
      pass "$name $mode: ok (every entry point type-checks) [$versions]"
    else
      fail "$name $mode" "$(why $status "tsc -p tsconfig.$mode.json" "$BUILD_TIMEOUT")" "$mlog"
    fi
  done
}

# The guides pasted into a project made by `nest new` (test/compat/guides): the generated project
# of each Nest major is reused (apps/nest11-cli, apps/nest12-cli), the snippets are taken from the
# markdown now, and its driver pays through two instances on Redis and PostgreSQL.
run_guides() {
  local major="$1" name="guides-nest$1" dir="$APPS/guides-nest$1" log="$LOGS/guides-nest$1.log" status
  cp -R "$HERE/apps/nest$major-cli" "$dir"
  rm -rf "$dir/node_modules" "$dir/dist" "$dir/package-lock.json"
  node "$HERE/guides/prepare.mjs" "$ROOT" "$dir" "$major" >>"$log" 2>&1 || { fail "$name" "cannot paste the guides' snippets" "$log"; return; }
  npm_install "$dir" "$log"
  status=$?
  [ $status -eq 0 ] || { fail "$name" "$(why $status "npm install" "$INSTALL_TIMEOUT")" "$log"; return; }
  (cd "$dir" && step "$log" "$BUILD_TIMEOUT" npm run build)
  status=$?
  [ $status -eq 0 ] || { fail "$name" "$(why $status "build" "$BUILD_TIMEOUT")" "$log"; return; }
  local out="$LOGS/$name.out" line limit=$((RUN_TIMEOUT * 2))
  (cd "$dir" && echo "\$ npm run --silent check" >>"$log" && timeout -k 5 "$limit" npm run --silent check >"$out" 2>&1)
  status=$?
  cat "$out" >>"$log"
  line="$(grep -E "^$name: ok " "$out" | tail -n 1)"
  rm -f "$out"
  if [ $status -eq 0 ] && [ -n "$line" ]; then pass "$line"; else fail "$name" "$(why $status "the guides' driver" "$limit")" "$log"; fi
}

# Apps one after another (installs dominate; the machine may have two cores), then the types.
TIMES=() # "<entry> <seconds>s", for the summary: where CI time goes
for src in "$HERE"/apps/*/; do
  name="$(basename "$src")"
  if wanted "$name"; then
    started=$SECONDS
    run_app "$name"
    TIMES+=("$name $((SECONDS - started))s")
  fi
done
# The README and the testing guide pasted into projects made by the official generators.
# shellcheck source=pasted/pasted.sh
source "$HERE/pasted/pasted.sh"
for kind in nest11 nest12 express; do
  if wanted "pasted-$kind"; then
    started=$SECONDS
    run_pasted "$kind"
    TIMES+=("pasted-$kind $((SECONDS - started))s")
  fi
done
for major in 11 12; do
  if wanted "guides-nest$major"; then
    started=$SECONDS
    run_guides "$major"
    TIMES+=("guides-nest$major $((SECONDS - started))s")
  fi
done
for stack in "${TYPE_STACKS[@]}"; do
  if wanted "types-$stack"; then
    started=$SECONDS
    run_types "$stack"
    TIMES+=("types-$stack $((SECONDS - started))s")
  fi
done

# Every recipe of the testing guide must have passed in some app (on a full run).
if [ -z "$ONLY" ]; then
  for recipe in $(node "$HERE/recipes.mjs" "$GUIDE" list); do
    if [ -n "${RECIPE_APPS[$recipe]:-}" ]; then
      pass "docs/testing.md recipe $recipe: ok (passed in ${RECIPE_APPS[$recipe]})"
    else
      fail "docs/testing.md recipe $recipe" "no app passed it (an app runs it when its package.json lists it in compat.recipes)"
    fi
  done
fi

# --- summary ------------------------------------------------------------------------------------
echo "compat: took $((SECONDS - STARTED)) s (${TIMES[*]/%/,} $FIRST); logs in test/compat/.work/logs"
if [ "$FAILED" -eq 0 ]; then
  rm -rf "$APPS" "$WORK/apps"
else
  echo "compat: failed: ${FAILURES[*]} (installs kept in $APPS)"
fi
echo "compat: $PASSED passed, $FAILED failed"
[ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
