#pragma once

// order_index: the order book's map from ITCH order reference to order record, built for the
// way ITCH assigns references: in increasing order through the day, so orders added close in
// time sit close in reference space.
//
// Design. References are cut into pages of page_size (4096) consecutive numbers. A page is a
// plain array of 4096 order records (64 KiB), found through a direct-mapped directory of
// max_directory (4096) entries (fewer for a smaller max_pages): page number mod its size. An
// add writes the record next to the
// previous add's (no hash, no probe: the same cache lines, and the hardware prefetcher follows
// the sequence); a lookup is one directory entry and one record. What does not fit a page
// goes to a fallback order_table (open addressing, max_orders capacity):
//   - a page falls sparse: fewer than page_size / 64 live records while it is older than the
//     page being filled. Its live records move to the table and the page is freed, so a few
//     long-lived orders never pin 64 KiB each;
//   - two pages a directory apart (16.7M references) meet in one entry: the older moves to
//     the table;
//   - every page is in use (max_pages): new references go to the table;
//   - a reference older than the page its entry holds (a stray, or a forged reference).
// A page whose last record goes is freed, unless it is the page being filled. Each directory
// entry counts the table's orders whose page maps to it; a lookup probes the table only when
// that count is not 0, so a new reference costs no probe in the steady state.
//
// Memory (stated per live order and bounded): pages come from one allocation of max_pages * 64
// KiB made at construction and never touched until a page is first used (so the resident size
// is the high-water mark of pages in use); the table is 48 bytes per order of max_orders,
// zero-filled at construction; the directory 96 KiB. A page older than the one being filled
// holds at least 64 live orders, so it costs at most 1 KiB per live order; when orders leave
// uniformly at random among N live (the generator's model), about N * ln(64) / 4096 pages are
// in use: 66 bytes per live order (33 MiB for 500k).
//
// Invariants: size() is the number of live records (pages + table); a reference is in at most
// one place; every table order is counted in the in_table of its page's entry. Not
// thread-safe; nothing here allocates after construction and nothing throws after it.

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include <signet/md/nasdaq/detail/order_table.hpp>

namespace signet::md::nasdaq::detail {

class order_index {
public:
    static constexpr unsigned page_bits = 12;
    static constexpr std::size_t page_size = std::size_t{1} << page_bits;
    static constexpr std::size_t max_directory = 4096;
    static constexpr std::uint32_t sparse_below = page_size / 64;

    /// Throws std::invalid_argument unless 1 <= max_orders <= 2^31 and 1 <= max_pages <= 2^16.
    order_index(std::size_t max_orders, std::size_t max_pages);

    [[nodiscard]] order_record* find(std::uint64_t ref) noexcept {
        std::uint64_t const page = ref >> page_bits;
        entry& e = directory_[page & directory_mask_];
        if (e.page == page) {
            order_record* const record = &e.records[ref & (page_size - 1)];
            if (record->live) {
                return record;
            }
        }
        return e.in_table == 0 ? nullptr : find_in_table(ref);
    }
    [[nodiscard]] order_record const* find(std::uint64_t ref) const noexcept {
        return const_cast<order_index*>(this)->find(ref);
    }
    /// The record of `ref`: {its record, false} if it is live; else a new live record (zero
    /// otherwise), {record, true}; {nullptr, false} when size() == capacity().
    [[nodiscard]] std::pair<order_record*, bool> emplace(std::uint64_t ref) noexcept {
        std::uint64_t const page = ref >> page_bits;
        entry& e = entry_of(page);
        if (e.page == page && e.in_table == 0) { // the common case: the page being filled
            order_record* const record = &e.records[ref & (page_size - 1)];
            if (record->live) {
                return {record, false};
            }
            if (size_ != table_.capacity()) {
                return {claim_in_page(e, ref), true};
            }
        }
        return emplace_slow(ref);
    }
    /// Requires find(ref) != nullptr. Frees its record; every order_record pointer is invalid
    /// afterwards (table slots move, pages move to the table).
    void erase(std::uint64_t ref) noexcept {
        std::uint64_t const page = ref >> page_bits;
        entry& e = entry_of(page);
        if (e.page == page) {
            order_record& record = e.records[ref & (page_size - 1)];
            if (record.live) {
                record.live = false;
                --e.live;
                --size_;
                if (page != head_page_ && e.live < sparse_below) {
                    page_thinned(e);
                }
                return;
            }
        }
        erase_from_table(ref, e);
    }
    /// Starts loading the record of `ref` into the cache (a hint: no effect on the contents).
    void prefetch(std::uint64_t ref) const noexcept {
        std::uint64_t const page = ref >> page_bits;
        entry const& e = directory_[page & directory_mask_];
        if (e.page == page) {
            __builtin_prefetch(&e.records[ref & (page_size - 1)]);
        }
    }

    [[nodiscard]] std::size_t size() const noexcept { return size_; }
    [[nodiscard]] std::size_t capacity() const noexcept { return table_.capacity(); }
    /// Pages holding orders now, and at most so far (the resident page memory).
    [[nodiscard]] std::size_t pages_in_use() const noexcept { return pages_in_use_; }
    [[nodiscard]] std::size_t pages_high_water() const noexcept { return pages_touched_; }
    /// Orders in the fallback table.
    [[nodiscard]] std::size_t table_size() const noexcept { return table_.size(); }
    /// Bytes resident for orders: pages used so far, the table and the directory.
    [[nodiscard]] std::size_t resident_bytes() const noexcept;

    /// Calls f(ref, order_record const&) for every live order.
    template <typename F>
    void for_each(F&& f) const {
        for (entry const& e : directory_) {
            if (e.page == no_page) {
                continue;
            }
            for (std::size_t i = 0; i < page_size; ++i) {
                if (e.records[i].live) {
                    f((e.page << page_bits) | i, e.records[i]);
                }
            }
        }
        table_.for_each(f);
    }
    /// The counts above agree with a walk over every page and the table. Tests and fuzzers.
    [[nodiscard]] bool check_invariants() const;

private:
    static constexpr std::uint64_t no_page = std::numeric_limits<std::uint64_t>::max();

    struct entry {
        std::uint64_t page = no_page;    ///< page number held, or no_page
        order_record* records = nullptr; ///< its page_size records
        std::uint32_t live = 0;          ///< live records in the page
        std::uint32_t in_table = 0;      ///< table orders whose page maps to this entry
    };

    [[nodiscard]] entry& entry_of(std::uint64_t page) noexcept {
        return directory_[page & directory_mask_];
    }
    [[nodiscard]] order_record* find_in_table(std::uint64_t ref) noexcept;
    /// Makes the record of `ref` in e's page (which holds ref's page) live and zero.
    order_record* claim_in_page(entry& e, std::uint64_t ref) noexcept {
        order_record* const record = &e.records[ref & (page_size - 1)];
        *record = order_record{};
        record->live = true;
        ++e.live;
        ++size_;
        head_page_ = e.page;
        return record;
    }
    [[nodiscard]] std::pair<order_record*, bool> emplace_slow(std::uint64_t ref) noexcept;
    void erase_from_table(std::uint64_t ref, entry& e) noexcept;
    /// A page other than the head fell below sparse_below: free it, or move it to the table.
    void page_thinned(entry& e) noexcept;
    /// Gives `e` a cleared page for `page`; false if every page is in use.
    bool acquire(entry& e, std::uint64_t page) noexcept;
    void release(entry& e) noexcept;
    /// Moves the page's live records to the table and frees the page.
    void move_to_table(entry& e) noexcept;

    std::unique_ptr<order_record[]> page_memory_; // max_pages * page_size, untouched until used
    std::vector<std::uint32_t> free_pages_;       // page indexes freed; reserved for max_pages
    std::vector<entry> directory_;
    order_table table_;
    std::size_t directory_mask_; // directory_.size() - 1
    std::size_t max_pages_;
    std::size_t pages_touched_ = 0; // pages [0, pages_touched_) have been used at least once
    std::size_t pages_in_use_ = 0;
    std::size_t size_ = 0;
    std::uint64_t head_page_ = 0; // the page of the latest add that went to a page
};

} // namespace signet::md::nasdaq::detail
