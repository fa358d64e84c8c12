#include <algorithm>
#include <cstring>

#include <signet/md/cme/mdp3.hpp>

namespace signet::md::cme {

namespace {

template <typename T>
T at(std::span<std::byte const> bytes, std::size_t offset) noexcept {
    return load_le<T>(bytes.data() + offset);
}

template <std::size_t N>
std::array<char, N> chars(std::span<std::byte const> bytes, std::size_t offset) noexcept {
    std::array<char, N> out{};
    std::memcpy(out.data(), bytes.data() + offset, N);
    return out;
}

/// Reads a group's dimension from the front of `rest` and its entries after it, and advances
/// `rest` past them. False when the dimension or the entries do not fit, or an entry is shorter
/// than the decoder reads.
template <typename Entry>
bool read_group(std::span<std::byte const>& rest, bool eight_byte_dimension, std::uint16_t version,
                group<Entry>& out) noexcept {
    std::size_t const dimension = eight_byte_dimension ? 8 : 3;
    if (rest.size() < dimension) {
        return false;
    }
    auto const block_length = at<std::uint16_t>(rest, 0);
    auto const count = at<std::uint8_t>(rest, eight_byte_dimension ? 7 : 2);
    std::size_t const bytes = std::size_t{block_length} * count;
    if ((count != 0 && block_length < Entry::min_block) || rest.size() - dimension < bytes) {
        return false;
    }
    out = group<Entry>(rest.subspan(dimension, bytes), block_length, count, version);
    rest = rest.subspan(dimension + bytes);
    return true;
}

/// The two-field root of the incremental refreshes (templates 37 and 46 to 51).
template <typename T>
bool read_event_root(message const& m, T& out) noexcept {
    if (m.root.size() < 9) {
        return false;
    }
    out.transact_time = at<std::uint64_t>(m.root, 0);
    out.match_event_indicator = at<std::uint8_t>(m.root, 8);
    return true;
}

/// Templates 37, 47, 49, 50, 51: the event root and one NoMDEntries group.
template <typename Entry>
std::optional<incremental_refresh<Entry>> decode_refresh(message const& m) noexcept {
    incremental_refresh<Entry> out;
    std::span<std::byte const> rest = m.groups;
    if (!read_event_root(m, out) || !read_group(rest, false, m.version, out.entries)) {
        return std::nullopt;
    }
    return out;
}

} // namespace

std::optional<packet_header> read_packet_header(std::span<std::byte const> packet) noexcept {
    if (packet.size() < packet_header_size) {
        return std::nullopt;
    }
    return packet_header{at<std::uint32_t>(packet, 0), at<std::uint64_t>(packet, 4)};
}

namespace {

/// False if `m` is of a template decoded here and does not decode (a root or an entry shorter
/// than the fields read, a group that does not fit); other templates and schemas are skipped.
/// Flattened: the decoders inline, and what they would decode, unused, is never read (the
/// checks alone remain; validate_packet() runs on every packet before it claims).
[[gnu::flatten]] bool decodes(message const& m) noexcept {
    if (m.schema_id != schema_id) {
        return true;
    }
    switch (m.template_id) {
    case template_id::channel_reset:
        return decode_channel_reset(m).has_value();
    case template_id::security_status:
        return decode_security_status(m).has_value();
    case template_id::incremental_volume:
        return decode_incremental_volume(m).has_value();
    case template_id::incremental_book:
        return decode_incremental_book(m).has_value();
    case template_id::incremental_order_book:
        return decode_incremental_order_book(m).has_value();
    case template_id::incremental_trade_summary:
        return decode_incremental_trade_summary(m).has_value();
    case template_id::incremental_daily_statistics:
        return decode_incremental_daily_statistics(m).has_value();
    case template_id::incremental_limits_banding:
        return decode_incremental_limits_banding(m).has_value();
    case template_id::incremental_session_statistics:
        return decode_incremental_session_statistics(m).has_value();
    case template_id::snapshot_full_refresh:
        return decode_snapshot_full_refresh(m).has_value();
    case template_id::snapshot_order_book:
        return decode_snapshot_order_book(m).has_value();
    case template_id::instrument_definition_future:
        return decode_instrument_definition_future(m).has_value();
    default:
        return true;
    }
}

} // namespace

std::optional<packet_header> validate_packet(std::span<std::byte const> packet) noexcept {
    std::optional<packet_header> const header = read_packet_header(packet);
    if (!header || header->sequence == 0) {
        return std::nullopt;
    }
    bool whole = true;
    if (for_each_message(packet, [&](message const& m) { whole = whole && decodes(m); })
            .malformed ||
        !whole) {
        return std::nullopt;
    }
    return header;
}

reset_entry reset_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::int16_t>(e, 0)};
}

book_entry book_entry::decode(std::span<std::byte const> e, std::uint16_t version) noexcept {
    book_entry b;
    b.price = at<std::int64_t>(e, 0);
    b.size = at<std::int32_t>(e, 8);
    b.security_id = at<std::int32_t>(e, 12);
    b.rpt_seq = at<std::uint32_t>(e, 16);
    b.number_of_orders = at<std::int32_t>(e, 20);
    b.price_level = at<std::uint8_t>(e, 24);
    b.action = static_cast<update_action>(at<std::uint8_t>(e, 25));
    b.type = static_cast<char>(e[26]);
    if (version >= 10 && e.size() >= 31) {
        b.tradeable_size = at<std::int32_t>(e, 27);
    }
    return b;
}

order_id_entry order_id_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::uint64_t>(e, 0), at<std::uint64_t>(e, 8), at<std::int32_t>(e, 16),
            at<std::uint8_t>(e, 20), at<std::uint8_t>(e, 21)};
}

order_book_entry order_book_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::uint64_t>(e, 0), at<std::uint64_t>(e, 8),
            at<std::int64_t>(e, 16), at<std::int32_t>(e, 24),
            at<std::int32_t>(e, 28), static_cast<update_action>(at<std::uint8_t>(e, 32)),
            static_cast<char>(e[33])};
}

trade_entry trade_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::int64_t>(e, 0),
            at<std::int32_t>(e, 8),
            at<std::int32_t>(e, 12),
            at<std::uint32_t>(e, 16),
            at<std::int32_t>(e, 20),
            at<std::uint8_t>(e, 24),
            static_cast<update_action>(at<std::uint8_t>(e, 25)),
            at<std::uint32_t>(e, 26)};
}

trade_order_entry trade_order_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::uint64_t>(e, 0), at<std::int32_t>(e, 8)};
}

volume_entry volume_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::int32_t>(e, 0), at<std::int32_t>(e, 4), at<std::uint32_t>(e, 8),
            static_cast<update_action>(at<std::uint8_t>(e, 12))};
}

daily_statistics_entry daily_statistics_entry::decode(std::span<std::byte const> e,
                                                      std::uint16_t) noexcept {
    return {at<std::int64_t>(e, 0),
            at<std::int32_t>(e, 8),
            at<std::int32_t>(e, 12),
            at<std::uint32_t>(e, 16),
            at<std::uint16_t>(e, 20),
            at<std::uint8_t>(e, 22),
            static_cast<update_action>(at<std::uint8_t>(e, 23)),
            static_cast<char>(e[24])};
}

limits_banding_entry limits_banding_entry::decode(std::span<std::byte const> e,
                                                  std::uint16_t) noexcept {
    return {at<std::int64_t>(e, 0), at<std::int64_t>(e, 8), at<std::int64_t>(e, 16),
            at<std::int32_t>(e, 24), at<std::uint32_t>(e, 28)};
}

session_statistics_entry session_statistics_entry::decode(std::span<std::byte const> e,
                                                          std::uint16_t) noexcept {
    session_statistics_entry s;
    s.price = at<std::int64_t>(e, 0);
    s.security_id = at<std::int32_t>(e, 8);
    s.rpt_seq = at<std::uint32_t>(e, 12);
    s.open_close_settl_flag = at<std::uint8_t>(e, 16);
    s.action = static_cast<update_action>(at<std::uint8_t>(e, 17));
    s.type = static_cast<char>(e[18]);
    if (e.size() >= 23) {
        s.size = at<std::int32_t>(e, 19);
    }
    return s;
}

snapshot_entry snapshot_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::int64_t>(e, 0),  at<std::int32_t>(e, 8),   at<std::int32_t>(e, 12),
            at<std::int8_t>(e, 16),  at<std::uint16_t>(e, 17), at<std::uint8_t>(e, 19),
            at<std::uint8_t>(e, 20), static_cast<char>(e[21])};
}

snapshot_order_entry snapshot_order_entry::decode(std::span<std::byte const> e,
                                                  std::uint16_t) noexcept {
    return {at<std::uint64_t>(e, 0), at<std::uint64_t>(e, 8), at<std::int64_t>(e, 16),
            at<std::int32_t>(e, 24), static_cast<char>(e[28])};
}

event_entry event_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::uint8_t>(e, 0), at<std::uint64_t>(e, 1)};
}

feed_type_entry feed_type_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {chars<3>(e, 0), at<std::int8_t>(e, 3)};
}

inst_attrib_entry inst_attrib_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::uint32_t>(e, 0)};
}

lot_type_entry lot_type_entry::decode(std::span<std::byte const> e, std::uint16_t) noexcept {
    return {at<std::int8_t>(e, 0), at<std::int32_t>(e, 1)};
}

std::optional<channel_reset> decode_channel_reset(message const& m) noexcept {
    channel_reset out;
    std::span<std::byte const> rest = m.groups;
    if (m.root.size() < 9 || !read_group(rest, false, m.version, out.entries)) {
        return std::nullopt;
    }
    out.transact_time = at<std::uint64_t>(m.root, 0);
    out.match_event_indicator = at<std::uint8_t>(m.root, 8);
    return out;
}

std::optional<security_status> decode_security_status(message const& m) noexcept {
    if (m.root.size() < 30) {
        return std::nullopt;
    }
    security_status s;
    s.transact_time = at<std::uint64_t>(m.root, 0);
    s.security_group = chars<6>(m.root, 8);
    s.asset = chars<6>(m.root, 14);
    s.security_id = at<std::int32_t>(m.root, 20);
    s.trade_date = at<std::uint16_t>(m.root, 24);
    s.match_event_indicator = at<std::uint8_t>(m.root, 26);
    s.trading_status = at<std::uint8_t>(m.root, 27);
    s.halt_reason = at<std::uint8_t>(m.root, 28);
    s.trading_event = at<std::uint8_t>(m.root, 29);
    return s;
}

std::optional<incremental_book> decode_incremental_book(message const& m) noexcept {
    incremental_book out;
    std::span<std::byte const> rest = m.groups;
    if (!read_event_root(m, out) || !read_group(rest, false, m.version, out.entries)) {
        return std::nullopt;
    }
    // NoOrderIDEntries: absent from messages that end after the first group (older senders).
    if (!rest.empty() && !read_group(rest, true, m.version, out.orders)) {
        return std::nullopt;
    }
    return out;
}

std::optional<incremental_order_book> decode_incremental_order_book(message const& m) noexcept {
    return decode_refresh<order_book_entry>(m);
}

std::optional<incremental_volume> decode_incremental_volume(message const& m) noexcept {
    return decode_refresh<volume_entry>(m);
}

std::optional<incremental_daily_statistics>
decode_incremental_daily_statistics(message const& m) noexcept {
    return decode_refresh<daily_statistics_entry>(m);
}

std::optional<incremental_limits_banding>
decode_incremental_limits_banding(message const& m) noexcept {
    return decode_refresh<limits_banding_entry>(m);
}

std::optional<incremental_session_statistics>
decode_incremental_session_statistics(message const& m) noexcept {
    return decode_refresh<session_statistics_entry>(m);
}

std::optional<incremental_trade_summary>
decode_incremental_trade_summary(message const& m) noexcept {
    incremental_trade_summary out;
    std::span<std::byte const> rest = m.groups;
    if (!read_event_root(m, out) || !read_group(rest, false, m.version, out.entries)) {
        return std::nullopt;
    }
    if (!rest.empty() && !read_group(rest, true, m.version, out.orders)) {
        return std::nullopt;
    }
    return out;
}

std::optional<snapshot_full_refresh> decode_snapshot_full_refresh(message const& m) noexcept {
    snapshot_full_refresh s;
    std::span<std::byte const> rest = m.groups;
    if (m.root.size() < 59 || !read_group(rest, false, m.version, s.entries)) {
        return std::nullopt;
    }
    s.last_msg_seq_num_processed = at<std::uint32_t>(m.root, 0);
    s.tot_num_reports = at<std::uint32_t>(m.root, 4);
    s.security_id = at<std::int32_t>(m.root, 8);
    s.rpt_seq = at<std::uint32_t>(m.root, 12);
    s.transact_time = at<std::uint64_t>(m.root, 16);
    s.last_update_time = at<std::uint64_t>(m.root, 24);
    s.trade_date = at<std::uint16_t>(m.root, 32);
    s.trading_status = at<std::uint8_t>(m.root, 34);
    s.high_limit_price = at<std::int64_t>(m.root, 35);
    s.low_limit_price = at<std::int64_t>(m.root, 43);
    s.max_price_variation = at<std::int64_t>(m.root, 51);
    return s;
}

std::optional<snapshot_order_book> decode_snapshot_order_book(message const& m) noexcept {
    snapshot_order_book s;
    std::span<std::byte const> rest = m.groups;
    if (m.root.size() < 28 || !read_group(rest, false, m.version, s.entries)) {
        return std::nullopt;
    }
    s.last_msg_seq_num_processed = at<std::uint32_t>(m.root, 0);
    s.tot_num_reports = at<std::uint32_t>(m.root, 4);
    s.security_id = at<std::int32_t>(m.root, 8);
    s.no_chunks = at<std::uint32_t>(m.root, 12);
    s.current_chunk = at<std::uint32_t>(m.root, 16);
    s.transact_time = at<std::uint64_t>(m.root, 20);
    return s;
}

std::optional<instrument_definition_future>
decode_instrument_definition_future(message const& m) noexcept {
    instrument_definition_future d;
    std::span<std::byte const> rest = m.groups;
    if (m.root.size() < 216 || !read_group(rest, false, m.version, d.events) ||
        !read_group(rest, false, m.version, d.feed_types) ||
        !read_group(rest, false, m.version, d.attributes) ||
        !read_group(rest, false, m.version, d.lot_types)) {
        return std::nullopt;
    }
    std::span<std::byte const> const r = m.root;
    d.match_event_indicator = at<std::uint8_t>(r, 0);
    d.tot_num_reports = at<std::uint32_t>(r, 1);
    d.security_update_action = static_cast<char>(r[5]);
    d.last_update_time = at<std::uint64_t>(r, 6);
    d.trading_status = at<std::uint8_t>(r, 14);
    d.appl_id = at<std::int16_t>(r, 15);
    d.market_segment_id = at<std::uint8_t>(r, 17);
    d.security_exchange = chars<4>(r, 19);
    d.security_group = chars<6>(r, 23);
    d.asset = chars<6>(r, 29);
    d.symbol = chars<20>(r, 35);
    d.security_id = at<std::int32_t>(r, 55);
    d.security_type = chars<6>(r, 59);
    d.currency = chars<3>(r, 76);
    d.min_trade_vol = at<std::uint32_t>(r, 83);
    d.max_trade_vol = at<std::uint32_t>(r, 87);
    d.min_price_increment = at<std::int64_t>(r, 91);
    d.display_factor = at<std::int64_t>(r, 99);
    d.trading_reference_price = at<std::int64_t>(r, 148);
    d.high_limit_price = at<std::int64_t>(r, 165);
    d.low_limit_price = at<std::int64_t>(r, 173);
    if (m.version >= 10 && r.size() >= 224) {
        d.instrument_guid = at<std::uint64_t>(r, 216);
    }
    return d;
}

int instrument_definition_future::outright_depth() const noexcept {
    int depth = 0;
    feed_types.for_each([&](feed_type_entry const& f) {
        if (std::string_view(f.feed_type.data(), f.feed_type.size()) == "GBX") {
            depth = f.market_depth;
        }
    });
    return depth;
}

std::string_view text(std::span<char const> field) noexcept {
    std::string_view s(field.data(), field.size());
    s = s.substr(0, s.find('\0'));
    while (!s.empty() && s.back() == ' ') {
        s.remove_suffix(1);
    }
    return s;
}

} // namespace signet::md::cme
