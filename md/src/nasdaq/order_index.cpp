#include <algorithm>
#include <bit>
#include <cstring>
#include <stdexcept>

#include <signet/md/nasdaq/detail/order_index.hpp>

namespace signet::md::nasdaq::detail {

order_index::order_index(std::size_t max_orders, std::size_t max_pages)
    : table_(max_orders) // validates max_orders
    , max_pages_(max_pages) {
    if (max_pages == 0 || max_pages > (std::size_t{1} << 16)) {
        throw std::invalid_argument("itch_order_book: index pages must be 1 to 65536");
    }
    // Twice the pages (so that pages in use rarely share an entry), at most max_directory.
    directory_.resize(std::min(max_directory, 2 * std::bit_ceil(max_pages)));
    directory_mask_ = directory_.size() - 1;
    // Not initialised: the kernel maps these pages only when acquire() first clears them.
    page_memory_ = std::make_unique_for_overwrite<order_record[]>(max_pages * page_size);
    free_pages_.reserve(max_pages);
}

order_record* order_index::find_in_table(std::uint64_t ref) noexcept {
    order_slot* const slot = table_.find(ref);
    return slot == nullptr ? nullptr : &slot->order;
}

bool order_index::acquire(entry& e, std::uint64_t page) noexcept {
    std::size_t index = 0;
    if (!free_pages_.empty()) {
        index = free_pages_.back();
        free_pages_.pop_back(); // reserved for max_pages: never reallocates
    } else if (pages_touched_ < max_pages_) {
        index = pages_touched_++;
    } else {
        return false;
    }
    e.page = page;
    e.records = &page_memory_[index * page_size];
    e.live = 0;
    std::memset(static_cast<void*>(e.records), 0, page_size * sizeof(order_record));
    ++pages_in_use_;
    return true;
}

void order_index::release(entry& e) noexcept {
    auto const index = static_cast<std::uint32_t>(
        static_cast<std::size_t>(e.records - page_memory_.get()) / page_size);
    free_pages_.push_back(index);
    e.page = no_page;
    e.records = nullptr;
    e.live = 0;
    --pages_in_use_;
}

void order_index::move_to_table(entry& e) noexcept {
    for (std::size_t i = 0; i < page_size && e.live != 0; ++i) {
        if (!e.records[i].live) {
            continue;
        }
        // The table holds at most size() <= capacity() orders: never nullptr.
        order_slot* const slot = table_.insert((e.page << page_bits) | i);
        slot->order = e.records[i];
        --e.live;
        ++e.in_table;
    }
    release(e);
}

std::pair<order_record*, bool> order_index::emplace_slow(std::uint64_t ref) noexcept {
    if (order_record* const existing = find(ref)) {
        return {existing, false};
    }
    if (size_ == table_.capacity()) {
        return {nullptr, false};
    }
    std::uint64_t const page = ref >> page_bits;
    entry& e = entry_of(page);
    if (e.page != page) {
        if (e.page != no_page && e.page < page) {
            move_to_table(e); // a newer page takes the entry
        }
        if (e.page != no_page || !acquire(e, page)) {
            // The entry holds a newer page (this reference is a stray), or no page is free.
            order_slot* const slot = table_.insert(ref); // size() < capacity(): never nullptr
            ++e.in_table;
            ++size_;
            return {&slot->order, true};
        }
    }
    return {claim_in_page(e, ref), true};
}

void order_index::page_thinned(entry& e) noexcept {
    if (e.live == 0) {
        release(e);
    } else if (e.page < head_page_) {
        move_to_table(e);
    }
}

void order_index::erase_from_table(std::uint64_t ref, entry& e) noexcept {
    // Not live in its page, so in the table (the caller found it).
    table_.erase(table_.find(ref));
    --e.in_table;
    --size_;
}

std::size_t order_index::resident_bytes() const noexcept {
    return pages_touched_ * page_size * sizeof(order_record) +
           table_.slot_count() * sizeof(order_slot) + directory_.size() * sizeof(entry);
}

bool order_index::check_invariants() const {
    std::size_t live = 0;
    std::size_t pages = 0;
    std::vector<std::uint32_t> in_table(directory_.size(), 0);
    for (std::size_t d = 0; d < directory_.size(); ++d) {
        entry const& e = directory_[d];
        if (e.page == no_page) {
            if (e.records != nullptr || e.live != 0) {
                return false;
            }
            continue;
        }
        ++pages;
        std::uint32_t page_live = 0;
        for (std::size_t i = 0; i < page_size; ++i) {
            page_live += e.records[i].live ? 1 : 0;
        }
        if ((e.page & directory_mask_) != d || page_live != e.live) {
            return false;
        }
        live += page_live;
    }
    bool duplicate = false;
    table_.for_each([&](std::uint64_t ref, order_record const&) {
        std::uint64_t const page = ref >> page_bits;
        entry const& e = directory_[page & directory_mask_];
        if (e.page == page && e.records[ref & (page_size - 1)].live) {
            duplicate = true; // in its page and in the table
        }
        ++in_table[page & directory_mask_];
    });
    for (std::size_t d = 0; d < directory_.size(); ++d) {
        if (in_table[d] != directory_[d].in_table) {
            return false;
        }
    }
    return !duplicate && pages == pages_in_use_ && pages_in_use_ <= pages_touched_ &&
           live + table_.size() == size_;
}

} // namespace signet::md::nasdaq::detail
