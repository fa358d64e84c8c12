# signet_add_library(<module> SOURCES ...): the library target of one module folder —
# signet_<module> with the ALIAS signet::<module> (EXPORT_NAME <module>), public headers in
# include/ (installed under include/signet/), private ones in src/, C++20, the project's
# warnings, sanitizers and native tuning, installed and exported into signet-targets. Link its
# dependencies with target_link_libraries(signet_<module> ...) after the call.
function(signet_add_library module)
    cmake_parse_arguments(arg "" "" "SOURCES" ${ARGN})
    set(target signet_${module})
    add_library(${target} ${arg_SOURCES})
    add_library(signet::${module} ALIAS ${target})
    set_target_properties(${target} PROPERTIES EXPORT_NAME ${module} OUTPUT_NAME ${target})
    target_include_directories(${target}
        PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
               $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
        PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
    target_compile_features(${target} PUBLIC cxx_std_20)
    signet_enable_warnings(${target})
    signet_enable_sanitizers(${target})
    signet_enable_native(${target})
    install(TARGETS ${target} EXPORT signet-targets
            ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
            LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(DIRECTORY include/signet DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
