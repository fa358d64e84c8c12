#pragma once

/// CME MDP 3.0: the packet and message framing and zero-copy decoders for the SBE templates a
/// book builder needs (schema id 1, versions 9 to 13; docs/mdp3.md has the facts relied on,
/// with their sources). Little-endian throughout.
///
///   packet   = packet header (MsgSeqNum u32, SendingTime u64) + messages
///   message  = MsgSize u16 (counting itself) + SBE header (BlockLength, TemplateID, SchemaID,
///              Version: u16 each) + root block (BlockLength bytes) + repeating groups
///   group    = dimension (groupSize: blockLength u16, numInGroup u8; groupSize8Byte:
///              blockLength u16, 5 bytes padding, numInGroup u8) + numInGroup entries of
///              blockLength bytes
///
/// Every read is bounded by the bytes it was given: for_each_message() by the datagram (it
/// stops where a MsgSize lies), decoders by MsgSize. Schema evolution is honoured as SBE
/// prescribes: a root or group entry longer than the fields read is skipped past by its own
/// BlockLength; a field newer than the message's Version (or beyond a shorter block) reads as
/// null; unknown templates and schemas are skipped by MsgSize. A root or entry shorter than the
/// fields the decoder needs, or a group whose count does not fit, makes decode_*() return
/// nullopt: a malformed message, never an out-of-bounds read.
///
/// Threading: none (values and views over the caller's bytes). Costs: decode_*() read the root
/// fields and the group dimensions; group entries are decoded when indexed (a few loads each).
/// No allocation, no exceptions.

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string_view>

#include <signet/md/little_endian.hpp>

namespace signet::md::cme {

inline constexpr std::size_t packet_header_size = 12;
inline constexpr std::size_t message_header_size = 10; ///< MsgSize + the SBE header
inline constexpr std::uint16_t schema_id = 1;          ///< MDP 3.0's `mktdata` schema

/// Template ids of the messages decoded here.
namespace template_id {
inline constexpr std::uint16_t channel_reset = 4;
inline constexpr std::uint16_t admin_heartbeat = 12;
inline constexpr std::uint16_t security_status = 30;
inline constexpr std::uint16_t incremental_volume = 37;
inline constexpr std::uint16_t incremental_book = 46;
inline constexpr std::uint16_t incremental_order_book = 47;
inline constexpr std::uint16_t incremental_trade_summary = 48;
inline constexpr std::uint16_t incremental_daily_statistics = 49;
inline constexpr std::uint16_t incremental_limits_banding = 50;
inline constexpr std::uint16_t incremental_session_statistics = 51;
inline constexpr std::uint16_t snapshot_full_refresh = 52;
inline constexpr std::uint16_t snapshot_order_book = 53;
inline constexpr std::uint16_t instrument_definition_future = 54;
} // namespace template_id

/// Null values of optional fields.
inline constexpr std::int64_t null_price = std::numeric_limits<std::int64_t>::max(); ///< PRICENULL9
inline constexpr std::int32_t null_int32 = std::numeric_limits<std::int32_t>::max();
inline constexpr std::uint32_t null_uint32 = std::numeric_limits<std::uint32_t>::max();
inline constexpr std::uint64_t null_uint64 = std::numeric_limits<std::uint64_t>::max();
inline constexpr std::uint8_t null_uint8 = 255;
inline constexpr std::int8_t null_int8 = 127;
/// Prices are int64 mantissas with this constant exponent (PRICE9, PRICENULL9, Decimal9).
inline constexpr int price_exponent = -9;

/// MDUpdateAction (tag 279).
enum class update_action : std::uint8_t {
    new_level = 0,
    change = 1,
    remove = 2,
    delete_thru = 3,
    delete_from = 4,
    overlay = 5,
};

/// MDEntryType values of book entries (MDEntryTypeBook) and the snapshot's.
namespace entry_type {
inline constexpr char bid = '0';
inline constexpr char offer = '1';
inline constexpr char trade = '2';
inline constexpr char implied_bid = 'E';
inline constexpr char implied_offer = 'F';
inline constexpr char book_reset = 'J';
// statistics (templates 49, 51 and the snapshot's entries)
inline constexpr char open_price = '4';
inline constexpr char settlement_price = '6';
inline constexpr char trading_session_high = '7';
inline constexpr char trading_session_low = '8';
inline constexpr char cleared_volume = 'B';
inline constexpr char open_interest = 'C';
inline constexpr char session_high_bid = 'N';
inline constexpr char session_low_offer = 'O';
inline constexpr char fixing_price = 'W';
inline constexpr char electronic_volume = 'e';
} // namespace entry_type

/// MatchEventIndicator bit 7: the last message of an event.
inline constexpr std::uint8_t end_of_event = 0x80;

struct packet_header {
    std::uint32_t sequence = 0;        ///< MsgSeqNum: per channel and feed, +1 per packet
    std::uint64_t sending_time_ns = 0; ///< since the Unix epoch
};

/// nullopt when shorter than a packet header.
[[nodiscard]] std::optional<packet_header>
read_packet_header(std::span<std::byte const> packet) noexcept;

/// One message of a packet, bounded by its MsgSize.
struct message {
    std::uint16_t block_length = 0;
    std::uint16_t template_id = 0;
    std::uint16_t schema_id = 0;
    std::uint16_t version = 0;
    std::span<std::byte const> root;   ///< block_length bytes
    std::span<std::byte const> groups; ///< what follows the root, to the end of the message
};

struct packet_walk {
    std::size_t messages = 0; ///< messages framed and handed over
    /// The packet's bytes did not frame: a header that does not fit, a MsgSize below 10 or
    /// beyond the datagram, or a BlockLength beyond the MsgSize. The messages before it were
    /// handed over; the rest of the packet is lost (its framing is).
    bool malformed = false;
};

/// Calls f(message const&) for each message after the packet header, in order.
template <typename F>
packet_walk for_each_message(std::span<std::byte const> packet, F&& f);

/// The header of a packet that holds from end to end (a MsgSeqNum of at least 1, every message
/// within the packet: for_each_message() would not stop early; every message of a template
/// decoded here decodes: its root and groups fit); nullopt otherwise. A packet must pass this
/// before it claims its MsgSeqNum, so that a damaged copy never takes a good one's place. Walks
/// the messages once, reading their roots' sizes and group dimensions (decode_*()), no entry.
[[nodiscard]] std::optional<packet_header>
validate_packet(std::span<std::byte const> packet) noexcept;

/// A repeating group's entries: entry i is bytes [i * block_length, (i + 1) * block_length)
/// of `bytes`, decoded by Entry::decode(span, version) when indexed.
template <typename Entry>
class group {
public:
    group() noexcept = default;
    group(std::span<std::byte const> bytes, std::uint16_t block_length, std::uint8_t count,
          std::uint16_t version) noexcept
        : bytes_(bytes)
        , block_length_(block_length)
        , count_(count)
        , version_(version) {}

    [[nodiscard]] std::size_t size() const noexcept { return count_; }
    [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
    [[nodiscard]] Entry operator[](std::size_t i) const noexcept {
        return Entry::decode(bytes_.subspan(i * block_length_, block_length_), version_);
    }

    template <typename F>
    void for_each(F&& f) const {
        for (std::size_t i = 0; i < count_; ++i) {
            f((*this)[i]);
        }
    }

private:
    std::span<std::byte const> bytes_{};
    std::uint16_t block_length_ = 0;
    std::uint8_t count_ = 0;
    std::uint16_t version_ = 0;
};

// ---- group entries: `min_block` is the bytes a decoder reads; a shorter entry is malformed ----

/// ChannelReset4's NoMDEntries.
struct reset_entry {
    static constexpr std::size_t min_block = 2;
    std::int16_t appl_id = 0; ///< the channel
    static reset_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshBook46's NoMDEntries: a price level update.
struct book_entry {
    static constexpr std::size_t min_block = 27;
    std::int64_t price = null_price;
    std::int32_t size = null_int32;
    std::int32_t security_id = 0;
    std::uint32_t rpt_seq = 0;
    std::int32_t number_of_orders = null_int32;
    std::uint8_t price_level = 0; ///< 1 = best
    update_action action = update_action::new_level;
    char type = entry_type::bid;
    std::int32_t tradeable_size = null_int32; ///< since version 10
    static book_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshBook46's NoOrderIDEntries (groupSize8Byte).
struct order_id_entry {
    static constexpr std::size_t min_block = 22;
    std::uint64_t order_id = 0;
    std::uint64_t priority = null_uint64;
    std::int32_t display_qty = null_int32;
    std::uint8_t reference_id = null_uint8; ///< 1-based index of the NoMDEntries entry
    std::uint8_t order_update_action = 0;   ///< 0 new, 1 update, 2 delete
    static order_id_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshOrderBook47's NoMDEntries: an order update (MBO).
struct order_book_entry {
    static constexpr std::size_t min_block = 34;
    std::uint64_t order_id = null_uint64;
    std::uint64_t priority = null_uint64;
    std::int64_t price = null_price;
    std::int32_t display_qty = null_int32;
    std::int32_t security_id = 0;
    update_action action = update_action::new_level; ///< 0 new, 1 update, 2 delete
    char type = entry_type::bid;
    static order_book_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshTradeSummary48's NoMDEntries.
struct trade_entry {
    static constexpr std::size_t min_block = 30;
    std::int64_t price = 0;
    std::int32_t size = 0;
    std::int32_t security_id = 0;
    std::uint32_t rpt_seq = 0;
    std::int32_t number_of_orders = 0;
    std::uint8_t aggressor_side = null_uint8; ///< 0 none, 1 buy, 2 sell
    update_action action = update_action::new_level;
    std::uint32_t trade_entry_id = null_uint32;
    static trade_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshTradeSummary48's NoOrderIDEntries (groupSize8Byte).
struct trade_order_entry {
    static constexpr std::size_t min_block = 12;
    std::uint64_t order_id = 0;
    std::int32_t last_qty = 0;
    static trade_order_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshVolume37's NoMDEntries: the session's cumulative traded volume.
struct volume_entry {
    static constexpr std::size_t min_block = 13;
    std::int32_t size = 0; ///< cumulative volume
    std::int32_t security_id = 0;
    std::uint32_t rpt_seq = 0;
    update_action action = update_action::new_level;
    static volume_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshDailyStatistics49's NoMDEntries: settlement, cleared volume, open
/// interest, fixing price.
struct daily_statistics_entry {
    static constexpr std::size_t min_block = 25;
    std::int64_t price = null_price;
    std::int32_t size = null_int32;
    std::int32_t security_id = 0;
    std::uint32_t rpt_seq = 0;
    std::uint16_t trading_reference_date = 65535;
    std::uint8_t settl_price_type = 0;
    update_action action = update_action::new_level;
    char type = entry_type::settlement_price;
    static daily_statistics_entry decode(std::span<std::byte const> e,
                                         std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshLimitsBanding50's NoMDEntries (MDUpdateAction and MDEntryType are
/// constants of the schema, not on the wire).
struct limits_banding_entry {
    static constexpr std::size_t min_block = 32;
    std::int64_t high_limit_price = null_price;
    std::int64_t low_limit_price = null_price;
    std::int64_t max_price_variation = null_price;
    std::int32_t security_id = 0;
    std::uint32_t rpt_seq = 0;
    static limits_banding_entry decode(std::span<std::byte const> e,
                                       std::uint16_t version) noexcept;
};

/// MDIncrementalRefreshSessionStatistics51's NoMDEntries: open, session high and low trade,
/// highest bid, lowest offer.
struct session_statistics_entry {
    static constexpr std::size_t min_block = 19;
    std::int64_t price = null_price;
    std::int32_t security_id = 0;
    std::uint32_t rpt_seq = 0;
    std::uint8_t open_close_settl_flag = null_uint8;
    update_action action = update_action::new_level;
    char type = entry_type::open_price;
    std::int32_t size = null_int32; ///< indicative opening quantity (entries of 23 bytes or more)
    static session_statistics_entry decode(std::span<std::byte const> e,
                                           std::uint16_t version) noexcept;
};

/// SnapshotFullRefresh52's NoMDEntries.
struct snapshot_entry {
    static constexpr std::size_t min_block = 22;
    std::int64_t price = null_price;
    std::int32_t size = null_int32;
    std::int32_t number_of_orders = null_int32;
    std::int8_t price_level = null_int8; ///< signed here (Int8NULL)
    std::uint16_t trading_reference_date = 65535;
    std::uint8_t open_close_settl_flag = null_uint8;
    std::uint8_t settl_price_type = 0;
    char type = entry_type::bid; ///< the full MDEntryType list
    static snapshot_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

/// SnapshotFullRefreshOrderBook53's NoMDEntries.
struct snapshot_order_entry {
    static constexpr std::size_t min_block = 29;
    std::uint64_t order_id = 0;
    std::uint64_t priority = null_uint64;
    std::int64_t price = 0;
    std::int32_t display_qty = 0;
    char type = entry_type::bid;
    static snapshot_order_entry decode(std::span<std::byte const> e,
                                       std::uint16_t version) noexcept;
};

/// MDInstrumentDefinitionFuture54's groups.
struct event_entry {
    static constexpr std::size_t min_block = 9;
    std::uint8_t event_type = 0; ///< 5 activation, 7 last eligible trade date
    std::uint64_t event_time_ns = 0;
    static event_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};
struct feed_type_entry {
    static constexpr std::size_t min_block = 4;
    std::array<char, 3> feed_type{}; ///< "GBX" outright book, "GBI" implied book
    std::int8_t market_depth = 0;
    static feed_type_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};
struct inst_attrib_entry {
    static constexpr std::size_t min_block = 4;
    std::uint32_t value = 0; ///< InstAttribValue bits
    static inst_attrib_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};
struct lot_type_entry {
    static constexpr std::size_t min_block = 5;
    std::int8_t lot_type = 0;
    std::int32_t min_lot_size = null_int32; ///< DecimalQty: exponent -4
    static lot_type_entry decode(std::span<std::byte const> e, std::uint16_t version) noexcept;
};

// ---- messages ----

struct channel_reset {
    std::uint64_t transact_time = 0;
    std::uint8_t match_event_indicator = 0;
    group<reset_entry> entries;
};

struct security_status {
    std::uint64_t transact_time = 0;
    std::array<char, 6> security_group{};
    std::array<char, 6> asset{};
    std::int32_t security_id = null_int32; ///< null: the status is the group's or asset's
    std::uint16_t trade_date = 65535;
    std::uint8_t match_event_indicator = 0;
    std::uint8_t trading_status = null_uint8; ///< SecurityTradingStatus
    std::uint8_t halt_reason = 0;
    std::uint8_t trading_event = 0;
};

struct incremental_book {
    std::uint64_t transact_time = 0;
    std::uint8_t match_event_indicator = 0;
    group<book_entry> entries;
    group<order_id_entry> orders;
};

/// An incremental refresh whose root is TransactTime and MatchEventIndicator and whose only group
/// is NoMDEntries: templates 37, 47, 49, 50, 51.
template <typename Entry>
struct incremental_refresh {
    std::uint64_t transact_time = 0;
    std::uint8_t match_event_indicator = 0;
    group<Entry> entries;
};
using incremental_order_book = incremental_refresh<order_book_entry>;
using incremental_volume = incremental_refresh<volume_entry>;
using incremental_daily_statistics = incremental_refresh<daily_statistics_entry>;
using incremental_limits_banding = incremental_refresh<limits_banding_entry>;
using incremental_session_statistics = incremental_refresh<session_statistics_entry>;

struct incremental_trade_summary {
    std::uint64_t transact_time = 0;
    std::uint8_t match_event_indicator = 0;
    group<trade_entry> entries;
    group<trade_order_entry> orders;
};

struct snapshot_full_refresh {
    std::uint32_t last_msg_seq_num_processed = 0; ///< the incremental packet it is valid as of
    std::uint32_t tot_num_reports = 0;
    std::int32_t security_id = 0;
    std::uint32_t rpt_seq = 0; ///< the instrument's last RptSeq in the snapshot
    std::uint64_t transact_time = 0;
    std::uint64_t last_update_time = 0;
    std::uint16_t trade_date = 65535;
    std::uint8_t trading_status = null_uint8;
    std::int64_t high_limit_price = null_price;
    std::int64_t low_limit_price = null_price;
    std::int64_t max_price_variation = null_price;
    group<snapshot_entry> entries;
};

struct snapshot_order_book {
    std::uint32_t last_msg_seq_num_processed = 0;
    std::uint32_t tot_num_reports = 0; ///< instruments in the loop
    std::int32_t security_id = 0;
    std::uint32_t no_chunks = 0;
    std::uint32_t current_chunk = 0;
    std::uint64_t transact_time = 0;
    group<snapshot_order_entry> entries;
};

struct instrument_definition_future {
    std::uint8_t match_event_indicator = 0;
    std::uint32_t tot_num_reports = null_uint32;
    char security_update_action = 'A'; ///< 'A' add, 'D' delete, 'M' modify
    std::uint64_t last_update_time = 0;
    std::uint8_t trading_status = null_uint8;
    std::int16_t appl_id = 0; ///< the channel
    std::uint8_t market_segment_id = 0;
    std::array<char, 4> security_exchange{};
    std::array<char, 6> security_group{};
    std::array<char, 6> asset{};
    std::array<char, 20> symbol{};
    std::int32_t security_id = 0;
    std::array<char, 6> security_type{};
    std::array<char, 3> currency{};
    std::uint32_t min_trade_vol = 0;
    std::uint32_t max_trade_vol = 0;
    std::int64_t min_price_increment = 0; ///< the tick, PRICE9
    std::int64_t display_factor = 0;      ///< Decimal9
    std::int64_t trading_reference_price = null_price;
    std::int64_t high_limit_price = null_price;
    std::int64_t low_limit_price = null_price;
    std::uint64_t instrument_guid = null_uint64; ///< since version 10
    group<event_entry> events;
    group<feed_type_entry> feed_types; ///< the book depths
    group<inst_attrib_entry> attributes;
    group<lot_type_entry> lot_types;

    /// MarketDepth of the feed type "GBX" (the outright book); 0 if none is given.
    [[nodiscard]] int outright_depth() const noexcept;
};

[[nodiscard]] std::optional<channel_reset> decode_channel_reset(message const& m) noexcept;
[[nodiscard]] std::optional<security_status> decode_security_status(message const& m) noexcept;
[[nodiscard]] std::optional<incremental_book> decode_incremental_book(message const& m) noexcept;
[[nodiscard]] std::optional<incremental_order_book>
decode_incremental_order_book(message const& m) noexcept;
[[nodiscard]] std::optional<incremental_trade_summary>
decode_incremental_trade_summary(message const& m) noexcept;
[[nodiscard]] std::optional<incremental_volume>
decode_incremental_volume(message const& m) noexcept;
[[nodiscard]] std::optional<incremental_daily_statistics>
decode_incremental_daily_statistics(message const& m) noexcept;
[[nodiscard]] std::optional<incremental_limits_banding>
decode_incremental_limits_banding(message const& m) noexcept;
[[nodiscard]] std::optional<incremental_session_statistics>
decode_incremental_session_statistics(message const& m) noexcept;
[[nodiscard]] std::optional<snapshot_full_refresh>
decode_snapshot_full_refresh(message const& m) noexcept;
[[nodiscard]] std::optional<snapshot_order_book>
decode_snapshot_order_book(message const& m) noexcept;
[[nodiscard]] std::optional<instrument_definition_future>
decode_instrument_definition_future(message const& m) noexcept;

/// Text of a fixed-width char field: up to the first NUL, trailing spaces trimmed.
[[nodiscard]] std::string_view text(std::span<char const> field) noexcept;

// ---- implementation ----

template <typename F>
packet_walk for_each_message(std::span<std::byte const> packet, F&& f) {
    packet_walk walk;
    if (packet.size() < packet_header_size) {
        walk.malformed = true;
        return walk;
    }
    std::size_t offset = packet_header_size;
    while (offset < packet.size()) {
        std::size_t const left = packet.size() - offset;
        std::byte const* const p = packet.data() + offset;
        if (left < 2) {
            walk.malformed = true;
            return walk;
        }
        std::size_t const size = load_le<std::uint16_t>(p);
        if (size < message_header_size || size > left) {
            walk.malformed = true;
            return walk;
        }
        message m;
        m.block_length = load_le<std::uint16_t>(p + 2);
        m.template_id = load_le<std::uint16_t>(p + 4);
        m.schema_id = load_le<std::uint16_t>(p + 6);
        m.version = load_le<std::uint16_t>(p + 8);
        if (m.block_length > size - message_header_size) {
            walk.malformed = true;
            return walk;
        }
        std::span<std::byte const> const body =
            packet.subspan(offset + message_header_size, size - message_header_size);
        m.root = body.first(m.block_length);
        m.groups = body.subspan(m.block_length);
        ++walk.messages;
        f(static_cast<message const&>(m));
        offset += size;
    }
    return walk;
}

} // namespace signet::md::cme
