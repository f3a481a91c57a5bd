#!/usr/bin/env bash
# Prints the closing summary of `make test` and exits non-zero if any stage failed.
#
#   scripts/test-summary.sh SECONDS NAME:STATUS:LOG ...
#
# STATUS is "ok" or "FAILED"; LOG (may be empty) is the output of that stage's ctest or
# pytest run, from which the counts are read. A stage without a log (the install check,
# or a suite whose build failed) counts as one test. The failed tests are named under the
# summary, and so are the tests that failed once and passed when run again, each with the
# first lines of its first failure, so that the tail of a CI log says what failed.
set -uo pipefail

# firstFailure LOG TEST: the first lines of TEST's first failed run in a ctest log (the
# gtest "Failure" line and the three after it), from the output that follows its
# "Test #N: NAME ...***Failed" result line.
firstFailure() {
  awk -v t="$2" '
    index($0, ": " t " ") && /\*\*\*/ { inside = 1; next }
    inside && /^ *Start +[0-9]+:|Test +#[0-9]+:/ { exit }
    inside && /: Failure$|terminate called|Sanitizer|Assertion/ { shown = 4 }
    inside && shown > 0 { print "      " substr($0, 1, 150); shown--; if (++lines >= 6) exit }
  ' "$1"
}

# failedTests LOG: the tests a ctest log lists as failed at its end.
failedTests() {
  sed -nE '/^The following tests FAILED:/,/^[^[:space:]]/s/^[[:space:]]+[0-9]+ - ([^ ]+).*/\1/p' "$1"
}

# failures LOG: one line per failed test of a ctest or pytest log, with its first failure
# (ctest).
failures() {
  local log=$1
  if grep -q '^The following tests FAILED:' "${log}"; then
    failedTests "${log}" | head -n 8 | while read -r test; do
      echo "    failed: ${test}"
      firstFailure "${log}" "${test}"
    done
  elif ! grep -q 'tests passed, .* tests failed out of' "${log}"; then
    grep -E '^(FAILED|ERROR) ' "${log}" | head -n 8 | cut -c1-150 | sed 's/^/    /'
  fi
}

# retried LOG: the tests of a ctest log that failed and then passed when run again
# (make's CTEST_RETRIES), each with its first failure: a failure that did not repeat.
retried() {
  local log=$1
  local failed
  failed=$(failedTests "${log}")
  sed -nE 's/.*Test +#[0-9]+: ([^ ]+) \.+ *\*\*\*(Failed|Exception|Timeout).*/\1/p' "${log}" | sort -u | head -n 8 |
    while read -r test; do
      if [[ -n "${failed}" ]] && grep -qxF -- "${test}" <<<"${failed}"; then continue; fi
      echo "    passed on a second run: ${test}"
      firstFailure "${log}" "${test}"
    done
}

seconds=$1
shift
total_pass=0 total_fail=0 total_skip=0 rc=0
lines=()
for stage in "$@"; do
  IFS=: read -r name status log <<<"${stage}"
  pass=0 fail=0 skip=0 detail=""
  if [[ -n "${log}" && -f "${log}" ]] && grep -q 'tests passed, .* tests failed out of' "${log}"; then
    # "97% tests passed, 2 tests failed out of 63"
    read -r fail total < <(sed -nE 's/.*tests passed, ([0-9]+) tests? failed out of ([0-9]+).*/\1 \2/p' \
                              "${log}" | tail -n1)
    # Skipped tests (GTEST_SKIP) are listed as "(Skipped)" and counted among the passed.
    skip=$(grep -cE '^[[:space:]]*[0-9]+ - .*\(Skipped\)' "${log}" || true)
    pass=$(( total - fail - skip ))
    detail="${pass} passed, ${fail} failed, ${skip} skipped"
  elif [[ -n "${log}" && -f "${log}" ]] &&
       grep -qE '[0-9]+ (passed|failed|errors?|skipped)[^=]* in [0-9.]+s' "${log}"; then
    # pytest's closing line: "== 1 failed, 80 passed, 2 skipped, 1 error in 9.10s ==".
    # Errors (a failing fixture) count as failures; xfailed/xpassed are not counted.
    last=$(grep -E '[0-9]+ (passed|failed|errors?|skipped)[^=]* in [0-9.]+s' "${log}" | tail -n1)
    count() { grep -oE "[0-9]+ $1" <<<"${last}" | awk '{n += $1} END {print n + 0}'; }
    pass=$(count passed)
    fail=$(( $(count failed) + $(count 'errors?') ))
    skip=$(count skipped)
    detail="${pass} passed, ${fail} failed, ${skip} skipped"
  elif [[ -n "${log}" && -f "${log}" ]] && grep -q 'No tests were found' "${log}"; then
    detail="no tests found"
  elif [[ "${status}" == ok ]]; then
    pass=1
    detail="ok"
  else
    fail=1
    detail="did not complete (see the output above)"
  fi
  if [[ "${status}" != ok ]]; then
    rc=1
    # A failing stage counts at least one failure (e.g. a crash after the counts).
    if (( fail == 0 )); then fail=1; fi
  fi
  total_pass=$(( total_pass + pass ))
  total_fail=$(( total_fail + fail ))
  total_skip=$(( total_skip + skip ))
  lines+=("$(printf '  %-14s %-7s %s' "${name}" "${status}" "${detail}")")
  if [[ -n "${log}" && -f "${log}" ]]; then
    if [[ "${status}" != ok ]]; then
      while IFS= read -r line; do lines+=("${line}"); done < <(failures "${log}")
    fi
    while IFS= read -r line; do lines+=("${line}"); done < <(retried "${log}")
  fi
done

echo
echo "== make test summary ($(( seconds / 60 ))m$(( seconds % 60 ))s)"
printf '%s\n' "${lines[@]}"
if (( total_skip > 0 )); then
  echo "summary: ${total_pass} passed, ${total_fail} failed, ${total_skip} skipped"
else
  echo "summary: ${total_pass} passed, ${total_fail} failed"
fi
exit "${rc}"
