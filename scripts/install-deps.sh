#!/usr/bin/env bash
# Installs the Debian packages vmstore needs to build and test, and only the missing ones.
# Idempotent and quiet: when everything is present it prints nothing and changes nothing.
#
#   scripts/install-deps.sh            install what is missing (apt-get; root or sudo)
#   VMSTORE_SKIP_DEPS=1 make ...       skip this step entirely
set -euo pipefail

# Everything the project needs from Debian. Add new packages here.
VMSTORE_DEB_PACKAGES="build-essential cmake ninja-build pkg-config libgtest-dev liburing-dev libboost-context-dev liblmdb-dev librocksdb-dev libwiredtiger-dev python3 python3-venv python3-dev"

if [[ "${VMSTORE_SKIP_DEPS:-}" == 1 ]]; then
  exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: no dpkg/apt-get here (not Debian/Ubuntu); make sure these (or your" \
       "distribution's equivalents) are installed: ${VMSTORE_DEB_PACKAGES}" >&2
  exit 0
fi

missing=()
for pkg in ${VMSTORE_DEB_PACKAGES}; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "${pkg}" 2>/dev/null || true)
  if [[ "${status}" != installed ]]; then
    missing+=("${pkg}")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "install-deps: installing missing packages: ${missing[*]}"

if [[ ${EUID} -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  # No terminal (CI, no stdin): never wait for a password prompt.
  if [[ -t 0 ]]; then as_root=(sudo); else as_root=(sudo -n); fi
else
  echo "install-deps: not root and sudo is not available. As root, run:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi

apt_opts=(-q -y -o Dpkg::Use-Pty=0 -o DPkg::Lock::Timeout=600 --no-install-recommends)
log=$(mktemp)
trap 'rm -f "${log}"' EXIT
run_apt() {
  if ! "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >"${log}" 2>&1; then
    cat "${log}" >&2
    echo "install-deps: 'apt-get $*' failed" >&2
    exit 1
  fi
}
run_apt -q -o DPkg::Lock::Timeout=600 update
run_apt "${apt_opts[@]}" install "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
