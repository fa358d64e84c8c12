# signet::md — market-data protocols: MoldUDP64 session layer and packer, ITCH 5.0 parser, order
# book, feed handler, ITCH generator, BinaryFILE reader, and the re-request server's message store
# and decision logic. Standard library only (no sockets), so tests, fuzzers, benchmarks and apps
# can all use it. Included from net/CMakeLists.txt.
add_library(signet_md
    src/md/binary_file_reader.cpp
    src/md/feed_handler.cpp
    src/md/itch50.cpp
    src/md/itch_generator.cpp
    src/md/message_store.cpp
    src/md/moldudp64.cpp
    src/md/moldudp64_recovery.cpp
    src/md/order_book.cpp
    src/md/rerequest_server.cpp)
add_library(signet::md ALIAS signet_md)
set_target_properties(signet_md PROPERTIES EXPORT_NAME md OUTPUT_NAME signet_md)

target_include_directories(signet_md PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(signet_md PUBLIC cxx_std_20)
signet_enable_warnings(signet_md)
signet_enable_sanitizers(signet_md)
signet_enable_native(signet_md)

install(TARGETS signet_md EXPORT signet-targets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/signet/md DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/signet)
