# The docs pasted into fresh projects: sourced by test/compat/run.sh, which runs
# `run_pasted <kind>` for the entries pasted-nest11, pasted-nest12 and pasted-express (with its
# APPS, LOGS, HERE, ROOT, step, why, pass, fail and RECIPE_APPS).
#
# Each entry makes its project the way a new user does, with the official generator and nothing
# else: `npx @nestjs/cli@11 new` (CommonJS, Jest), `npx @nestjs/cli@12 new` (ES modules, Vitest),
# or `npm init -y` in an empty folder (Express). Then test/compat/pasted/extract.mjs takes, from
# README.md and docs/testing.md, the blocks marked `<!-- paste: <kind> -->`: the install line
# (its `nestjs-payments` replaced by the packed tarball), the quick start's files and the testing
# guide's recipe, written as printed. The entry runs the install line, builds and type-checks a
# Nest project with its own generated tsconfig, runs the guide's test command (a payment paid on
# the sandbox, its webhook marks the order paid, the return page says so), and for Express starts
# `main.ts` with tsx until it says it listens. Zero edits: no other file is written or changed.

PASTED_SECRET="pasted-entry-webhook-secret-0123456789abcdef"

# run_pasted KIND: one entry, `pasted-<kind>: ok (...)` or a FAIL line.
run_pasted() {
  local kind="$1" name="pasted-$1" dir="$APPS/pasted-$1" log="$LOGS/pasted-$1.log" status
  # npm settings through the environment, so that the pasted commands run as printed.
  local -x npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
  [ "${COMPAT_NPM_ONLINE:-}" = 1 ] || local -x npm_config_prefer_offline=true
  case "$kind" in
    nest11 | nest12)
      local major="${kind#nest}" extra=()
      [ "$major" = 12 ] && extra=(--no-observe) # 12 asks whether to add its devtools otherwise
      (cd "$APPS" && step "$log" "$INSTALL_TIMEOUT" npx -y "@nestjs/cli@$major" new "$name" --skip-git --package-manager npm "${extra[@]}" </dev/null)
      ;;
    express)
      mkdir -p "$dir" && (cd "$dir" && step "$log" 60 npm init -y)
      ;;
  esac
  status=$?
  [ $status -eq 0 ] && [ -f "$dir/package.json" ] || { fail "$name" "$(why $status "making the project" "$INSTALL_TIMEOUT")" "$log"; return; }

  node "$HERE/pasted/extract.mjs" "$ROOT" "$kind" "$dir" "$APPS/nestjs-payments.tgz" >>"$log" 2>&1 ||
    { fail "$name" "cannot take what to paste from README.md and docs/testing.md" "$log"; return; }
  (cd "$dir" && step "$log" "$INSTALL_TIMEOUT" bash .pasted/install.sh)
  status=$?
  [ $status -eq 0 ] || { fail "$name" "$(why $status "the README's install line" "$INSTALL_TIMEOUT")" "$log"; return; }

  if [ "$kind" != express ]; then
    (cd "$dir" && step "$log" "$BUILD_TIMEOUT" npm run build && step "$log" "$BUILD_TIMEOUT" npx tsc -p tsconfig.json --noEmit)
    status=$?
    [ $status -eq 0 ] || { fail "$name" "$(why $status "build and type check" "$BUILD_TIMEOUT")" "$log"; return; }
  fi
  (cd "$dir" && step "$log" "$RUN_TIMEOUT" bash .pasted/test.sh)
  status=$?
  [ $status -eq 0 ] || { fail "$name" "$(why $status "the testing guide's test" "$RUN_TIMEOUT")" "$log"; return; }
  if [ "$kind" = express ]; then
    pasted_express_starts "$dir" "$log" || { fail "$name" "npx tsx main.ts did not say it listens" "$log"; return; }
  fi

  local recipes versions
  recipes="$(cat "$dir/.pasted/recipes")"
  versions="$(cd "$dir" && node -p '["@nestjs/core", "@nestjs/event-emitter", "express", "typescript", "jest", "vitest", "tsx"].flatMap((p) => { try { return [p.replace("@nestjs/", "") + " " + require(require.resolve(p + "/package.json", { paths: ["."] })).version]; } catch { return []; } }).join(", ")')"
  pass "$name: ok (README install line and quick start, docs/testing.md recipe $recipes, as printed: paid on the sandbox, order marked paid) [$versions]"
  for recipe in $recipes; do RECIPE_APPS[$recipe]+="${RECIPE_APPS[$recipe]:+, }$name"; done
}

# The Express quick start's main.ts, started as the README says (`npx tsx main.ts`, PORT=0 here),
# prints that it listens; then it is stopped.
pasted_express_starts() { # dir, log
  local out="$1/.pasted/main.out" pid i
  (cd "$1" && PORT=0 PAYMENTS_PUBLIC_KEY=pasted PAYMENTS_PRIVATE_KEY=pasted PAYMENTS_WEBHOOK_SECRET="$PASTED_SECRET" \
    exec timeout -k 5 30 npx tsx main.ts >"$out" 2>&1) &
  pid=$!
  for i in $(seq 1 60); do
    grep -q '^shop listening on http://localhost:[0-9]' "$out" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  kill "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  { echo "\$ PORT=0 npx tsx main.ts"; cat "$out"; } >>"$2"
  grep -q '^shop listening on http://localhost:[0-9]' "$out"
}
