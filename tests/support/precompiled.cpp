// The anchor of signet_test_pch (tests/CMakeLists.txt): the target that builds the precompiled
// header every test executable reuses. It has no code of its own.
