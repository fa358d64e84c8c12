#include <algorithm>
#include <stdexcept>
#include <string>

#include <signet/core/signal_tree.hpp>

namespace signet {

signal_tree::signal_tree(std::size_t capacity)
    : leaf_count_((capacity + bits_per_leaf - 1) / bits_per_leaf) {
    if (capacity == 0 || capacity > max_capacity) {
        throw std::invalid_argument("signal_tree: capacity must be between 1 and " +
                                    std::to_string(max_capacity) + ", got " +
                                    std::to_string(capacity));
    }
    // Summary levels bottom-up: each word summarizes 64 words of the level below.
    std::vector<std::size_t> counts; // words per level, bottom-up
    std::size_t words = leaf_count_;
    while (words > 1) {
        words = (words + 63) / 64;
        counts.push_back(words);
    }
    std::size_t offset = 0;
    unsigned child_shift = 6 * static_cast<unsigned>(counts.size()); // the root's children
    for (auto it = counts.rbegin(); it != counts.rend(); ++it) {
        levels_.push_back({offset, child_shift});
        offset += *it;
        child_shift -= 6;
    }
    nodes_ = std::make_unique<padded_word[]>(std::max<std::size_t>(offset, 1));
    leaves_ = std::make_unique<padded_word[]>(leaf_count_);
}

void signal_tree::retract(std::size_t depth, std::size_t index) noexcept {
    while (depth > 0) {
        auto& child = word(depth, index);
        std::uint64_t const bit = std::uint64_t{1} << (index % 64);
        std::size_t const parent_depth = depth - 1;
        std::size_t const parent_index = index / 64;
        auto& parent = word(parent_depth, parent_index);
        // R1. seq_cst: the retractor's half of the Dekker pair with publish_up() (see the
        // header's "Invariant").
        std::uint64_t const before = parent.fetch_and(~bit, std::memory_order_seq_cst);
        // R2. seq_cst: ordered after R1 in the single total order; sees a concurrent setter's
        // fetch_or unless that setter sees our R1 in its own re-load.
        if (child.load(std::memory_order_seq_cst) != 0) {
            publish_up(depth, index); // refilled meanwhile: publish it again, as set() does
            return;
        }
        if (before != bit) {
            // Either the parent still has other children (nothing to do above), or another
            // retractor cleared our bit first (it continues upwards itself).
            return;
        }
        depth = parent_depth; // R3: the parent became empty through us
        index = parent_index;
    }
}

} // namespace signet
