# Script mode (cmake -P): install the build tree, build a consumer against it, run it.
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run_step)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "step failed (${rc}): ${ARGN}\n${out}\n${err}")
    endif()
endfunction()

run_step(${CMAKE_COMMAND} --install "${SIGNET_BINARY_DIR}" --prefix "${prefix}")
run_step(${CMAKE_COMMAND} -S "${DOWNSTREAM_SOURCE_DIR}" -B "${WORK_DIR}/build" -G "${GENERATOR}"
         -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_PREFIX_PATH=${prefix}
         -DCMAKE_BUILD_TYPE=Release)
run_step(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run_step("${WORK_DIR}/build/downstream")
run_step("${WORK_DIR}/build/downstream_receiver")
message(STATUS "downstream project built and ran against the install tree in ${prefix}")
