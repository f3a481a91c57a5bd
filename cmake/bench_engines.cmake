# The competitor engines of `vmstore bench`: LMDB, RocksDB and WiredTiger, each from its
# Debian package (scripts/install-deps.sh installs them). Included by the top-level
# CMakeLists.txt before it builds the bench object library. Sets:
#
#   VMSTORE_BENCH_EXCLUDE   absolute paths of bench/engines/*_engine.cpp whose library is
#                           missing (the framework leaves them out of the build)
#   VMSTORE_BENCH_LIBS      what the bench code links (imported targets)
#   VMSTORE_BENCH_DEFINES   VMSTORE_BENCH_HAVE_LMDB=1, ..._ROCKSDB=1, ..._WIREDTIGER=1 for
#                           each engine that is built
#
# Each library is found with pkg-config where it ships a .pc file (all three Debian
# packages do), else with find_path/find_library. -DVMSTORE_BENCH_WITH_<ENGINE>=OFF leaves
# an engine out on purpose.

option(VMSTORE_BENCH_WITH_LMDB "Build the lmdb bench engine when liblmdb-dev is found" ON)
option(VMSTORE_BENCH_WITH_ROCKSDB
  "Build the rocksdb bench engine when librocksdb-dev is found" ON)
option(VMSTORE_BENCH_WITH_WIREDTIGER
  "Build the wiredtiger bench engine when libwiredtiger-dev is found" ON)

set(VMSTORE_BENCH_EXCLUDE "")
set(VMSTORE_BENCH_LIBS "")
set(VMSTORE_BENCH_DEFINES "")

get_filename_component(_vmstore_bench_engines_dir
  "${CMAKE_CURRENT_LIST_DIR}/../bench/engines" ABSOLUTE)

find_package(PkgConfig QUIET)

# _vmstore_bench_engine(NAME PC_MODULE HEADER LIBRARY DEB_PACKAGE)
#   NAME         engine name, also the adapter file bench/engines/<NAME>_engine.cpp
#   PC_MODULE    pkg-config module
#   HEADER       a header to find (fallback)
#   LIBRARY      the library name to find (fallback)
#   DEB_PACKAGE  what to install when it is missing
macro(_vmstore_bench_engine NAME PC_MODULE HEADER LIBRARY DEB_PACKAGE)
  string(TOUPPER "${NAME}" _up)
  set(_src "${_vmstore_bench_engines_dir}/${NAME}_engine.cpp")
  set(_target "")
  set(_version "")
  if(NOT VMSTORE_BENCH_WITH_${_up})
    message(STATUS "vmstore bench: engine '${NAME}' disabled (VMSTORE_BENCH_WITH_${_up}=OFF)")
  else()
    if(PkgConfig_FOUND)
      pkg_check_modules(VMSTORE_BENCH_PC_${_up} QUIET IMPORTED_TARGET GLOBAL ${PC_MODULE})
      if(VMSTORE_BENCH_PC_${_up}_FOUND)
        set(_target PkgConfig::VMSTORE_BENCH_PC_${_up})
        set(_version "${VMSTORE_BENCH_PC_${_up}_VERSION}")
      endif()
    endif()
    if(NOT _target)
      find_path(VMSTORE_BENCH_${_up}_INCLUDE_DIR ${HEADER})
      find_library(VMSTORE_BENCH_${_up}_LIBRARY ${LIBRARY})
      if(VMSTORE_BENCH_${_up}_INCLUDE_DIR AND VMSTORE_BENCH_${_up}_LIBRARY)
        set(_target vmstore_bench_lib_${NAME})
        if(NOT TARGET ${_target})
          add_library(${_target} UNKNOWN IMPORTED GLOBAL)
          set_target_properties(${_target} PROPERTIES
            IMPORTED_LOCATION "${VMSTORE_BENCH_${_up}_LIBRARY}"
            INTERFACE_INCLUDE_DIRECTORIES "${VMSTORE_BENCH_${_up}_INCLUDE_DIR}")
        endif()
        set(_version "${VMSTORE_BENCH_${_up}_LIBRARY}")
      endif()
    endif()
    if(_target)
      message(STATUS "vmstore bench: engine '${NAME}' enabled (${PC_MODULE} ${_version})")
    else()
      message(STATUS "vmstore bench: engine '${NAME}' not built: ${HEADER} / lib${LIBRARY} "
                     "not found (install the Debian package ${DEB_PACKAGE}, "
                     "e.g. bash scripts/install-deps.sh)")
    endif()
  endif()
  if(_target)
    list(APPEND VMSTORE_BENCH_LIBS ${_target})
    list(APPEND VMSTORE_BENCH_DEFINES VMSTORE_BENCH_HAVE_${_up}=1)
  else()
    list(APPEND VMSTORE_BENCH_EXCLUDE "${_src}")
  endif()
endmacro()

_vmstore_bench_engine(lmdb lmdb lmdb.h lmdb liblmdb-dev)
_vmstore_bench_engine(rocksdb rocksdb rocksdb/db.h rocksdb librocksdb-dev)
_vmstore_bench_engine(wiredtiger wiredtiger wiredtiger.h wiredtiger libwiredtiger-dev)
