# The default build type's flags, for the library's own build (../CMakeLists.txt) and for
# the Python binding's (../python/CMakeLists.txt), which builds the library as a
# subproject. Included before project(), so that these are the cache defaults; a -D on
# the command line still wins.
#
# -O3 -g, as the original vmcache code is built. Against -O2, callgrind counts 2.9% fewer
# instructions a TPC-C transaction and 1.7% fewer a lookup (docs/BENCHMARKS.md, stop 62).
# NDEBUG is deliberately not defined, so assert() stays active in every build (tests and
# benchmarks included).
set(CMAKE_CXX_FLAGS_RELWITHDEBINFO "-O3 -g" CACHE STRING "C++ flags for RelWithDebInfo")
set(CMAKE_C_FLAGS_RELWITHDEBINFO "-O3 -g" CACHE STRING "C flags for RelWithDebInfo")
