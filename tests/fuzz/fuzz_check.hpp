#pragma once

// SIGNET_FUZZ_CHECK(condition): an invariant of a fuzz target. Unlike assert it stays on in any
// build; a failure prints the condition and aborts, which libFuzzer reports as a crash.

#include <cstdio>
#include <cstdlib>

#define SIGNET_FUZZ_CHECK(condition)                                                               \
    do {                                                                                           \
        if (!(condition)) {                                                                        \
            std::fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n", #condition, __FILE__,      \
                         __LINE__);                                                                \
            std::abort();                                                                          \
        }                                                                                          \
    } while (false)
