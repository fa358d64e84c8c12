#pragma once

/// book_side: a read-only view of one side of one stock's book in an order_book, worst price
/// first and best last. Elements are price_level values (price, orders, shares), read from the
/// book's level pool through the side's sorted list of (price, level) pairs.
///
/// Threading: as the book (valid until the book's next change). Costs: size() O(1), an element
/// one indexed load.

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <span>

namespace signet::md::nasdaq {

struct itch_price_level {
    std::uint32_t price = 0;
    std::uint32_t orders = 0;
    std::uint64_t shares = 0;

    friend bool operator==(itch_price_level const&, itch_price_level const&) = default;
};

namespace detail {

/// A price level's totals, in the book's pool; orders keep its index (its price is in its
/// side's level_ref and in each of its orders). `slot`: its place in its side's sorted list
/// (0: the worst price), kept only while the book tracks changes (its depth is the side's
/// size - 1 - slot).
struct level_node {
    std::uint64_t shares = 0;
    std::uint32_t orders = 0;
    std::uint32_t slot = 0;
};

/// A side's entry: sorted by price (best last), the price kept beside the index so that a
/// search reads one contiguous array.
struct level_ref {
    std::uint32_t price = 0;
    std::uint32_t node = 0;
};

} // namespace detail

class book_side {
public:
    class iterator {
    public:
        using iterator_category = std::input_iterator_tag;
        using value_type = itch_price_level;
        using difference_type = std::ptrdiff_t;
        using reference = itch_price_level;
        using pointer = void;

        iterator() = default;
        itch_price_level operator*() const noexcept { return level(*ref_, nodes_); }
        iterator& operator++() noexcept {
            ++ref_;
            return *this;
        }
        iterator operator++(int) noexcept {
            iterator const before = *this;
            ++ref_;
            return before;
        }
        friend bool operator==(iterator const& a, iterator const& b) noexcept {
            return a.ref_ == b.ref_;
        }

    private:
        friend class book_side;
        iterator(detail::level_ref const* ref, detail::level_node const* nodes)
            : ref_(ref)
            , nodes_(nodes) {}
        detail::level_ref const* ref_ = nullptr;
        detail::level_node const* nodes_ = nullptr;
    };

    book_side() = default;
    book_side(std::span<detail::level_ref const> refs, detail::level_node const* nodes) noexcept
        : refs_(refs)
        , nodes_(nodes) {}

    [[nodiscard]] std::size_t size() const noexcept { return refs_.size(); }
    [[nodiscard]] bool empty() const noexcept { return refs_.empty(); }
    /// Requires i < size(); 0 is the worst price, size() - 1 the best.
    [[nodiscard]] itch_price_level operator[](std::size_t i) const noexcept { return at(i); }
    [[nodiscard]] itch_price_level front() const noexcept { return at(0); }
    [[nodiscard]] itch_price_level back() const noexcept { return at(refs_.size() - 1); }
    [[nodiscard]] iterator begin() const noexcept { return {refs_.data(), nodes_}; }
    [[nodiscard]] iterator end() const noexcept { return {refs_.data() + refs_.size(), nodes_}; }

private:
    static itch_price_level level(detail::level_ref ref, detail::level_node const* nodes) noexcept {
        detail::level_node const& node = nodes[ref.node];
        return itch_price_level{ref.price, node.orders, node.shares};
    }
    [[nodiscard]] itch_price_level at(std::size_t i) const noexcept {
        return level(refs_[i], nodes_);
    }

    std::span<detail::level_ref const> refs_;
    detail::level_node const* nodes_ = nullptr;
};

} // namespace signet::md::nasdaq
