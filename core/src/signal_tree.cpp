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
    // Build the inner levels bottom-up, choosing the widest fan-out whose counters can still
    // count every slot below one child.
    std::vector<level> bottom_up;
    std::size_t nodes = leaf_count_;
    unsigned child_shift = 6; // a leaf covers 64 slots
    std::size_t total_nodes = 0;
    while (nodes > 1) {
        std::size_t const child_slots = std::size_t{1} << child_shift;
        level lv{};
        if (child_slots <= 0xFF) {
            lv.fanout_shift = 3; // 8 x 8-bit counters
            lv.width_shift = 3;
        } else if (child_slots <= 0xFFFF) {
            lv.fanout_shift = 2; // 4 x 16-bit counters
            lv.width_shift = 4;
        } else {
            lv.fanout_shift = 1; // 2 x 32-bit counters
            lv.width_shift = 5;
        }
        lv.child_shift = child_shift;
        nodes = (nodes + (std::size_t{1} << lv.fanout_shift) - 1) >> lv.fanout_shift;
        lv.first_node = nodes; // node count of this level; turned into an offset below
        total_nodes += nodes;
        child_shift += lv.fanout_shift;
        bottom_up.push_back(lv);
    }
    levels_.assign(bottom_up.rbegin(), bottom_up.rend());
    std::size_t offset = 0;
    for (auto& lv : levels_) {
        std::size_t const count = lv.first_node;
        lv.first_node = offset;
        offset += count;
    }
    nodes_ = std::make_unique<padded_word[]>(std::max<std::size_t>(total_nodes, 1));
    leaves_ = std::make_unique<padded_word[]>(leaf_count_);
}

} // namespace signet
