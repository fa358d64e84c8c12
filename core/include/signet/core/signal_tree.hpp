#pragma once

// signal_tree: a set of "signals" (one bit each) that many threads set and select concurrently.
//
// What it is
//   Leaves are 64-bit words holding one bit per slot. Above them sit summary levels: 64-bit
//   words holding one bit per child ("this child may hold a set bit"), 64 children per word,
//   up to a single root word. A summary bit is written only when its child changes between
//   empty and non-empty, so setting a bit in a leaf that already holds one, or claiming some of
//   a leaf's bits, touches that leaf's cache line alone. Every word sits on its own cache line.
//
// Threading contract
//   set(), set_bits(), select(), claim() and empty() may be called from any number of threads.
//   set() / set_bits() are wait-free: one fetch_or on the leaf, plus, only when the leaf was
//   empty, at most one load and one fetch_or per summary level.
//   claim() is lock-free: plain loads down the summary levels and one fetch_and on the leaf. A
//   step repeats only when another thread changed the word in between (it claimed the same bits,
//   or the summary was stale and is repaired, see "Retraction").
//
// Use it for: "which of N long-lived things has work?" with N from tens to millions, when every
//   thing must be found fairly and a thing must never be handed to two selectors at once.
// Do not use it for: a queue of values (a set bit set again is a no-op: signals coalesce).
//
// Algorithm
//   set(i) / set_bits(leaf, bits):
//     1. fetch_or the bits into the leaf; bits that were set already coalesce.
//     2. Only if the leaf was empty before: publish upwards. At each summary level, load the
//        word; if our bit is already set, stop; else fetch_or it, and continue upwards only if
//        that word was empty before too.
//   claim(bias, lane, max):
//     1. Load the root. Zero: the tree is empty, return nothing.
//     2. At each summary level pick a set bit: the one for the child holding `bias` if set,
//        else the next set one cyclically (preferring the lane, see below); descend with a
//        plain load. A child that reads zero is stale: retract it (below) and start again.
//     3. At the leaf pick up to `max` set bits, the first at or after the bias cyclically, and
//        clear them with one fetch_and; the bits that were still set are ours. None (another
//        selector was faster): pick again from what the fetch_and returned.
//   Once a step deviates from the bias, the rest of the descent aims at the first slot of the
//   child taken, so the result starts at "the first set slot at or after bias", cyclically,
//   within the smallest subtree that holds any. With bias = last claimed slot + 1 that is
//   round-robin: every set slot is claimed within one sweep.
//
// Retraction (summaries are cleared lazily, by the selector that finds them stale)
//   Emptying a leaf does not clear its summary bit (a self-rescheduling batch refills it at
//   once). A selector that descends into a child reading zero retracts it:
//     R1. fetch_and its bit out of the parent word;
//     R2. re-load the child; non-zero: a setter filled it meanwhile, so publish it again as
//         set() does and return;
//     R3. if the parent word became zero by R1, retract the parent from its own parent too.
//
// Invariant (why no signal is lost)
//   I: a non-empty node has its bit set in its parent, except while a retraction of that node
//   is between R1 and R2 — and that retraction restores the bit in R2.
//   The only thing that can break I is a setter that fills an empty child C at the same time as
//   a selector retracts C. The setter does [fetch_or C; load parent]; the retractor does
//   [fetch_and parent; load C]. All four are sequentially consistent, so in their single total
//   order at least one of the two loads comes after the other thread's RMW (the Dekker /
//   store-buffer argument): either the setter sees its bit gone from the parent and sets it
//   again, or the retractor sees C non-empty in R2 and restores the bit. Both may happen; an
//   extra set summary bit is harmless (I allows stale ones: whoever descends into one retracts
//   it). The same argument holds level by level. Hence a signal is always reachable from the
//   root, or a retractor is in its window and makes it reachable before it selects again.
//   Never twice: a slot is handed out only by a fetch_and that saw its bit set, and only a set()
//   that saw it clear can set it again.
//
// Memory orders
//   Leaf fetch_or (set) is seq_cst: release for the setter's earlier writes (pairs with the
//   acquire of the claiming fetch_and), and part of the Dekker pair above. The claiming
//   fetch_and is acquire. Summary RMWs and the re-loads of R2 / step 2 of set() are seq_cst for
//   the Dekker pair; the descent loads are relaxed hints (a stale one costs a retraction, which
//   re-checks with seq_cst). On x86 every locked RMW is a full barrier and a seq_cst load is a
//   plain load, so these orders cost nothing extra there.
//
// Priority lanes
//   claim(bias, lane, max) prefers the slots of `lane` (a contiguous slot range): at every node
//   the children inside the lane are tried first (cyclically from the bias), then the others.
//   When the lane is empty the result is the fair choice made without a lane; bits taken from
//   outside the lane are claimed one at a time, so a lane's thread returns to its lane soon.
//
// Costs
//   Memory: one cache line (128 bytes on x86-64) per leaf and per summary word (capacity 512:
//   9 lines; 16384: 261; 2^20: 16645). Nothing allocates after construction.
//   set into a non-empty leaf: 1 RMW. claim: 1 RMW plus depth plain loads of summary words that
//   change rarely (shared read-only between threads). A leaf's empty/non-empty transition adds
//   one RMW per summary level that changes, which a steady stream of work never does.

#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include <signet/core/cache_line.hpp>

namespace signet {

/// A contiguous range of slots a thread prefers when it selects (see signal_tree::claim).
struct lane {
    std::size_t first = 0; ///< first slot of the lane
    std::size_t count = 0; ///< number of slots; 0 means "no preference"
};

class signal_tree {
public:
    static constexpr std::size_t npos = ~std::size_t{0};
    static constexpr std::size_t max_capacity = std::size_t{1} << 31;
    static constexpr std::size_t bits_per_leaf = 64;

    /// Bits claimed from one leaf: slot (leaf * 64 + b) for every set bit b of `bits`.
    struct claimed {
        std::size_t leaf = 0;
        std::uint64_t bits = 0; ///< 0: nothing was claimed (the tree was empty)
        [[nodiscard]] std::size_t first_slot() const noexcept {
            return leaf * bits_per_leaf + static_cast<std::size_t>(std::countr_zero(bits));
        }
    };

    /// Rounds capacity up to whole 64-bit leaves. Throws std::invalid_argument for 0 or a
    /// capacity above max_capacity.
    explicit signal_tree(std::size_t capacity);

    signal_tree(signal_tree const&) = delete;
    signal_tree& operator=(signal_tree const&) = delete;

    /// Number of slots (a multiple of 64).
    [[nodiscard]] std::size_t capacity() const noexcept { return leaf_count_ * bits_per_leaf; }

    /// Any thread; wait-free. Sets slot `index`; true if it was clear before (the signal is new),
    /// false if it was already set (coalesced). Everything the caller did before set() is
    /// visible to the thread whose claim returns this slot.
    bool set(std::size_t index) noexcept {
        assert(index < capacity() && "signal_tree::set: index must be below capacity()");
        std::uint64_t const bit = std::uint64_t{1} << (index % bits_per_leaf);
        return set_bits(index / bits_per_leaf, bit) != 0;
    }

    /// Any thread; wait-free. Sets several bits of one leaf in one RMW; returns the bits that
    /// were clear before (the new signals). Same visibility as set().
    std::uint64_t set_bits(std::size_t leaf, std::uint64_t bits) noexcept;

    /// Any thread; lock-free. Clears and returns up to `max` (1..64) set slots of one leaf,
    /// starting at the first set slot at or after `bias` cyclically (within the smallest
    /// non-empty subtree), preferring `preferred`; bits == 0 when the tree is empty.
    [[nodiscard]] claimed claim(std::size_t bias, lane preferred, unsigned max) noexcept;

    /// Any thread; lock-free. Puts `back` (bits of `leaf` the caller claimed earlier; may be 0)
    /// into the leaf and claims the first set bit at or after position `from` of the same leaf,
    /// both in one RMW; returns that bit, or 0 when the leaf has none at or after `from` (then
    /// only `back` was put, and the caller claims from the tree). Chains claims along a leaf.
    [[nodiscard]] std::uint64_t swap_claim(std::size_t leaf, std::uint64_t back,
                                           unsigned from) noexcept;

    /// Any thread; lock-free. claim() of a single slot; npos when the tree is empty.
    [[nodiscard]] std::size_t select(std::size_t bias) noexcept { return select(bias, lane{}); }
    [[nodiscard]] std::size_t select(std::size_t bias, lane preferred) noexcept {
        claimed const c = claim(bias, preferred, 1);
        return c.bits == 0 ? npos : c.first_slot();
    }

    /// Any thread. True when the root shows no set child. Sequentially consistent, so it can be
    /// paired Dekker-style with a waiter count (see blocking_work_contract_group). A stale
    /// summary may make it report false for an empty tree until a claim() retracts it.
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
    // alignas: one word per cache line, so threads setting or claiming in different subtrees
    // never false-share.
    struct alignas(destructive_interference_size) padded_word {
        std::atomic<std::uint64_t> value{0};
    };
    static_assert(sizeof(padded_word) == destructive_interference_size);

    // Summary levels, root first. Level k's word j summarizes words 64j..64j+63 of level k+1
    // (the last summary level summarizes the leaves).
    struct level {
        std::size_t first_node; // index of this level's first word in nodes_
        unsigned child_shift;   // log2(slots covered by one child bit)
    };

    std::atomic<std::uint64_t>& root() noexcept {
        return levels_.empty() ? leaves_[0].value : nodes_[0].value;
    }
    std::atomic<std::uint64_t> const& root() const noexcept {
        return levels_.empty() ? leaves_[0].value : nodes_[0].value;
    }

    // The word at depth `depth` (0 = root; levels_.size() = the leaves), index `index`.
    std::atomic<std::uint64_t>& word(std::size_t depth, std::size_t index) noexcept {
        return depth == levels_.size() ? leaves_[index].value
                                       : nodes_[levels_[depth].first_node + index].value;
    }

    // Marks the word (depth, index), just made non-empty by the caller, in its ancestors.
    void publish_up(std::size_t depth, std::size_t index) noexcept;
    // Retraction R1-R3 of the word (depth, index), found empty by the caller.
    void retract(std::size_t depth, std::size_t index) noexcept;

    // Picks the positions of `candidates` (a bit mask) to take: the first non-empty class of
    // [inside `preferred` at or after `from`, inside `preferred`, after the end of `preferred`,
    // anywhere], then its lowest `max` bits (1 bit outside the lane). candidates != 0.
    static std::uint64_t pick(std::uint64_t candidates, std::uint64_t preferred, unsigned from,
                              unsigned max) noexcept;

    // Mask of the positions (children or bits) of a word covering [node_first, node_first +
    // (64 << child_shift)) that intersect the lane; all ones when the lane misses it.
    static std::uint64_t lane_mask(lane l, std::size_t node_first, unsigned child_shift) noexcept;

    std::size_t leaf_count_;
    std::vector<level> levels_;            // summary levels, root first; empty: one leaf
    std::unique_ptr<padded_word[]> nodes_; // summary words, level by level, root first
    std::unique_ptr<padded_word[]> leaves_;
};

// ---- hot paths, inline ---------------------------------------------------------------------

inline std::uint64_t signal_tree::set_bits(std::size_t leaf, std::uint64_t bits) noexcept {
    assert(leaf < leaf_count_ && "signal_tree::set_bits: leaf out of range");
    // seq_cst: release for the setter's writes (pairs with the acquire fetch_and in claim()),
    // and the first half of the Dekker pair with retract() (see "Invariant"); with a single leaf
    // it is the root, which empty() pairs with.
    std::uint64_t const before = leaves_[leaf].value.fetch_or(bits, std::memory_order_seq_cst);
    if (before == 0 && !levels_.empty()) {
        publish_up(levels_.size(), leaf);
    }
    return bits & ~before;
}

inline std::uint64_t signal_tree::swap_claim(std::size_t leaf, std::uint64_t back,
                                             unsigned from) noexcept {
    assert(leaf < leaf_count_ && "signal_tree::swap_claim: leaf out of range");
    auto& word = leaves_[leaf].value;
    std::uint64_t const at_or_after = from >= 64 ? 0 : ~std::uint64_t{0} << from;
    // relaxed: seeds the compare-exchange, which decides.
    std::uint64_t w = word.load(std::memory_order_relaxed);
    for (;;) {
        std::uint64_t const candidates = w & at_or_after & ~back;
        if (candidates == 0) {
            if (back != 0) {
                set_bits(leaf, back); // nothing to chain to: a plain set (publishes upwards)
            }
            return 0;
        }
        std::uint64_t const want = candidates & (~candidates + 1); // the lowest one
        // seq_cst: release for the run of the `back` contracts (pairs with the next claimer's
        // acquire), acquire for the setter of `want` (pairs with set_bits()), and the first half
        // of a blocking group's Dekker pair (the caller then reads its waiter count, as after
        // set_bits()). The leaf holds a bit before and after, so no summary bit changes.
        if (word.compare_exchange_weak(w, (w | back) & ~want, std::memory_order_seq_cst,
                                       std::memory_order_relaxed)) {
            return want;
        }
    }
}

inline void signal_tree::publish_up(std::size_t depth, std::size_t index) noexcept {
    while (depth > 0) {
        --depth;
        std::uint64_t const bit = std::uint64_t{1} << (index % 64);
        index /= 64;
        auto& parent = word(depth, index);
        // seq_cst: second half of the setter's Dekker pair with retract(): a set bit seen here
        // was set after (or not cleared by) any retraction whose re-load missed our child.
        if ((parent.load(std::memory_order_seq_cst) & bit) != 0) {
            return;
        }
        // seq_cst: pairs with retract()'s fetch_and and re-load (see "Invariant").
        if (parent.fetch_or(bit, std::memory_order_seq_cst) != 0) {
            return; // the parent was non-empty: its own bit is published (invariant I)
        }
    }
}

inline signal_tree::claimed signal_tree::claim(std::size_t bias, lane preferred,
                                               unsigned max) noexcept {
    assert(max >= 1 && max <= 64 && "signal_tree::claim: max must be 1..64");
    if (preferred.count != 0 &&
        (bias < preferred.first || bias - preferred.first >= preferred.count)) {
        bias = preferred.first;
    }
    for (;;) {
        // relaxed: a hint; an empty root ends the claim (a racy "nothing scheduled"), anything
        // else is re-validated by the leaf's fetch_and.
        if (root().load(std::memory_order_relaxed) == 0) {
            return {};
        }
        std::size_t b = bias;  // the slot this descent aims at
        bool on_bias = true;   // the descent has not deviated from `b` yet
        std::size_t index = 0; // word index within the current depth; becomes the leaf index
        bool restart = false;
        for (std::size_t depth = 0; depth <= levels_.size() && !restart; ++depth) {
            bool const leaf = depth == levels_.size();
            unsigned const child_shift = leaf ? 0 : levels_[depth].child_shift;
            std::size_t const node_first = index << (child_shift + 6);
            auto const from = static_cast<unsigned>((b >> child_shift) & 63);
            // relaxed: a hint (see "Memory orders"); a stale summary bit is caught one level
            // down, a leaf's bits are re-validated by the fetch_and.
            std::uint64_t w = word(depth, index).load(std::memory_order_relaxed);
            if (on_bias && preferred.count == 0 && depth > 0 && (w >> from) == 0) {
                // Nothing at or after the bias below this node: continue with the next node
                // rather than wrapping inside this one, so the order is cyclic over the whole
                // tree (two workers sweeping the same region never turn each other back).
                std::size_t const node_end = node_first + (std::size_t{64} << child_shift);
                bias = node_end >= capacity() ? 0 : node_end;
                // (depth > 0 here, so the second test is always true; removing it, or the
                // restart flag, measurably slowed the 1-thread benchmark through code layout:
                // 185 -> 150 M tasks/s, so the code stays as measured.)
                if (w == 0 && !(leaf && levels_.empty())) {
                    retract(depth, index); // stale summary bit above us
                }
                restart = true;
                break;
            }
            std::uint64_t const in_lane = lane_mask(preferred, node_first, child_shift);
            if (!leaf) {
                if (w == 0) {
                    if (depth > 0) {
                        retract(depth, index); // our parent's bit for this word is stale
                    }
                    restart = true;
                    break;
                }
                auto const child =
                    static_cast<unsigned>(std::countr_zero(pick(w, in_lane, from, 1)));
                if (child != from) {
                    // Deviated from the bias: aim at the first slot of the child taken (inside
                    // the lane when the child overlaps it), which keeps the order cyclic.
                    on_bias = false;
                    std::size_t const child_first =
                        node_first + (std::size_t{child} << child_shift);
                    std::size_t const child_end = child_first + (std::size_t{1} << child_shift);
                    b = child_first;
                    if (preferred.count != 0 && preferred.first < child_end &&
                        preferred.first + preferred.count > child_first &&
                        preferred.first > child_first) {
                        b = preferred.first;
                    }
                }
                index = index * 64 + child;
                continue;
            }
            auto& leaf_word = leaves_[index].value;
            while (w != 0) {
                std::uint64_t const want = pick(w, in_lane, from, max);
                // acquire: pairs with the seq_cst (release) fetch_or in set_bits(): the
                // setters' earlier writes are visible to the caller that gets these slots.
                std::uint64_t const before = leaf_word.fetch_and(~want, std::memory_order_acquire);
                if (std::uint64_t const got = before & want; got != 0) {
                    return {index, got};
                }
                w = before; // other selectors took those bits first; pick again from the rest
            }
            if (levels_.empty()) {
                return {}; // the leaf is the root: empty
            }
            retract(depth, index);
            restart = true;
        }
    }
}

inline std::uint64_t signal_tree::pick(std::uint64_t candidates, std::uint64_t preferred,
                                       unsigned from, unsigned max) noexcept {
    std::uint64_t const at_or_after = ~std::uint64_t{0} << from;
    std::uint64_t m = candidates & preferred & at_or_after;
    if (m == 0) {
        m = candidates & preferred;
    }
    if (m == 0) {
        // Outside the lane: continue cyclically from just past the lane's last position, one
        // bit at a time.
        max = 1;
        auto const last = 63 - std::countl_zero(preferred);
        std::uint64_t const beyond = last == 63 ? 0 : ~std::uint64_t{0} << (last + 1);
        m = candidates & beyond;
        if (m == 0) {
            m = candidates;
        }
    }
    if (static_cast<unsigned>(std::popcount(m)) <= max) {
        return m;
    }
    std::uint64_t taken = 0;
    for (unsigned i = 0; i < max; ++i) {
        std::uint64_t const low = m & (~m + 1); // lowest set bit
        taken |= low;
        m ^= low;
    }
    return taken;
}

inline std::uint64_t signal_tree::lane_mask(lane l, std::size_t node_first,
                                            unsigned child_shift) noexcept {
    std::size_t const span = std::size_t{64} << child_shift;
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
