#pragma once

// Counts heap allocations made on the calling thread, by replacing the global operator new.
// Include this header in exactly one translation unit of a test binary (the replacement
// functions are definitions).

#include <cstddef>
#include <cstdlib>
#include <new>

namespace signet::test::detail {
inline thread_local bool counting = false;
inline thread_local std::size_t allocations = 0;
} // namespace signet::test::detail

// GCC pairs the replaced operator delete's free() with operator new at the call sites it
// inlines and warns; both sides here are malloc/free, so the pairing is right.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
    if (signet::test::detail::counting) {
        ++signet::test::detail::allocations;
    }
    if (void* p = std::malloc(size == 0 ? 1 : size)) {
        return p;
    }
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
#pragma GCC diagnostic pop

namespace signet::test {

/// The number of allocations `f` makes on this thread.
template <typename F>
std::size_t allocations_in(F&& f) {
    detail::allocations = 0;
    detail::counting = true;
    f();
    detail::counting = false;
    return detail::allocations;
}

} // namespace signet::test
