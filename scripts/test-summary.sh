#!/usr/bin/env bash
# Prints the closing summary of `make test` and exits non-zero if any stage failed.
#
#   scripts/test-summary.sh SECONDS NAME:STATUS:LOG ...
#
# STATUS is "ok" or "FAILED"; LOG (may be empty) is the output of that stage's ctest or
# pytest run, from which the counts are read. A stage without a log (the install check,
# or a suite whose build failed) counts as one test.
set -uo pipefail

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
