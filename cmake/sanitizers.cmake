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
    target_compile_options(${target} PRIVATE -fsanitize=${sanitizers} -fno-omit-frame-pointer
                                             -fno-sanitize-recover=all -g)
    target_link_options(${target} PRIVATE -fsanitize=${sanitizers})
endfunction()
