#pragma once

// signal_tree: a set of "signals" (one bit each) that many threads set and select concurrently.
//
// What it is
//   A tree over `capacity` slots. Leaves are 64-bit words holding one bit per slot. Inner nodes
//   are 64-bit words holding the counters of their children (how many set bits lie below each
//   child), bit-packed: 8 x 8-bit counters just above the leaves (a child holds at most 64 set
//   bits), 4 x 16-bit counters while a child subtree holds at most 65535 slots, 2 x 32-bit
//   counters above that. Every word sits on its own cache line.
//
// Threading contract
//   set(), select() and empty() may be called from any number of threads at once.
//   set() is wait-free (one fetch_or plus one fetch_add per inner level, no loops).
//   select() is lock-free (one compare-exchange per inner level plus one fetch_and at the leaf;
//   a step is repeated only when another thread changed the same word in between).
//
// Use it for: "which of N long-lived things has work?" with N from tens to millions, when every
//   thing must be found fairly and a thing must never be handed to two selectors at once.
// Do not use it for: a queue of values (it holds one bit per slot, so setting a set bit again is
//   a no-op: signals coalesce by design).
//
// Algorithm
//   set(i):
//     1. fetch_or the bit of slot i into its leaf; if it was already set, stop (coalesced).
//     2. Walk up: increment the counter of the child we came from in each ancestor, bottom-up.
//   select(bias):
//     1. Read the root. If every counter is zero, the tree is empty: return npos.
//     2. At each inner node pick a child with a non-zero counter: the one the bias points at if
//        it has one, else the next non-zero one cyclically; decrement its counter with a
//        compare-exchange (retry with the fresh word on failure) and descend.
//     3. At the leaf pick a set bit the same way and clear it with fetch_and; if another
//        selector cleared that bit first, pick again from the fresh word.
//   Once a step deviates from the bias, the rest of the descent aims at the first slot of the
//   subtree taken, so the result is "the first set slot at or after bias", cyclically, within
//   the smallest subtree that holds any. With bias = last selected slot + 1 that is round-robin.
//
// Invariant (why a reservation always finds a bit)
//   set() makes the leaf bit visible before it increments the parent, and each parent after its
//   child; select() decrements a parent before it touches the child. Hence, for every node, the
//   units published in its parent's counter never exceed the units published in the node
//   itself, and every unit a selector reserves at a parent is backed by a unit (finally a set
//   bit) in the child it descends to. A selector that reserved a unit never finds an empty
//   child, so select() never fails after step 1 and never needs to roll back.
//   Counters cannot overflow: a counter never exceeds the slots below it, and the width is
//   chosen so that number fits.
//
// Priority lanes
//   select(bias, lane) prefers the slots of `lane` (a contiguous slot range): at every node the
//   children inside the lane are tried first (cyclically from the bias), then the others. When
//   the lane is empty, the result is the same fair choice as without a lane.
//
// Costs
//   Memory: one cache line per leaf and per inner node (capacity 512: 9 lines; 16384: 299).
//   set: 1 + depth atomic RMWs; select: 1 + depth RMWs uncontended. Depth is 0 for capacity
//   <= 64, 1 for <= 512, 2 for <= 2048, 3 for <= 8192. Nothing allocates after construction.

#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <signet/core/cache_line.hpp>

namespace signet {

/// A contiguous range of slots a thread prefers when it selects (see signal_tree::select).
struct lane {
    std::size_t first = 0; ///< first slot of the lane
    std::size_t count = 0; ///< number of slots; 0 means "no preference"
};

class signal_tree {
public:
    static constexpr std::size_t npos = ~std::size_t{0};
    static constexpr std::size_t max_capacity = std::size_t{1} << 31;

    /// Rounds capacity up to whole 64-bit leaves. Throws std::invalid_argument for 0 or a
    /// capacity above max_capacity.
    explicit signal_tree(std::size_t capacity);

    signal_tree(signal_tree const&) = delete;
    signal_tree& operator=(signal_tree const&) = delete;

    /// Number of slots (a multiple of 64).
    [[nodiscard]] std::size_t capacity() const noexcept { return leaf_count_ * bits_per_leaf; }

    /// Any thread; wait-free. Sets slot `index`; true if it was clear before (the signal is new),
    /// false if it was already set (coalesced). Everything the caller did before set() is
    /// visible to the thread whose select() returns this slot.
    bool set(std::size_t index) noexcept;

    /// Any thread; lock-free. Clears and returns one set slot, the first at or after `bias`
    /// cyclically (within the smallest non-empty subtree); npos when the tree is empty.
    [[nodiscard]] std::size_t select(std::size_t bias) noexcept { return select(bias, lane{}); }

    /// As select(bias), preferring the slots of `preferred`; bias should lie inside the lane.
    [[nodiscard]] std::size_t select(std::size_t bias, lane preferred) noexcept;

    /// Any thread. True when no set slot is published. Sequentially consistent, so it can be
    /// paired Dekker-style with a waiter count (see blocking_work_contract_group).
    [[nodiscard]] bool empty() const noexcept {
        return root().load(std::memory_order_seq_cst) == 0;
    }

    /// Any thread; a racy snapshot for tests and diagnostics: is slot `index` set?
    [[nodiscard]] bool test(std::size_t index) const noexcept {
        return (leaves_[index / bits_per_leaf].value.load(std::memory_order_relaxed) >>
                (index % bits_per_leaf)) &
               1U;
    }

private:
    static constexpr std::size_t bits_per_leaf = 64;

    // alignas: one word per cache line, so threads setting or selecting in different subtrees
    // never false-share.
    struct alignas(destructive_interference_size) padded_word {
        std::atomic<std::uint64_t> value{0};
    };
    static_assert(sizeof(padded_word) == destructive_interference_size);

    struct level {
        std::size_t first_node; // index of this level's first node in nodes_
        unsigned fanout_shift;  // log2(children per node): 3, 2 or 1
        unsigned width_shift;   // log2(bits per counter): 3, 4 or 5
        unsigned child_shift;   // log2(slots covered by one child)
        std::uint64_t unit(unsigned child) const noexcept {
            return std::uint64_t{1} << (child << width_shift);
        }
        // Bit c set iff child c's counter is non-zero, for all children at once (SWAR; every
        // level fills the whole word: fanout_shift + width_shift == 6). A counter is non-zero
        // iff its top bit is set or adding "all ones below the top bit" to its low bits carries
        // into the top bit; no carry crosses into the next counter. The multiply gathers the
        // top bits into the highest `fanout` bits of the product (the classic movemask
        // multiply: multiplier bit 64 - fanout - (width - 1) * c moves counter c's bit to
        // position 64 - fanout + c; the other partial products land on distinct lower bits or
        // above bit 63, so nothing carries into the result). Replaces a loop over the children.
        std::uint64_t non_zero(std::uint64_t word) const noexcept {
            static constexpr std::uint64_t top_bits[3] = {
                0x8080808080808080ULL, 0x8000800080008000ULL, 0x8000000080000000ULL};
            static constexpr std::uint64_t gather[3] = {
                0x0102040810204080ULL, 0x1000200040008000ULL, 0x4000000080000000ULL};
            assert(fanout_shift + width_shift == 6 && "signal_tree: a level must fill its word");
            unsigned const i = width_shift - 3;
            std::uint64_t const low = ~top_bits[i];
            std::uint64_t const tops = (((word & low) + low) | word) & top_bits[i];
            unsigned const width = 1U << width_shift;
            unsigned const fanout = 64U >> width_shift;
            return ((tops >> (width - 1)) * gather[i]) >> (64 - fanout);
        }
    };

    std::atomic<std::uint64_t>& root() noexcept {
        return levels_.empty() ? leaves_[0].value : nodes_[0].value;
    }
    std::atomic<std::uint64_t> const& root() const noexcept {
        return levels_.empty() ? leaves_[0].value : nodes_[0].value;
    }

    // Picks a position of `candidates` (a bit mask over `positions` positions): the first at or
    // after `from` inside `preferred`, else the first inside `preferred`, else the first at or
    // after the end of `preferred`, else the first. candidates must be non-zero.
    static unsigned pick(std::uint64_t candidates, std::uint64_t preferred, unsigned from) noexcept;

    // Mask of the positions (children or bits) of a node covering [node_first, node_first +
    // (positions << child_shift)) that intersect the lane; all ones when the lane misses it.
    static std::uint64_t lane_mask(lane l, std::size_t node_first, unsigned positions,
                                   unsigned child_shift) noexcept;

    std::size_t leaf_count_;
    std::vector<level> levels_;            // root first
    std::unique_ptr<padded_word[]> nodes_; // inner nodes, level by level, root first
    std::unique_ptr<padded_word[]> leaves_;
};

// ---- hot paths, inline ---------------------------------------------------------------------

inline bool signal_tree::set(std::size_t index) noexcept {
    assert(index < capacity() && "signal_tree::set: index must be below capacity()");
    std::size_t child = index / bits_per_leaf;
    std::uint64_t const bit = std::uint64_t{1} << (index % bits_per_leaf);
    if (levels_.empty()) {
        // seq_cst: the leaf is the root here; empty() pairs with it Dekker-style (a blocking
        // group's waiter increments its count, then reads the root; the setter writes the root,
        // then reads the count). On x86 a locked RMW costs the same at any ordering.
        return (leaves_[0].value.fetch_or(bit, std::memory_order_seq_cst) & bit) == 0;
    }
    // release: pairs with the acquire fetch_and in select(), so what the setter wrote before
    // set() is visible to the thread that selects this slot.
    if ((leaves_[child].value.fetch_or(bit, std::memory_order_release) & bit) != 0) {
        return false; // already set: coalesced, nothing to publish
    }
    // Publish bottom-up: a child's counter is always incremented before its parent's.
    for (std::size_t i = levels_.size() - 1; i > 0; --i) {
        auto const& lv = levels_[i];
        auto const position =
            static_cast<unsigned>(child & ((std::size_t{1} << lv.fanout_shift) - 1));
        child >>= lv.fanout_shift;
        // release: pairs with the acquire compare-exchange in select(); a selector that reserves
        // this unit sees the child's increment made just before.
        nodes_[lv.first_node + child].value.fetch_add(lv.unit(position), std::memory_order_release);
    }
    auto const& top = levels_[0];
    // seq_cst: the root increment is the publishing step that empty() pairs with (see above);
    // it also has the release semantics the other levels have.
    nodes_[0].value.fetch_add(top.unit(static_cast<unsigned>(child)), std::memory_order_seq_cst);
    return true;
}

inline std::size_t signal_tree::select(std::size_t bias, lane preferred) noexcept {
    // relaxed: a cheap early-out only; the compare-exchange below is what orders.
    if (root().load(std::memory_order_relaxed) == 0) {
        return npos;
    }
    if (preferred.count != 0 &&
        (bias < preferred.first || bias - preferred.first >= preferred.count)) {
        bias = preferred.first;
    }
    std::size_t index = 0; // node index within the current level; becomes the leaf index
    for (auto const& lv : levels_) {
        auto& node = nodes_[lv.first_node + index].value;
        unsigned const fanout = 1U << lv.fanout_shift;
        std::size_t const node_first = index << (lv.child_shift + lv.fanout_shift);
        auto const from = static_cast<unsigned>((bias >> lv.child_shift) & (fanout - 1));
        std::uint64_t const in_lane = lane_mask(preferred, node_first, fanout, lv.child_shift);
        // relaxed: the value only seeds the compare-exchange, which re-reads on failure.
        std::uint64_t word = node.load(std::memory_order_relaxed);
        unsigned child = 0;
        for (;;) {
            if (word == 0) {
                // Only possible at the root (another selector took the last unit): by the
                // invariant above, a node below a reserved unit is never empty.
                assert(&lv == &levels_[0] && "signal_tree: reserved unit found an empty child");
                return npos;
            }
            child = pick(lv.non_zero(word), in_lane, from);
            // acquire: pairs with the release (root: seq_cst) fetch_add in set(); the counters and
            // bits below, published before that increment, are visible as we descend.
            if (node.compare_exchange_weak(word, word - lv.unit(child), std::memory_order_acquire,
                                           std::memory_order_relaxed)) {
                break;
            }
        }
        if (child != from) {
            // Deviated from the bias: aim at the first slot of the child taken (inside the lane
            // when the child overlaps it), which keeps the order cyclic.
            std::size_t const child_first = node_first + (std::size_t{child} << lv.child_shift);
            std::size_t const child_end = child_first + (std::size_t{1} << lv.child_shift);
            bias = child_first;
            if (preferred.count != 0 && preferred.first < child_end &&
                preferred.first + preferred.count > child_first && preferred.first > child_first) {
                bias = preferred.first;
            }
        }
        index = (index << lv.fanout_shift) + child;
    }
    auto& leaf = leaves_[index].value;
    std::size_t const leaf_first = index * bits_per_leaf;
    auto const from = static_cast<unsigned>(bias % bits_per_leaf);
    std::uint64_t const in_lane = lane_mask(preferred, leaf_first, bits_per_leaf, 0);
    // relaxed: seeds the pick; the fetch_and below is what orders and decides.
    std::uint64_t word = leaf.load(std::memory_order_relaxed);
    for (;;) {
        if (word == 0) {
            // Only possible when the leaf is the root (no inner levels).
            assert(levels_.empty() && "signal_tree: reserved unit found an empty leaf");
            return npos;
        }
        std::uint64_t const bit = std::uint64_t{1} << pick(word, in_lane, from);
        // acquire: pairs with the release fetch_or in set(): the setter's earlier writes are
        // visible to the caller that gets this slot.
        std::uint64_t const before = leaf.fetch_and(~bit, std::memory_order_acquire);
        if ((before & bit) != 0) {
            return leaf_first + static_cast<std::size_t>(std::countr_zero(bit));
        }
        word = before; // another selector took that bit first; pick again from what it left
    }
}

inline unsigned signal_tree::pick(std::uint64_t candidates, std::uint64_t preferred,
                                  unsigned from) noexcept {
    std::uint64_t const at_or_after = ~std::uint64_t{0} << from;
    if (std::uint64_t const m = candidates & preferred & at_or_after; m != 0) {
        return static_cast<unsigned>(std::countr_zero(m));
    }
    if (std::uint64_t const m = candidates & preferred; m != 0) {
        return static_cast<unsigned>(std::countr_zero(m));
    }
    // Outside the lane: continue cyclically from just past the lane's last position.
    auto const last = 63 - std::countl_zero(preferred);
    std::uint64_t const beyond = last == 63 ? 0 : ~std::uint64_t{0} << (last + 1);
    if (std::uint64_t const m = candidates & beyond; m != 0) {
        return static_cast<unsigned>(std::countr_zero(m));
    }
    return static_cast<unsigned>(std::countr_zero(candidates));
}

inline std::uint64_t signal_tree::lane_mask(lane l, std::size_t node_first, unsigned positions,
                                            unsigned child_shift) noexcept {
    std::size_t const span = std::size_t{positions} << child_shift;
    std::size_t const lane_end = l.first + l.count;
    if (l.count == 0 || lane_end <= node_first || l.first >= node_first + span) {
        return ~std::uint64_t{0};
    }
    std::size_t const lo = l.first > node_first ? (l.first - node_first) >> child_shift : 0;
    std::size_t const hi =
        ((lane_end < node_first + span ? lane_end : node_first + span) - node_first - 1) >>
        child_shift;
    std::size_t const width = hi - lo + 1;
    std::uint64_t const ones = width >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << width) - 1;
    return ones << lo;
}

} // namespace signet
