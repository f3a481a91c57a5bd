#!/usr/bin/env bash
# Checks that an installed vmstore is usable by other projects:
#   1. cmake --install BUILD_DIR into a temporary prefix; the expected files are there;
#   2. a C program built with pkg-config (shared and static) runs;
#   3. a C++ CMake project using find_package(vmstore) (vmstore::vmstore and
#      vmstore::vmstore_static) builds and runs;
#   4. the installed CLI starts, stores and reads a key, and runs `vmstore bench --help`
#      (bin/vmstore-bench, installed beside it).
# Usage: scripts/check-install.sh [BUILD_DIR]   (default build/release)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=$(realpath "${1:-build/release}")
[[ -f "${build_dir}/cmake_install.cmake" ]] || {
  echo "check-install: ${build_dir} is not a configured build directory" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/vmstore-install-check.XXXXXX")
trap 'rm -rf "${work}"' EXIT
prefix="${work}/prefix"
fail() { echo "check-install: FAILED: $*" >&2; exit 1; }
step() { echo "check-install: $*"; }

step "installing to a temporary prefix"
cmake --install "${build_dir}" --prefix "${prefix}" >"${work}/install.log" 2>&1 ||
  { cat "${work}/install.log" >&2; fail "cmake --install"; }

# Where GNUInstallDirs put the libraries (lib, or lib/<multiarch> for prefix /usr).
pc=$(find "${prefix}" -name vmstore.pc -path '*/pkgconfig/*' | head -n1)
[[ -n "${pc}" ]] || fail "no vmstore.pc installed"
libdir=$(dirname "$(dirname "${pc}")")
for f in include/vmstore.h include/vmstore/vmstore.hpp include/vmstore/status.hpp; do
  [[ -f "${prefix}/${f}" ]] || fail "missing ${f}"
done
for f in libvmstore.so libvmstore.so.0 libvmstore.a cmake/vmstore/vmstoreConfig.cmake \
         cmake/vmstore/vmstoreConfigVersion.cmake cmake/vmstore/vmstoreTargets.cmake; do
  [[ -e "${libdir}/${f}" ]] || fail "missing ${libdir#"${prefix}/"}/${f}"
done
[[ -L "${libdir}/libvmstore.so" ]] || fail "libvmstore.so is not a symlink"
soname=$(objdump -p "${libdir}/libvmstore.so" 2>/dev/null | awk '/SONAME/ {print $2}')
[[ "${soname}" == libvmstore.so.0 ]] || fail "SONAME is '${soname}', expected libvmstore.so.0"
if find "${prefix}/include" -type f ! -name '*.h' ! -name '*.hpp' | grep -q .; then
  fail "unexpected files under include/"
fi
# Only the public headers: nothing of src/ may leak into include/.
if [[ -n "$(find "${prefix}/include" -mindepth 1 -maxdepth 1 ! -name vmstore.h ! -name vmstore)" ]]; then
  fail "unexpected entries in include/: $(ls "${prefix}/include")"
fi

# ---------------------------------------------------------------------------------------
step "building a C program with pkg-config"
cat >"${work}/c_app.c" <<'C'
#include <stdio.h>
#include <string.h>
#include <vmstore.h>

int main(void) {
  const char* ok = vms_strerror(VMS_OK);
  const char* inval = vms_strerror(VMS_EINVAL);
  if (ok == NULL || inval == NULL || strcmp(ok, inval) == 0) {
    fprintf(stderr, "vms_strerror gave unexpected results\n");
    return 1;
  }
  printf("c_app: vms_strerror(VMS_EINVAL) = \"%s\"\n", inval);
  return 0;
}
C
export PKG_CONFIG_PATH="${libdir}/pkgconfig"
pkg-config --exists --print-errors vmstore || fail "pkg-config cannot read vmstore.pc"
pkg-config --validate vmstore 2>/dev/null || true
cflags=$(pkg-config --cflags vmstore)
libs=$(pkg-config --libs vmstore)
cc -std=c11 -Wall -Wextra -Werror -o "${work}/c_app" "${work}/c_app.c" ${cflags} ${libs} ||
  fail "C program did not build against the shared library (cflags: ${cflags}; libs: ${libs})"
LD_LIBRARY_PATH="${libdir}" "${work}/c_app" || fail "C program (shared) did not run"
ldd_out=$(LD_LIBRARY_PATH="${libdir}" ldd "${work}/c_app")
grep -q "${libdir}/libvmstore.so.0" <<<"${ldd_out}" || fail "C program not linked to the installed libvmstore.so.0"

# Static: libvmstore.a plus everything Libs.private names (a C link needs -lstdc++ from it).
static_libs=$(pkg-config --libs --static vmstore | sed -E 's/(^| )-lvmstore( |$)/\1-l:libvmstore.a\2/')
cc -std=c11 -o "${work}/c_app_static" "${work}/c_app.c" ${cflags} ${static_libs} ||
  fail "C program did not build against libvmstore.a (libs: ${static_libs})"
if ldd "${work}/c_app_static" | grep -q libvmstore; then
  fail "static C program still depends on libvmstore.so"
fi
"${work}/c_app_static" || fail "C program (static) did not run"

# ---------------------------------------------------------------------------------------
step "building a CMake project with find_package(vmstore)"
mkdir -p "${work}/cmake_app"
cat >"${work}/cmake_app/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.20)
project(vmstore_consumer LANGUAGES C CXX)
find_package(vmstore 0.1 REQUIRED CONFIG)
message(STATUS "found vmstore ${vmstore_VERSION} in ${vmstore_DIR}")
foreach(t vmstore::vmstore vmstore::vmstore_static)
  if(NOT TARGET ${t})
    message(FATAL_ERROR "find_package(vmstore) did not define ${t}")
  endif()
endforeach()
add_executable(cpp_shared main.cpp)
target_link_libraries(cpp_shared PRIVATE vmstore::vmstore)
add_executable(cpp_static main.cpp)
target_link_libraries(cpp_static PRIVATE vmstore::vmstore_static)
add_executable(c_shared main.c)
target_link_libraries(c_shared PRIVATE vmstore::vmstore)
CM
cat >"${work}/cmake_app/main.cpp" <<'CPP'
#include <vmstore/vmstore.hpp>

#include <cstdio>
#include <string>

int main() {
  // No C++20 flag was given here: it must come from the vmstore targets.
  static_assert(__cplusplus >= 202002L, "vmstore targets must require C++20");
  vmstore::Options options;
  vmstore::Status s = vmstore::Options::parse("bogus_key=1", &options);
  if (s.ok()) {
    std::fprintf(stderr, "Options::parse accepted an unknown key\n");
    return 1;
  }
  std::printf("cpp_app: %s\n", s.toString().c_str());
  return std::string(vmstore::Status::codeName(0)).empty() ? 1 : 0;
}
CPP
cp "${work}/c_app.c" "${work}/cmake_app/main.c"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S "${work}/cmake_app" -B "${work}/cmake_app/build" "${generator[@]}" \
  -DCMAKE_PREFIX_PATH="${prefix}" >"${work}/cmake_app.log" 2>&1 ||
  { cat "${work}/cmake_app.log" >&2; fail "configuring the find_package(vmstore) project"; }
cmake --build "${work}/cmake_app/build" >>"${work}/cmake_app.log" 2>&1 ||
  { cat "${work}/cmake_app.log" >&2; fail "building the find_package(vmstore) project"; }
for exe in cpp_shared cpp_static c_shared; do
  "${work}/cmake_app/build/${exe}" || fail "${exe} (find_package project) did not run"
done

# ---------------------------------------------------------------------------------------
if [[ -f "${build_dir}/vmstore" ]]; then
  step "checking the installed CLI"
  [[ -x "${prefix}/bin/vmstore" ]] || fail "bin/vmstore not installed"
  # Any exit code is fine; it must start (link, load) and not be killed by a signal.
  set +e
  timeout 60 "${prefix}/bin/vmstore" --help </dev/null >/dev/null 2>&1
  rc=$?
  set -e
  (( rc < 124 )) || fail "bin/vmstore --help died or hung (status ${rc})"
  timeout 60 "${prefix}/bin/vmstore" put "${work}/cli_db" key value >/dev/null ||
    fail "bin/vmstore put"
  [[ "$(timeout 60 "${prefix}/bin/vmstore" get "${work}/cli_db" key)" == value ]] ||
    fail "bin/vmstore get did not return what put stored"
  if [[ -f "${build_dir}/vmstore-bench" ]]; then
    # `vmstore bench` runs bin/vmstore-bench, installed beside it.
    [[ -x "${prefix}/bin/vmstore-bench" ]] || fail "bin/vmstore-bench not installed"
    help=$(timeout 60 "${prefix}/bin/vmstore" bench --help 2>&1) || true
    [[ "${help}" == *"usage: vmstore bench"* ]] ||
      fail "bin/vmstore bench --help did not run bin/vmstore-bench: ${help}"
  fi
fi

step "ok"
