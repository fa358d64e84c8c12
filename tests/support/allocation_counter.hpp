#pragma once

// Counts heap allocations, by replacing the global operator new (plain and over-aligned; the
// array and nothrow forms call these): on the calling thread (allocations_in) or on every thread
// of the process (allocations_on_all_threads_in). Include this header in exactly one
// translation unit of a test binary (the replacement functions are definitions).

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace signet::test::detail {
inline thread_local bool counting = false;
inline thread_local std::size_t allocations = 0;
// Process-wide window (allocations_on_all_threads_in): read by every thread's operator new.
inline std::atomic<bool> counting_all{false};
inline std::atomic<std::size_t> all_allocations{0};

inline void count_allocation() noexcept {
    if (counting) {
        ++allocations;
    }
    // relaxed: the window's edges are ordered by the test's own synchronization with the
    // allocating thread (see allocations_on_all_threads_in), not by this flag.
    if (counting_all.load(std::memory_order_relaxed)) {
        // relaxed: a count; the test reads it after synchronizing with this thread.
        all_allocations.fetch_add(1, std::memory_order_relaxed);
    }
}
} // namespace signet::test::detail

// GCC pairs the replaced operator delete's free() with operator new at the call sites it
// inlines and warns; both sides here are malloc/free, so the pairing is right.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
    signet::test::detail::count_allocation();
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
// Over-aligned types (alignas(destructive_interference_size) counters, lines, slots).
void* operator new(std::size_t size, std::align_val_t alignment) {
    signet::test::detail::count_allocation();
    auto const align = static_cast<std::size_t>(alignment);
    std::size_t const rounded = (size + align - 1) / align * align; // aligned_alloc's rule
    if (void* p = std::aligned_alloc(align, rounded == 0 ? align : rounded)) {
        return p;
    }
    throw std::bad_alloc();
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
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

/// The number of allocations made on any thread while `f` runs on this one. An allocation on
/// another thread is counted when it happens-after the window opens and happens-before it
/// closes: work that f hands to that thread and waits for (a release/acquire pair, a join; for
/// a datagram, in practice, the kernel's socket round trip). Allocations racing with the edges
/// (a worker going idle after f's last wait) may or may not be counted.
template <typename F>
std::size_t allocations_on_all_threads_in(F&& f) {
    // relaxed: ordered before the other threads' work by f's own synchronization; a load
    // that happens-after this store sees it (write-read coherence).
    detail::all_allocations.store(0, std::memory_order_relaxed);
    detail::counting_all.store(true, std::memory_order_relaxed);
    f();
    // relaxed: the increments f waited for happen-before these (f synchronized with them).
    detail::counting_all.store(false, std::memory_order_relaxed);
    return detail::all_allocations.load(std::memory_order_relaxed);
}

} // namespace signet::test
