#pragma once

/// spsc_fixed_queue<T>: a bounded, lock-free FIFO for one producer and one consumer thread.
///
/// Threading: push() and emplace() are producer-side, pop(), front() and pop_front() are
/// consumer-side; calls on one side must not overlap (a role may move to another thread across a
/// mutex or a join). size() and empty() run on any thread and are snapshots while both sides
/// run. Construction and destruction need exclusive access.
///
/// Not for: several producers or consumers; a side that must sleep until data or space arrives
/// (it never blocks or notifies: pair it with a wake-up such as work_contract::schedule());
/// large T (queue a pointer or an index instead).
///
/// Design (after rigtorp/SPSCQueue): a ring of capacity + 1 raw slots. One slot always stays
/// empty, so read_index_ == write_index_ means empty and next(write_index_) == read_index_ full.
/// Invariants: both indices lie in [0, capacity]; slots in [read_index_, write_index_) hold live
/// elements, the rest is raw memory; only the producer stores write_index_, only the consumer
/// read_index_. Each index sits on its owner's cache line next to the owner's cached copy of the
/// other index, and the ring is padded at both ends against false sharing with heap neighbours.
///
/// Algorithm:
///   1. push: w = write_index_. If w + 1 (wrapped) equals read_index_cache_, refresh the cache
///      from read_index_ (acquire); if still equal, the queue is full: return false.
///   2. push: construct the element in slot w (a throw publishes nothing), then store w + 1 to
///      write_index_ (release).
///   3. front: r = read_index_. If r equals write_index_cache_, refresh the cache from
///      write_index_ (acquire); if still equal, the queue is empty: return nullptr. Else slot r.
///   4. pop_front: destroy slot r, then store r + 1 (wrapped) to read_index_ (release).
///      pop(out) and pop() are front(), a move out of the slot, and pop_front().
///
/// Costs: O(1) and wait-free, no allocation after the constructor, no read-modify-write. The
/// common case touches only the caller's own cache line; a stale cached index costs one transfer
/// of the other side's line. Memory: (capacity + 1 + 2 * padding_slots) * sizeof(T) for the
/// ring, plus three destructive_interference_size lines for the object.

#include <atomic>
#include <cassert>
#include <concepts>
#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <signet/core/cache_line.hpp>

namespace signet {

/// A non-const, non-array object type whose destructor cannot throw (pop_front() is noexcept).
template <typename T>
concept spsc_queue_element = std::is_object_v<T> && !std::is_array_v<T> && !std::is_const_v<T> &&
                             !std::is_volatile_v<T> && std::is_nothrow_destructible_v<T>;

template <spsc_queue_element T>
class spsc_fixed_queue {
public:
    /// Throws std::invalid_argument if capacity is 0 or too large, std::bad_alloc on failure.
    explicit spsc_fixed_queue(std::size_t capacity);
    /// Destroys the elements still queued. Needs exclusive access: both sides have finished.
    ~spsc_fixed_queue();

    spsc_fixed_queue(spsc_fixed_queue const&) = delete;
    spsc_fixed_queue& operator=(spsc_fixed_queue const&) = delete;
    spsc_fixed_queue(spsc_fixed_queue&&) = delete;
    spsc_fixed_queue& operator=(spsc_fixed_queue&&) = delete;

    /// Producer-side. Copies value in; false (and no copy made) when full.
    [[nodiscard]] bool push(T const& value) noexcept(std::is_nothrow_copy_constructible_v<T>);
    /// Producer-side. Moves value in; false (value untouched) when full.
    [[nodiscard]] bool push(T&& value) noexcept(std::is_nothrow_move_constructible_v<T>);
    /// Producer-side. Constructs T(args...) in place; false (args untouched) when full.
    template <typename... A>
    requires std::constructible_from<T, A...>
    [[nodiscard]] bool emplace(A&&... args) noexcept(std::is_nothrow_constructible_v<T, A...>);

    /// Consumer-side. Move-assigns the oldest element to out; false when empty. A throw keeps it.
    [[nodiscard]] bool pop(T& out) noexcept(std::is_nothrow_move_assignable_v<T>);
    /// Consumer-side. Moves the oldest element out; nullopt when empty. A throw keeps it queued.
    [[nodiscard]] std::optional<T> pop() noexcept(std::is_nothrow_move_constructible_v<T>);
    /// Consumer-side. The oldest element in place (zero-copy; valid until popped), or nullptr.
    [[nodiscard]] T* front() noexcept;
    /// Consumer-side. Destroys the oldest element. Precondition: front() != nullptr.
    void pop_front() noexcept;

    /// Any thread. Exact when both sides are idle, else a snapshot.
    [[nodiscard]] bool empty() const noexcept;
    /// Any thread. Exact when both sides are idle, else a snapshot; never above capacity().
    [[nodiscard]] std::size_t size() const noexcept;
    /// Any thread. The capacity passed to the constructor.
    [[nodiscard]] std::size_t capacity() const noexcept { return slot_count_ - 1; }

private:
    using allocator_type = std::allocator<T>;
    using allocator_traits = std::allocator_traits<allocator_type>;

    // Unused slots at each end of the ring: at least destructive_interference_size bytes.
    static constexpr std::size_t padding_slots =
        (destructive_interference_size - 1) / sizeof(T) + 1;

    [[nodiscard]] static std::size_t checked_slot_count(std::size_t capacity);
    [[nodiscard]] std::size_t next_index(std::size_t index) const noexcept {
        return index + 1 == slot_count_ ? 0 : index + 1;
    }

    // Set by the constructor, then only read: both sides may share this line without contention.
    std::size_t slot_count_; // capacity + 1
    T* allocation_;          // padding_slots + slot_count_ + padding_slots elements
    T* slots_;               // allocation_ + padding_slots

    // Producer's line. alignas: write_index_ and read_index_ are written by different threads;
    // on one line every store by one side would invalidate the other side's copy (false sharing).
    alignas(destructive_interference_size) std::atomic<std::size_t> write_index_{0};
    std::size_t read_index_cache_ = 0; // producer's copy of read_index_

    // Consumer's line, alignas for the same reason; it also pads the object's end.
    alignas(destructive_interference_size) std::atomic<std::size_t> read_index_{0};
    std::size_t write_index_cache_ = 0; // consumer's copy of write_index_
};

template <spsc_queue_element T>
spsc_fixed_queue<T>::spsc_fixed_queue(std::size_t capacity)
    : slot_count_(checked_slot_count(capacity))
    , allocation_(nullptr)
    , slots_(nullptr) {
    static_assert(std::atomic<std::size_t>::is_always_lock_free);
    // Layout pins: read-only fields, producer and consumer each own one line.
    static_assert(alignof(spsc_fixed_queue) == destructive_interference_size);
    static_assert(sizeof(spsc_fixed_queue) == 3 * destructive_interference_size);
    // std::allocator<T> honours alignof(T) > __STDCPP_DEFAULT_NEW_ALIGNMENT__ (aligned new).
    allocator_type allocator;
    allocation_ = allocator_traits::allocate(allocator, slot_count_ + 2 * padding_slots);
    slots_ = allocation_ + padding_slots;
}

template <spsc_queue_element T>
std::size_t spsc_fixed_queue<T>::checked_slot_count(std::size_t capacity) {
    if (capacity < 1) {
        throw std::invalid_argument("spsc_fixed_queue: capacity must be at least 1");
    }
    allocator_type allocator;
    if (capacity > allocator_traits::max_size(allocator) - 1 - 2 * padding_slots) {
        throw std::invalid_argument("spsc_fixed_queue: capacity is too large to allocate");
    }
    return capacity + 1;
}

template <spsc_queue_element T>
spsc_fixed_queue<T>::~spsc_fixed_queue() {
    while (front() != nullptr) {
        pop_front();
    }
    allocator_type allocator;
    allocator_traits::deallocate(allocator, allocation_, slot_count_ + 2 * padding_slots);
}

template <spsc_queue_element T>
bool spsc_fixed_queue<T>::push(T const& value) noexcept(std::is_nothrow_copy_constructible_v<T>) {
    return emplace(value);
}

template <spsc_queue_element T>
bool spsc_fixed_queue<T>::push(T&& value) noexcept(std::is_nothrow_move_constructible_v<T>) {
    return emplace(std::move(value));
}

template <spsc_queue_element T>
template <typename... A>
requires std::constructible_from<T, A...>
bool spsc_fixed_queue<T>::emplace(A&&... args) noexcept(std::is_nothrow_constructible_v<T, A...>) {
    // relaxed: only the producer stores write_index_, so this thread reads its own latest value.
    auto const write_index = write_index_.load(std::memory_order_relaxed);
    auto const next = next_index(write_index);
    if (next == read_index_cache_) {
        // acquire: pairs with the release in pop_front(); the slot's destruction happens-before.
        read_index_cache_ = read_index_.load(std::memory_order_acquire);
        if (next == read_index_cache_) {
            return false;
        }
    }
    std::construct_at(slots_ + write_index, std::forward<A>(args)...);
    // release: publishes the constructed element; pairs with the acquire load in front().
    write_index_.store(next, std::memory_order_release);
    return true;
}

template <spsc_queue_element T>
bool spsc_fixed_queue<T>::pop(T& out) noexcept(std::is_nothrow_move_assignable_v<T>) {
    T* const element = front();
    if (element == nullptr) {
        return false;
    }
    out = std::move(*element);
    pop_front();
    return true;
}

template <spsc_queue_element T>
std::optional<T> spsc_fixed_queue<T>::pop() noexcept(std::is_nothrow_move_constructible_v<T>) {
    T* const element = front();
    if (element == nullptr) {
        return std::nullopt;
    }
    std::optional<T> result(std::in_place, std::move(*element));
    pop_front();
    return result;
}

template <spsc_queue_element T>
T* spsc_fixed_queue<T>::front() noexcept {
    // relaxed: only the consumer stores read_index_, so this thread reads its own latest value.
    auto const read_index = read_index_.load(std::memory_order_relaxed);
    if (read_index == write_index_cache_) {
        // acquire: pairs with the release in emplace(); the construction happens-before.
        write_index_cache_ = write_index_.load(std::memory_order_acquire);
        if (read_index == write_index_cache_) {
            return nullptr;
        }
    }
    return slots_ + read_index;
}

template <spsc_queue_element T>
void spsc_fixed_queue<T>::pop_front() noexcept {
    assert(front() != nullptr &&
           "Can only call spsc_fixed_queue::pop_front() after front() has returned a non-nullptr");
    // relaxed: only the consumer stores read_index_, so this thread reads its own latest value.
    auto const read_index = read_index_.load(std::memory_order_relaxed);
    std::destroy_at(slots_ + read_index);
    // release: frees the destroyed slot; pairs with the acquire load in emplace().
    read_index_.store(next_index(read_index), std::memory_order_release);
}

template <spsc_queue_element T>
bool spsc_fixed_queue<T>::empty() const noexcept {
    // acquire: pairs with the releases in emplace() and pop_front(), so a thread that sees the
    // queue empty also sees the element destructions (e.g. before it destroys the queue).
    return write_index_.load(std::memory_order_acquire) ==
           read_index_.load(std::memory_order_acquire);
}

template <spsc_queue_element T>
std::size_t spsc_fixed_queue<T>::size() const noexcept {
    // acquire (both): same pairing and reason as in empty().
    auto const write_index = write_index_.load(std::memory_order_acquire);
    auto const read_index = read_index_.load(std::memory_order_acquire);
    // Each index is in [0, capacity] whenever read, so this distance modulo capacity + 1 is in
    // [0, capacity]: a racy snapshot may be stale but never exceeds capacity.
    return write_index >= read_index ? write_index - read_index
                                     : slot_count_ - read_index + write_index;
}

} // namespace signet
