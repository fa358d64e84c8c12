#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

#include <signet/md/ascii_field.hpp>
#include <signet/md/big_endian.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

namespace signet::publisher::nasdaq {

using md::store_be16;
using md::store_be32;
using md::store_be48;
using md::store_be64;
using md::trim_padding;

namespace {

constexpr std::uint32_t tick = 100;           // one cent in ITCH price units
constexpr std::uint64_t max_time_step = 1000; // ns between messages, at most
// The mid wanders at most this many ticks from its anchor, and quotes sit at least one tick
// further out, so a bid never reaches an ask: the book never crosses, as on a real feed.
constexpr std::uint32_t max_drift_ticks = 2;
constexpr std::uint32_t min_quote_ticks = max_drift_ticks + 1;

constexpr std::array<std::string_view, 32> tickers = {
    "AAPL", "MSFT", "AMZN", "NVDA", "GOOGL", "META", "TSLA", "AVGO", "COST", "PEP",  "NFLX",
    "ADBE", "CSCO", "AMD",  "INTC", "QCOM",  "TXN",  "AMGN", "INTU", "HON",  "SBUX", "GILD",
    "MDLZ", "BKNG", "ADP",  "ISRG", "VRTX",  "REGN", "PYPL", "MU",   "LRCX", "ADI"};

constexpr std::string_view other_types = "HYLVWKJhQBINO";

void put(std::byte* p, char c) noexcept {
    *p = static_cast<std::byte>(c);
}

void put_text(std::byte* p, std::string_view text) noexcept {
    std::memcpy(p, text.data(), text.size());
}

} // namespace

itch_generator::itch_generator(itch_generator_options options)
    : options_(options)
    , rng_(options.seed)
    , time_(options.start_time) {
    if (options.symbols == 0 || options.symbols > 65535) {
        throw std::invalid_argument("itch_generator: symbols must be 1 to 65535");
    }
    if (options.max_live_orders == 0) {
        throw std::invalid_argument("itch_generator: max_live_orders must be at least 1");
    }
    symbols_.resize(options.symbols);
    anchors_.resize(options.symbols);
    mids_.resize(options.symbols);
    for (std::size_t i = 0; i < symbols_.size(); ++i) {
        symbols_[i].fill(' ');
        if (options.symbols <= tickers.size()) {
            std::copy(tickers[i].begin(), tickers[i].end(), symbols_[i].begin());
        } else {
            std::copy_n("SYM", 3, symbols_[i].begin()); // "SYM00001" ... "SYM65535"
            std::size_t number = i + 1;
            for (std::size_t d = 8; d-- > 3; number /= 10) {
                symbols_[i][d] = static_cast<char>('0' + number % 10);
            }
        }
        anchors_[i] = static_cast<std::uint32_t>(10 + uniform(491)) * 10'000; // $10 to $500
        mids_[i] = anchors_[i];
    }
    live_.reserve(options.max_live_orders);
}

std::uint64_t itch_generator::generated(char type) const noexcept {
    auto const index = static_cast<unsigned char>(type);
    return index < generated_.size() ? generated_[index] : 0;
}

std::string_view itch_generator::symbol(std::size_t index) const noexcept {
    return trim_padding(std::string_view(symbols_[index].data(), symbols_[index].size()));
}

std::uint64_t itch_generator::uniform(std::uint64_t n) noexcept {
    // Modulo bias is below 2^-40 for the small n used here; unlike the standard distributions,
    // this gives the same stream on every standard library.
    return rng_() % n;
}

bool itch_generator::chance(unsigned percent) noexcept {
    return uniform(100) < percent;
}

void itch_generator::close() noexcept {
    close_requested_ = true;
}

std::size_t itch_generator::next(std::span<std::byte> out) noexcept {
    if (out.size() < md::nasdaq::itch50::max_message_length || phase_ == phase::done) {
        return 0;
    }
    if (phase_ == phase::body &&
        (close_requested_ || (options_.messages != 0 && body_ >= options_.messages))) {
        phase_ = phase::closing;
        step_ = 0;
    }
    std::byte* const m = out.data();
    std::size_t n = 0;
    switch (phase_) {
    case phase::opening:
        n = system_event(m, "OSQ"[step_]);
        if (++step_ == 3) {
            phase_ = phase::directory;
            step_ = 0;
        }
        break;
    case phase::directory:
        n = stock_directory(m, step_);
        if (++step_ == symbols_.size()) {
            phase_ = phase::body;
            step_ = 0;
        }
        break;
    case phase::body:
        n = body_message(m);
        ++body_;
        break;
    case phase::closing:
        n = system_event(m, "MEC"[step_]);
        if (++step_ == 3) {
            phase_ = phase::done;
        }
        break;
    case phase::done:
        return 0;
    }
    ++generated_[static_cast<unsigned char>(m[0])];
    ++total_;
    time_ += 1 + uniform(max_time_step);
    return n;
}

std::size_t itch_generator::write_header(std::byte* m, char type, std::uint16_t locate) noexcept {
    put(m, type);
    store_be16(m + md::nasdaq::itch50::field::stock_locate, locate);
    store_be16(m + md::nasdaq::itch50::field::tracking_number, 0);
    store_be48(m + md::nasdaq::itch50::field::timestamp, time_);
    return md::nasdaq::itch50::message_length(type);
}

void itch_generator::put_stock(std::byte* p, std::size_t stock) const noexcept {
    std::memcpy(p, symbols_[stock].data(), symbols_[stock].size());
}

std::size_t itch_generator::system_event(std::byte* m, char code) noexcept {
    std::size_t const n = write_header(m, 'S', 0);
    put(m + md::nasdaq::itch50::field::event_code, code);
    return n;
}

std::size_t itch_generator::stock_directory(std::byte* m, std::size_t stock) noexcept {
    std::size_t const n = write_header(m, 'R', static_cast<std::uint16_t>(stock + 1));
    put_stock(m + 11, stock);
    put(m + 19, 'Q');        // market category: Nasdaq Global Select
    put(m + 20, 'N');        // financial status: normal
    store_be32(m + 21, 100); // round lot size
    put(m + 25, 'N');        // round lots only
    put(m + 26, 'C');        // issue classification: common stock
    put_text(m + 27, "Z ");  // issue sub-type
    put(m + 29, 'P');        // authenticity: production
    put(m + 30, 'N');        // short sale threshold
    put(m + 31, ' ');        // IPO flag
    put(m + 32, '1');        // LULD reference price tier
    put(m + 33, 'N');        // ETP flag
    store_be32(m + 34, 0);   // ETP leverage factor
    put(m + 38, 'N');        // inverse indicator
    return n;
}

std::uint32_t itch_generator::quote_price(std::size_t stock, char side) noexcept {
    // Most quotes sit within a few ticks of the mid, some further out.
    auto const ticks =
        static_cast<std::uint32_t>(min_quote_ticks + uniform(5) + (chance(20) ? uniform(40) : 0));
    std::uint32_t const mid = mids_[stock];
    return side == 'B' ? mid - ticks * tick : mid + ticks * tick;
}

void itch_generator::book_change(live_order const& o, std::int64_t shares,
                                 std::int32_t orders) const {
    if (options_.on_book_change) {
        options_.on_book_change({total_ + 1, o.locate, o.side, o.price, shares, orders});
    }
}

void itch_generator::remove_live(std::size_t index) noexcept {
    live_[index] = live_.back();
    live_.pop_back();
}

std::size_t itch_generator::body_message(std::byte* m) noexcept {
    if (live_.empty()) {
        return add_order(m); // max_live_orders >= 1, so there is room
    }
    bool const room = live_.size() < options_.max_live_orders;
    unsigned const add_percent = !room ? 0 : live_.size() < options_.target_live_orders ? 55 : 25;
    if (chance(add_percent)) {
        return add_order(m);
    }
    std::uint64_t const r = uniform(100);
    if (r < 22) {
        return execute(m, false);
    }
    if (r < 27) {
        return execute(m, true);
    }
    if (r < 42) {
        return cancel(m);
    }
    if (r < 77) {
        return remove(m);
    }
    if (r < 92) {
        return replace(m);
    }
    if (r < 97) {
        return trade(m);
    }
    return other(m);
}

std::size_t itch_generator::add_order(std::byte* m) noexcept {
    namespace f = md::nasdaq::itch50::field;
    auto const stock = static_cast<std::size_t>(uniform(symbols_.size()));
    if (chance(5)) { // the mid drifts a tick at a time, within its band
        std::uint32_t const low = anchors_[stock] - max_drift_ticks * tick;
        std::uint32_t const high = anchors_[stock] + max_drift_ticks * tick;
        mids_[stock] =
            chance(50) ? std::min(high, mids_[stock] + tick) : std::max(low, mids_[stock] - tick);
    }
    bool const mpid = chance(10);
    char const side = chance(50) ? 'B' : 'S';
    auto const shares =
        static_cast<std::uint32_t>(chance(10) ? 1 + uniform(99) : 100 * (1 + uniform(10)));
    std::uint32_t const price = quote_price(stock, side);
    auto const locate = static_cast<std::uint16_t>(stock + 1);
    std::uint64_t const ref = next_ref_++;

    std::size_t const n = write_header(m, mpid ? 'F' : 'A', locate);
    store_be64(m + f::order_ref, ref);
    put(m + f::side, side);
    store_be32(m + f::shares, shares);
    put_stock(m + f::order_stock, stock);
    store_be32(m + f::price, price);
    if (mpid) { // a few firms, by reference: no random draw, so streams stay as they were
        static constexpr std::array<char const*, 4> firms{"GSCO", "MSCO", "UBSS", "NITE"};
        put_text(m + f::attribution, firms[ref % firms.size()]);
    }
    live_.push_back(live_order{ref, shares, price, locate, side}); // reserved: never reallocates
    book_change(live_.back(), shares, 1);
    return n;
}

std::size_t itch_generator::execute(std::byte* m, bool with_price) noexcept {
    namespace f = md::nasdaq::itch50::field;
    auto const index = static_cast<std::size_t>(uniform(live_.size()));
    live_order& o = live_[index];
    auto const executed = static_cast<std::uint32_t>(
        o.shares == 1 || chance(50) ? o.shares : 1 + uniform(o.shares - 1));
    std::size_t const n = write_header(m, with_price ? 'C' : 'E', o.locate);
    store_be64(m + f::order_ref, o.ref);
    store_be32(m + f::executed_shares, executed);
    store_be64(m + f::match_number, next_match_++);
    if (with_price) {
        put(m + f::printable, 'Y');
        store_be32(m + f::execution_price, o.price);
    }
    o.shares -= executed;
    book_change(o, -std::int64_t{executed}, o.shares == 0 ? -1 : 0);
    if (o.shares == 0) {
        remove_live(index);
    }
    return n;
}

std::size_t itch_generator::cancel(std::byte* m) noexcept {
    namespace f = md::nasdaq::itch50::field;
    auto const index = static_cast<std::size_t>(uniform(live_.size()));
    live_order& o = live_[index];
    auto const cancelled =
        static_cast<std::uint32_t>(chance(30) ? o.shares : 1 + uniform(o.shares));
    std::size_t const n = write_header(m, 'X', o.locate);
    store_be64(m + f::order_ref, o.ref);
    store_be32(m + f::cancelled_shares, cancelled);
    o.shares -= cancelled;
    book_change(o, -std::int64_t{cancelled}, o.shares == 0 ? -1 : 0);
    if (o.shares == 0) {
        remove_live(index);
    }
    return n;
}

std::size_t itch_generator::remove(std::byte* m) noexcept {
    auto const index = static_cast<std::size_t>(uniform(live_.size()));
    std::size_t const n = write_header(m, 'D', live_[index].locate);
    store_be64(m + md::nasdaq::itch50::field::order_ref, live_[index].ref);
    book_change(live_[index], -std::int64_t{live_[index].shares}, -1);
    remove_live(index);
    return n;
}

std::size_t itch_generator::replace(std::byte* m) noexcept {
    namespace f = md::nasdaq::itch50::field;
    live_order& o = live_[static_cast<std::size_t>(uniform(live_.size()))];
    std::uint64_t const new_ref = next_ref_++;
    auto const shares = static_cast<std::uint32_t>(100 * (1 + uniform(10)));
    std::uint32_t const price = quote_price(o.locate - 1U, o.side);
    std::size_t const n = write_header(m, 'U', o.locate);
    store_be64(m + f::original_ref, o.ref);
    store_be64(m + f::new_ref, new_ref);
    store_be32(m + f::new_shares, shares);
    store_be32(m + f::new_price, price);
    book_change(o, -std::int64_t{o.shares}, -1);
    o.ref = new_ref;
    o.shares = shares;
    o.price = price;
    book_change(o, shares, 1);
    return n;
}

std::size_t itch_generator::trade(std::byte* m) noexcept {
    namespace f = md::nasdaq::itch50::field;
    auto const stock = static_cast<std::size_t>(uniform(symbols_.size()));
    std::size_t const n = write_header(m, 'P', static_cast<std::uint16_t>(stock + 1));
    store_be64(m + f::order_ref, 0); // non-displayed orders carry no reference
    put(m + f::side, chance(50) ? 'B' : 'S');
    store_be32(m + f::shares, static_cast<std::uint32_t>(100 * (1 + uniform(5))));
    put_stock(m + f::order_stock, stock);
    store_be32(m + f::price, mids_[stock]);
    store_be64(m + f::trade_match, next_match_++);
    return n;
}

std::size_t itch_generator::other(std::byte* m) noexcept {
    char const type = other_types[static_cast<std::size_t>(uniform(other_types.size()))];
    auto const stock = static_cast<std::size_t>(uniform(symbols_.size()));
    auto const locate = static_cast<std::uint16_t>(stock + 1);
    std::uint32_t const mid = mids_[stock];
    bool const market_wide = type == 'V' || type == 'W';
    std::size_t const n = write_header(m, type, market_wide ? 0 : locate);
    if (n > md::nasdaq::itch50::header_length) { // always: every type in other_types has a body
        std::memset(m + md::nasdaq::itch50::header_length, ' ',
                    n - md::nasdaq::itch50::header_length);
    }
    switch (type) {
    case 'H': // stock trading action: trading
        put_stock(m + 11, stock);
        put(m + 19, 'T');
        break;
    case 'Y': // Reg SHO: no price test in effect
        put_stock(m + 11, stock);
        put(m + 19, '0');
        break;
    case 'L': // market participant position
        put_text(m + 11, "NITE");
        put_stock(m + 15, stock);
        put_text(m + 23, "YNA");
        break;
    case 'V': // MWCB decline levels (8 decimals)
        store_be64(m + 11, 3'900'00000000ULL);
        store_be64(m + 19, 3'600'00000000ULL);
        store_be64(m + 27, 3'200'00000000ULL);
        break;
    case 'W': // MWCB status: level 1 breached
        put(m + 11, '1');
        break;
    case 'K': // IPO quoting period update
        put_stock(m + 11, stock);
        store_be32(m + 19, 36'000);
        put(m + 23, 'A');
        store_be32(m + 24, mid);
        break;
    case 'J': // LULD auction collar
        put_stock(m + 11, stock);
        store_be32(m + 19, mid);
        store_be32(m + 23, mid + mid / 10);
        store_be32(m + 27, mid - mid / 10);
        store_be32(m + 31, 0);
        break;
    case 'h': // operational halt: resumed
        put_stock(m + 11, stock);
        put(m + 19, 'Q');
        put(m + 20, 'T');
        break;
    case 'Q': // cross trade
        store_be64(m + 11, 100 * (1 + uniform(1000)));
        put_stock(m + 19, stock);
        store_be32(m + 27, mid);
        store_be64(m + 31, next_match_++);
        put(m + 39, 'O');
        break;
    case 'B': // broken trade: an earlier match
        store_be64(m + 11, next_match_ > 1 ? 1 + uniform(next_match_ - 1) : 1);
        break;
    case 'I': // net order imbalance indicator
        store_be64(m + 11, 100 * uniform(1000));
        store_be64(m + 19, 100 * uniform(100));
        put(m + 27, chance(50) ? 'B' : 'S');
        put_stock(m + 28, stock);
        store_be32(m + 36, mid);
        store_be32(m + 40, mid);
        store_be32(m + 44, mid);
        put(m + 48, 'C');
        put(m + 49, 'L');
        break;
    case 'N': // retail price improvement indicator
        put_stock(m + 11, stock);
        put(m + 19, 'B');
        break;
    case 'O': // direct listing with capital raise price discovery
        put_stock(m + 11, stock);
        put(m + 19, 'Y');
        store_be32(m + 20, mid - mid / 5);
        store_be32(m + 24, mid + mid / 5);
        store_be32(m + 28, mid);
        store_be64(m + 32, time_);
        store_be32(m + 40, mid - mid / 10);
        store_be32(m + 44, mid + mid / 10);
        break;
    default:
        break;
    }
    return n;
}

} // namespace signet::publisher::nasdaq
