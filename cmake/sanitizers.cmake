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
    # Debug information comes from the build type: the asan and tsan presets use -O1 -g1 (line
    # tables: reports name file and line, and the build takes about half the time of -O2 -g).
    target_compile_options(${target} PRIVATE -fsanitize=${sanitizers} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all)
    target_link_options(${target} PRIVATE -fsanitize=${sanitizers})
endfunction()
