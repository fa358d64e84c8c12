# signet_enable_warnings(target): the project's warning set, per target (no global flags).
# -Werror is added when SIGNET_WARNINGS_AS_ERRORS is ON (the dev and CI presets).
function(signet_enable_warnings target)
    target_compile_options(${target} PRIVATE
        -Wall -Wextra -Wpedantic -Wconversion -Wsign-conversion -Wshadow -Wold-style-cast
        -Wnon-virtual-dtor -Woverloaded-virtual)
    if(SIGNET_WARNINGS_AS_ERRORS)
        target_compile_options(${target} PRIVATE -Werror)
    endif()
endfunction()

# signet_enable_native(target): -march=native, only when SIGNET_NATIVE is ON (the bench preset).
option(SIGNET_NATIVE "Tune for the build machine's CPU (bench preset only)" OFF)
function(signet_enable_native target)
    if(SIGNET_NATIVE)
        target_compile_options(${target} PRIVATE -march=native)
    endif()
endfunction()
