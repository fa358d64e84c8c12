// cme::mdp3_price_book: the MBP update rules level by level, refusals that mark a book for
// recovery, and a snapshot load. cme::mdp3_order_book: orders by id, its refusals, and the
// order budget its channel's books share.
#include <cstddef>
#include <cstdint>
#include <span>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/cme/mdp3_order_book.hpp>
#include <signet/md/cme/mdp3_price_book.hpp>
#include <signet/md/little_endian.hpp>

namespace {

namespace m3 = signet::md::cme;
using m3::book_update;
using m3::mdp3_price_level;
using m3::update_action;

m3::book_entry entry(update_action action, std::uint8_t level, std::int64_t price,
                     std::int32_t size, char type = m3::entry_type::bid, std::int32_t orders = 1) {
    m3::book_entry e;
    e.action = action;
    e.price_level = level;
    e.price = price;
    e.size = size;
    e.type = type;
    e.number_of_orders = orders;
    return e;
}

std::vector<mdp3_price_level> levels(std::span<mdp3_price_level const> side) {
    return {side.begin(), side.end()};
}

TEST(Mdp3Book, NewLevelsShiftWorseOnesDownAndDropBeyondTheDepth) {
    m3::mdp3_price_book book(3);
    EXPECT_EQ(book.apply(entry(update_action::new_level, 1, 100, 5)), book_update::applied);
    EXPECT_EQ(book.apply(entry(update_action::new_level, 1, 101, 6)), book_update::applied);
    EXPECT_EQ(book.apply(entry(update_action::new_level, 3, 99, 7)), book_update::applied);
    EXPECT_EQ(levels(book.bids()),
              (std::vector<mdp3_price_level>{{101, 6, 1}, {100, 5, 1}, {99, 7, 1}}));
    EXPECT_EQ(book.apply(entry(update_action::new_level, 2, 102, 8)), book_update::applied);
    EXPECT_EQ(levels(book.bids()),
              (std::vector<mdp3_price_level>{{101, 6, 1}, {102, 8, 1}, {100, 5, 1}})); // 99 dropped
    EXPECT_TRUE(book.offers().empty());
}

TEST(Mdp3Book, ChangeDeleteOverlayAndTheirRefusals) {
    m3::mdp3_price_book book(5);
    for (std::int64_t p : {103, 102, 101}) {
        ASSERT_EQ(book.apply(entry(update_action::new_level, 1, p, 1, m3::entry_type::offer)),
                  book_update::applied);
    }
    EXPECT_EQ(book.apply(entry(update_action::change, 2, 102, 9, m3::entry_type::offer, 4)),
              book_update::applied);
    EXPECT_EQ(book.offers()[1], (mdp3_price_level{102, 9, 4}));
    // A change may not move the price; a level the side lacks cannot change or go.
    EXPECT_EQ(book.apply(entry(update_action::change, 2, 105, 9, m3::entry_type::offer)),
              book_update::inconsistent);
    EXPECT_EQ(book.apply(entry(update_action::remove, 4, 0, 0, m3::entry_type::offer)),
              book_update::inconsistent);
    EXPECT_EQ(book.apply(entry(update_action::overlay, 3, 110, 2, m3::entry_type::offer)),
              book_update::applied);
    EXPECT_EQ(book.apply(entry(update_action::remove, 1, 101, 0, m3::entry_type::offer)),
              book_update::applied);
    EXPECT_EQ(levels(book.offers()), (std::vector<mdp3_price_level>{{102, 9, 4}, {110, 2, 1}}));
    // Levels 0 and beyond the depth, and a new level below a hole.
    EXPECT_EQ(book.apply(entry(update_action::new_level, 0, 1, 1)), book_update::inconsistent);
    EXPECT_EQ(book.apply(entry(update_action::new_level, 6, 1, 1)), book_update::inconsistent);
    EXPECT_EQ(book.apply(entry(update_action::new_level, 2, 1, 1)), book_update::inconsistent);
    EXPECT_TRUE(book.bids().empty());
}

TEST(Mdp3Book, DeleteThruDeleteFromAndBookReset) {
    m3::mdp3_price_book book(10);
    for (std::int64_t p : {10, 11, 12, 13}) {
        ASSERT_EQ(book.apply(entry(update_action::new_level, 1, p, 1)), book_update::applied);
        ASSERT_EQ(book.apply(entry(update_action::new_level, 1, p + 100, 1, m3::entry_type::offer)),
                  book_update::applied);
    }
    EXPECT_EQ(book.apply(entry(update_action::delete_from, 2, 0, 0)), book_update::applied);
    EXPECT_EQ(levels(book.bids()), (std::vector<mdp3_price_level>{{11, 1, 1}, {10, 1, 1}}));
    EXPECT_EQ(book.apply(entry(update_action::delete_thru, 1, 0, 0, m3::entry_type::offer)),
              book_update::applied);
    EXPECT_TRUE(book.offers().empty());
    EXPECT_EQ(book.apply(entry(update_action::new_level, 1, 1, 1, m3::entry_type::implied_bid)),
              book_update::ignored);
    EXPECT_EQ(book.apply(entry(update_action::new_level, 0, 0, 0, m3::entry_type::book_reset)),
              book_update::applied);
    EXPECT_TRUE(book.bids().empty());
}

TEST(Mdp3Book, LoadsASnapshotAndRefusesOneWithAHole) {
    // Entries of SnapshotFullRefresh52 (22 bytes each): price, size, orders, level, date,
    // flag, settl type, entry type.
    auto snapshot = [](std::vector<std::tuple<std::int64_t, std::int8_t, char>> const& rows) {
        std::vector<std::byte> bytes(rows.size() * 22);
        for (std::size_t i = 0; i < rows.size(); ++i) {
            std::byte* e = bytes.data() + i * 22;
            signet::md::store_le<std::int64_t>(e, std::get<0>(rows[i]));
            signet::md::store_le<std::int32_t>(e + 8, 3);
            signet::md::store_le<std::int32_t>(e + 12, 2);
            signet::md::store_le<std::int8_t>(e + 16, std::get<1>(rows[i]));
            e[21] = static_cast<std::byte>(std::get<2>(rows[i]));
        }
        return bytes;
    };
    auto const good = snapshot({{100, 1, '0'}, {99, 2, '0'}, {101, 1, '1'}, {7, 0, '6'}});
    m3::mdp3_price_book book(5);
    ASSERT_TRUE(book.assign_snapshot(m3::group<m3::snapshot_entry>(good, 22, 4, 13)));
    EXPECT_EQ(levels(book.bids()), (std::vector<mdp3_price_level>{{100, 3, 2}, {99, 3, 2}}));
    EXPECT_EQ(levels(book.offers()), (std::vector<mdp3_price_level>{{101, 3, 2}}));
    auto const hole = snapshot({{100, 1, '0'}, {98, 3, '0'}});
    EXPECT_FALSE(book.assign_snapshot(m3::group<m3::snapshot_entry>(hole, 22, 2, 13)));
    EXPECT_TRUE(book.bids().empty());
    EXPECT_TRUE(book.offers().empty());
}

m3::order_book_entry order(update_action action, std::uint64_t id, std::int64_t price = 100,
                           std::int32_t quantity = 1) {
    m3::order_book_entry e;
    e.action = action;
    e.order_id = id;
    e.priority = id;
    e.price = price;
    e.display_qty = quantity;
    e.type = m3::entry_type::bid;
    return e;
}

TEST(Mdp3OrderBook, OrdersByIdAndTheirRefusals) {
    m3::mdp3_order_book book;
    for (std::uint64_t id = 1; id <= 100; ++id) { // past the first tables: they grow
        ASSERT_EQ(book.apply(order(update_action::new_level, id, 100 + static_cast<int>(id))),
                  book_update::applied);
    }
    EXPECT_EQ(book.size(), 100U);
    EXPECT_EQ(book.apply(order(update_action::new_level, 7)), book_update::inconsistent);
    EXPECT_EQ(book.apply(order(update_action::change, 7, 555, 9)), book_update::applied);
    EXPECT_EQ(book.find(7)->price, 555);
    EXPECT_EQ(book.find(7)->quantity, 9);
    EXPECT_EQ(book.apply(order(update_action::remove, 7)), book_update::applied);
    EXPECT_EQ(book.find(7), nullptr);
    EXPECT_EQ(book.apply(order(update_action::remove, 7)), book_update::inconsistent);
    EXPECT_EQ(book.apply(order(update_action::change, 7)), book_update::inconsistent);
    auto const all = book.sorted();
    ASSERT_EQ(all.size(), 99U);
    EXPECT_EQ(all.front().first, 1U);
    EXPECT_EQ(all[6].first, 8U);
    EXPECT_EQ(all.back().first, 100U);
}

TEST(Mdp3OrderBook, ABudgetBoundsTheOrdersOfEveryBookSharingIt) {
    // Each book starts with 8 + 8 slots (its table and a snapshot's); one growth of the table
    // to 16 fits 24, the next (to 32) does not.
    m3::mdp3_order_budget budget{.limit = 24, .used = 0};
    m3::mdp3_order_book book(&budget);
    EXPECT_EQ(budget.used, 16U);
    for (std::uint64_t id = 1; id <= 16; ++id) {
        ASSERT_EQ(book.apply(order(update_action::new_level, id)), book_update::applied) << id;
    }
    EXPECT_EQ(budget.used, 24U);
    EXPECT_EQ(book.apply(order(update_action::new_level, 17)), book_update::full);
    EXPECT_EQ(book.size(), 16U);
    EXPECT_EQ(book.find(17), nullptr);
    // Room again once an order leaves: the table keeps its size.
    EXPECT_EQ(book.apply(order(update_action::remove, 3)), book_update::applied);
    EXPECT_EQ(book.apply(order(update_action::new_level, 17)), book_update::applied);
    EXPECT_EQ(budget.used, 24U);
    // A snapshot into the loading table: 8 orders fit, the 9th would grow it past the budget.
    book.begin_load();
    for (std::uint64_t id = 1; id <= 8; ++id) {
        EXPECT_TRUE(book.add({.order_id = id,
                              .priority = id,
                              .price = 7,
                              .display_qty = 1,
                              .type = m3::entry_type::offer}));
    }
    EXPECT_FALSE(book.add({.order_id = 9,
                           .priority = 9,
                           .price = 7,
                           .display_qty = 1,
                           .type = m3::entry_type::offer}));
    // A book whose load completed within the budget swaps it in.
    m3::mdp3_order_budget roomy;
    m3::mdp3_order_book other(&roomy);
    other.begin_load();
    for (std::uint64_t id = 1; id <= 40; ++id) {
        EXPECT_TRUE(other.add({.order_id = id,
                               .priority = id,
                               .price = 7,
                               .display_qty = 1,
                               .type = m3::entry_type::offer}));
    }
    other.commit_load();
    EXPECT_EQ(other.size(), 40U);
    EXPECT_EQ(other.find(40)->side, m3::entry_type::offer);
}

} // namespace
