#pragma once

// fixed_hash_map: a map from an integer key to a small value, an open-addressing hash table
// whose memory is set at construction: linear probing over 2 * bit_ceil(capacity) slots (load
// factor <= 0.5), Fibonacci hashing of the key, backward-shift deletion (no tombstones, so
// probe lengths do not degrade as entries come and go). insert() refuses when `capacity`
// entries are in: the caller decides what full means (count and recover, or rehash() on a
// control path). Nothing allocates after construction except rehash(). Not thread-safe.
//
// For the per-entry lookups of market-data books (an MDP 3.0 channel's instruments by
// security id), where std::unordered_map costs a node per entry and a pointer chase per find.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

namespace signet::md::detail {

template <typename Key, typename Value>
class fixed_hash_map {
    static_assert(std::is_integral_v<Key>, "fixed_hash_map: integer keys");

public:
    /// Room for `capacity` entries (at least 1). Throws std::length_error beyond 2^40.
    explicit fixed_hash_map(std::size_t capacity) { allocate(capacity); }

    [[nodiscard]] Value* find(Key key) noexcept {
        for (std::size_t i = home(key);; i = (i + 1) & mask_) {
            slot& s = slots_[i];
            if (!s.used) {
                return nullptr;
            }
            if (s.key == key) {
                return &s.value;
            }
        }
    }
    [[nodiscard]] Value const* find(Key key) const noexcept {
        return const_cast<fixed_hash_map*>(this)->find(key);
    }

    /// Adds key -> value; false (nothing changed) when the key is in or the map is full.
    bool insert(Key key, Value value) noexcept {
        if (size_ == capacity_) {
            return false;
        }
        std::size_t i = home(key);
        for (; slots_[i].used; i = (i + 1) & mask_) {
            if (slots_[i].key == key) {
                return false;
            }
        }
        slots_[i] = {key, std::move(value), true};
        ++size_;
        return true;
    }

    /// Removes key; false when it was not in.
    bool erase(Key key) noexcept {
        std::size_t i = home(key);
        for (; slots_[i].used; i = (i + 1) & mask_) {
            if (slots_[i].key == key) {
                break;
            }
        }
        if (!slots_[i].used) {
            return false;
        }
        // Backward shift: move up each later entry of the run whose home is not between the
        // hole and it, so that every entry stays reachable from its home without tombstones.
        for (std::size_t j = (i + 1) & mask_; slots_[j].used; j = (j + 1) & mask_) {
            std::size_t const h = home(slots_[j].key);
            bool const stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
            if (!stays) {
                slots_[i] = std::move(slots_[j]);
                i = j;
            }
        }
        slots_[i].used = false;
        --size_;
        return true;
    }

    void clear() noexcept {
        for (slot& s : slots_) {
            s.used = false;
        }
        size_ = 0;
    }

    /// Room for `capacity` entries (at least size()): allocates and reinserts every entry.
    void rehash(std::size_t capacity) {
        std::vector<slot> old = std::move(slots_);
        allocate(std::max(capacity, size_));
        size_ = 0;
        for (slot& s : old) {
            if (s.used) {
                (void)insert(s.key, std::move(s.value));
            }
        }
    }

    /// f(key, value) for every entry, in slot order.
    template <typename F>
    void for_each(F&& f) const {
        for (slot const& s : slots_) {
            if (s.used) {
                f(s.key, s.value);
            }
        }
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }

private:
    struct slot {
        Key key{};
        Value value{};
        bool used = false;
    };

    void allocate(std::size_t capacity) {
        if (capacity > std::size_t{1} << 40) {
            throw std::length_error("fixed_hash_map: capacity above 2^40");
        }
        capacity_ = std::max<std::size_t>(capacity, 1);
        std::size_t const slots = 2 * std::bit_ceil(capacity_);
        slots_.assign(slots, slot{});
        mask_ = slots - 1;
        shift_ = 64 - std::countr_zero(slots);
    }
    [[nodiscard]] std::size_t home(Key key) const noexcept {
        // Fibonacci hashing: the top bits of key * 2^64 / phi.
        auto const k = static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<Key>>(key));
        return static_cast<std::size_t>((k * 0x9E3779B97F4A7C15ULL) >> shift_) & mask_;
    }

    std::vector<slot> slots_;
    std::size_t capacity_ = 0;
    std::size_t size_ = 0;
    std::size_t mask_ = 0;
    int shift_ = 63;
};

} // namespace signet::md::detail
