# The linker of signet's own programs, tests and benchmarks: lld when the compiler can use it,
# else the toolchain's default (GNU ld). A build links about a hundred executables, each
# against the static libraries with their debug information; a fresh build directory links
# them all even when every object comes from the compiler cache. The dev build's links take
# about a third of GNU ld's time with lld here (docs/testing.md, "The compiler cache").
# -DSIGNET_LINKER=default keeps the default.
set(SIGNET_LINKER "lld" CACHE STRING "Linker for signet's executables: lld (when usable) or default")
set_property(CACHE SIGNET_LINKER PROPERTY STRINGS lld default)
if(SIGNET_LINKER STREQUAL "lld" AND SIGNET_MASTER_PROJECT)
    include(CheckLinkerFlag)
    check_linker_flag(CXX "-fuse-ld=lld" SIGNET_HAVE_LLD)
    if(SIGNET_HAVE_LLD)
        add_link_options(-fuse-ld=lld)
    else()
        message(STATUS "signet: lld not usable, linking with the default linker (install lld)")
    endif()
elseif(NOT SIGNET_LINKER STREQUAL "default" AND NOT SIGNET_LINKER STREQUAL "lld")
    message(FATAL_ERROR "SIGNET_LINKER is '${SIGNET_LINKER}'; known: lld, default")
endif()
