# signet_enable_sanitizers(target): applies SIGNET_SANITIZE ('address;undefined' or 'thread').
# ASan and TSan cannot be combined; reject that early with a clear message.
if("thread" IN_LIST SIGNET_SANITIZE AND "address" IN_LIST SIGNET_SANITIZE)
    message(FATAL_ERROR "SIGNET_SANITIZE: 'thread' cannot be combined with 'address'")
endif()

function(signet_enable_sanitizers target)
    if(NOT SIGNET_SANITIZE)
        return()
    endif()
    list(JOIN SIGNET_SANITIZE "," sanitizers)
    # Debug information comes from the build type: the asan preset uses -Og -g1 and tsan -O1 -g1
    # (line tables: reports name file and line). With UBSan's checks, -O1 compiles about twice as
    # long as -Og (18.6 against 8.9 CPU-s for receiver/src/feed_parser.cpp); ThreadSanitizer's
    # stress tests keep -O1, whose code is closer to what a release build races.
    target_compile_options(${target} PRIVATE -fsanitize=${sanitizers} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${sanitizers})
endfunction()

# signet_test_optimization(target): where the libraries and programs are built at -Og (the dev and
# asan presets), a test's own translation units are built at -O0: most test code runs once, while
# the receivers, feeds and runtimes the tests drive run for minutes. ThreadSanitizer's stress
# tests keep the tsan preset's -O1: their hot loops are the test code.
function(signet_test_optimization target)
    if(CMAKE_BUILD_TYPE STREQUAL "Debug" AND CMAKE_CXX_FLAGS_DEBUG MATCHES "-Og")
        target_compile_options(${target} PRIVATE -O0)
    endif()
endfunction()
