// glimpse_client through a runtime (memory backend: the live messages come through a memory
// line; the snapshot through a real TCP connection to a peer on the test's thread that plays
// the GLIMPSE server with md::soupbintcp::server): a snapshot after a disconnect mid-way, a
// server that trickles, a snapshot older than the buffer, one that resumes far beyond the live
// stream, a lying length field, a rejected login, no connection before the stream is seen. Each
// ends with the book of a receiver that saw the whole stream, or with the failure counted and the
// feed still buffering.
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/glimpse.hpp>
#include <signet/md/nasdaq/itch_snapshot_sync.hpp>
#include <signet/md/nasdaq/soupbintcp_server.hpp>
#include <signet/net/runtime.hpp>
#include <signet/receiver/nasdaq/glimpse_client.hpp>

#include "md/md_test_support.hpp"
#include "support/stress.hpp"
#include "support/tcp_peer.hpp"

namespace {

using namespace std::chrono_literals;
namespace t = signet::md::test;
namespace soup = signet::md::nasdaq::soupbintcp;
using signet::receiver::nasdaq::glimpse_client;
using signet::receiver::nasdaq::glimpse_client_options;
using signet::receiver::nasdaq::glimpse_counters;
using signet::receiver::nasdaq::glimpse_phase;
using signet::test::eventually;

constexpr std::size_t symbols = 20;
constexpr signet::md::nasdaq::itch_order_book_options book{.max_orders = 1 << 14,
                                                           .index_pages = 64};
constexpr std::uint64_t messages = 6000;
constexpr std::size_t join = 2500; // live messages from sequence join + 1 on

// The feed: a memory line carries live messages as [sequence, 8 bytes][message]; the parser
// contract feeds them to the sync and runs the snapshot client.
struct feed {
    explicit feed(std::size_t buffer_messages)
        : sync({.book = book,
                .buffer_messages = buffer_messages,
                .buffer_bytes = buffer_messages * signet::md::nasdaq::itch50::max_message_length}) {
    }
    signet::md::nasdaq::itch_snapshot_sync sync;
    std::unique_ptr<glimpse_client> client;
    std::mutex mutex; // guards the copies below (the test reads them)
    glimpse_phase phase = glimpse_phase::buffering;
    glimpse_counters counters{};

    void run() {
        client->service(glimpse_client::clock::now());
        std::lock_guard const lock(mutex);
        phase = client->phase();
        counters = client->counters();
    }
    glimpse_phase current_phase() {
        std::lock_guard const lock(mutex);
        return phase;
    }
    glimpse_counters current() {
        std::lock_guard const lock(mutex);
        return counters;
    }
};

struct feed_parser {
    feed* f;
    void operator()(signet::net::packet const& p) {
        auto const payload = p.payload();
        std::uint64_t sequence = 0;
        std::memcpy(&sequence, payload.data(), sizeof sequence);
        f->sync.on_live(sequence, payload.subspan(sizeof sequence));
    }
    void on_batch() { f->run(); }
    void on_idle() { f->run(); }
};

// The GLIMPSE side of one connection, on the test's thread.
class peer {
public:
    explicit peer(signet::net::unique_fd fd, std::string_view username = "",
                  std::string_view password = "")
        : fd_(std::move(fd))
        , server_({.username = username, .password = password, .session = "GLIMPSE"}) {
        server_.start(0);
    }
    /// Reads the login and answers it; the answer's state (serving, or closed: rejected).
    soup::server_state login() {
        std::array<std::byte, soup::length_prefix + 1 + soup::login_request_length> request{};
        EXPECT_TRUE(signet::test::read_exactly(fd_.get(), request));
        (void)server_.on_bytes(request, 0, [](auto) {});
        if (server_.state() == soup::server_state::login_received) {
            server_.accept(1, 0);
        }
        flush();
        return server_.state();
    }
    /// The snapshot of the stream's first `count` messages, End of Snapshot included (resuming
    /// at `resume`, by default the sequence after them).
    [[nodiscard]] static std::vector<std::byte>
    snapshot(std::vector<t::bytes> const& all, std::size_t count, std::uint64_t resume = 0) {
        std::vector<std::byte> out;
        auto append = [&](std::span<std::byte const> message) {
            std::vector<std::byte> packet(soup::length_prefix + 1 + message.size());
            EXPECT_EQ(soup::write_packet(packet, soup::packet_type::sequenced_data, message),
                      packet.size());
            out.insert(out.end(), packet.begin(), packet.end());
        };
        for (auto const& m : t::snapshot_after(all, count, book)) {
            append(t::view(m));
        }
        std::array<std::byte, signet::md::nasdaq::glimpse::end_of_snapshot_length> end{};
        (void)signet::md::nasdaq::glimpse::write_end_of_snapshot(end,
                                                                 resume != 0 ? resume : count + 1);
        append(end);
        return out;
    }
    bool send(std::span<std::byte const> bytes) { return signet::test::send_all(fd_.get(), bytes); }
    void close() { fd_.reset(); }

private:
    void flush() {
        while (!server_.output().empty()) {
            ASSERT_TRUE(send(server_.output()));
            server_.sent(server_.output().size(), 0);
        }
    }
    signet::net::unique_fd fd_;
    soup::server server_;
};

class GlimpseClientTest : public ::testing::Test {
protected:
    void SetUp() override {
        all_ = t::generated_stream(3, messages, symbols);
        rt_ = std::make_unique<signet::net::runtime>(
            signet::net::runtime_options{.backend = signet::net::backend_kind::memory});
        signet::net::feed_options options;
        options.name = "late";
        feed_.emplace(buffer_messages_);
        id_ = rt_->add_feed(options, feed_parser{&*feed_});
    }

    void start(glimpse_client_options options = {}) {
        start_client(options);
        send_live(join, all_.size());
        // Every live message buffered before any snapshot arrives: otherwise a snapshot could
        // resume ahead of (or behind) what the parser has taken so far, and the outcomes the
        // tests expect would depend on the scheduling.
        std::uint64_t const live = all_.size() - join;
        ASSERT_TRUE(eventually([&] { return feed_->current().buffered_messages == live; }))
            << feed_->current().buffered_messages << " of " << live;
    }

    /// The client, asked for a snapshot, and the runtime started; no live message yet.
    void start_client(glimpse_client_options options) {
        options.name = "test snapshot";
        signet::net::tcp_client_options tcp;
        tcp.peer = signet::net::udp_endpoint::parse("127.0.0.1:" + std::to_string(server_.port()));
        tcp.backoff_initial = 5ms;
        tcp.backoff_max = 20ms;
        feed_->client = std::make_unique<glimpse_client>(options, rt_->make_tcp_client(id_, tcp),
                                                         rt_->parser_timer(id_), feed_->sync);
        feed_->client->request(glimpse_client::clock::now());
        rt_->start();
    }

    /// The live stream's messages [from, to) (sequences from + 1 on): buffered until a
    /// snapshot is applied.
    void send_live(std::size_t from, std::size_t to) {
        auto line = rt_->memory_line(id_);
        for (std::size_t i = from; i < to; ++i) {
            while (!line.write([&](std::span<std::byte> buffer) {
                std::uint64_t const sequence = i + 1;
                std::memcpy(buffer.data(), &sequence, sizeof sequence);
                std::memcpy(buffer.data() + sizeof sequence, all_[i].data(), all_[i].size());
                return sizeof sequence + all_[i].size();
            })) {
                line.flush(); // the queue is full: let the parser take some
            }
        }
        line.flush();
    }

    /// The whole stream's book, and the sync's after the runtime stopped.
    void expect_full_books() {
        rt_->stop();
        signet::md::nasdaq::itch50_parser reference(book);
        for (auto const& m : all_) {
            reference.on_message(t::view(m));
        }
        t::expect_same_books(feed_->sync.parser().book(), reference.book(), symbols);
    }

    bool wait_for(glimpse_phase phase) {
        return eventually([&] { return feed_->current_phase() == phase; });
    }

    std::vector<t::bytes> all_;
    signet::test::tcp_listener server_;
    std::size_t buffer_messages_ = std::size_t{1} << 20;
    std::optional<feed> feed_;
    std::unique_ptr<signet::net::runtime> rt_;
    std::size_t id_ = 0;
};

TEST_F(GlimpseClientTest, ADisconnectMidSnapshotDropsItAndTheRetryCompletes) {
    signet::test::watchdog dog(60s, "disconnect mid-snapshot");
    start();
    std::vector<std::byte> const image = peer::snapshot(all_, join + 1000);
    {
        peer first(server_.accept());
        ASSERT_EQ(first.login(), soup::server_state::serving);
        ASSERT_TRUE(first.send(std::span(image).first(image.size() / 2)));
        ASSERT_TRUE(eventually([&] { return feed_->current().snapshot_messages > 0; }));
        first.close(); // mid-snapshot
    }
    peer second(server_.accept()); // the retry, after the backoff
    ASSERT_EQ(second.login(), soup::server_state::serving);
    ASSERT_TRUE(second.send(image));
    ASSERT_TRUE(wait_for(glimpse_phase::live));
    glimpse_counters const c = feed_->current();
    EXPECT_EQ(c.aborted, 1U);
    EXPECT_EQ(c.disconnects, 1U);
    EXPECT_EQ(c.completed, 1U);
    EXPECT_GE(c.attempts, 2U);
    EXPECT_GT(c.orders_loaded, 0U);
    EXPECT_GT(c.replayed_messages, 0U);
    expect_full_books();
}

TEST_F(GlimpseClientTest, AServerThatTricklesIsDroppedAtTheSnapshotTimeout) {
    signet::test::watchdog dog(60s, "trickle");
    start({.snapshot_timeout = 300ms});
    std::vector<std::byte> const image = peer::snapshot(all_, join);
    {
        peer slow(server_.accept());
        ASSERT_EQ(slow.login(), soup::server_state::serving);
        // A byte at a time, never silent for server_timeout, never done: the client gives up.
        for (std::size_t i = 0; i < image.size() && feed_->current().protocol_failures == 0; ++i) {
            if (!slow.send(std::span(image).subspan(i, 1))) {
                break; // the client closed
            }
            std::this_thread::sleep_for(20ms); // the trickle's pace, not a synchronization
        }
    }
    ASSERT_TRUE(eventually([&] { return feed_->current().protocol_failures == 1; }));
    EXPECT_EQ(feed_->current_phase(), glimpse_phase::buffering);
    peer good(server_.accept());
    ASSERT_EQ(good.login(), soup::server_state::serving);
    ASSERT_TRUE(good.send(image));
    ASSERT_TRUE(wait_for(glimpse_phase::live));
    expect_full_books();
}

TEST_F(GlimpseClientTest, ASnapshotOlderThanTheBufferIsRefusedAndANewerOneTaken) {
    signet::test::watchdog dog(60s, "too old");
    start();
    {
        peer old(server_.accept());
        ASSERT_EQ(old.login(), soup::server_state::serving);
        ASSERT_TRUE(old.send(peer::snapshot(all_, join - 100))); // resumes before the buffer
        ASSERT_TRUE(eventually([&] { return feed_->current().too_old == 1; }));
    }
    peer newer(server_.accept());
    ASSERT_EQ(newer.login(), soup::server_state::serving);
    ASSERT_TRUE(newer.send(peer::snapshot(all_, join + 10)));
    ASSERT_TRUE(wait_for(glimpse_phase::live));
    EXPECT_EQ(feed_->current().completed, 1U);
    expect_full_books();
}

TEST_F(GlimpseClientTest, ASnapshotFromTheFutureIsRefusedAndTheBookKept) {
    // A server of another session or day: End of Snapshot names a sequence a trillion ahead.
    // Taken, every live message below it would be skipped and the book would freeze.
    signet::test::watchdog dog(60s, "future");
    start();
    {
        peer liar(server_.accept());
        ASSERT_EQ(liar.login(), soup::server_state::serving);
        ASSERT_TRUE(liar.send(peer::snapshot(all_, join + 10, 1'000'000'000'000)));
        ASSERT_TRUE(eventually([&] { return feed_->current().future == 1; }));
    }
    EXPECT_EQ(feed_->current_phase(), glimpse_phase::buffering);
    EXPECT_EQ(feed_->current().completed, 0U);
    EXPECT_EQ(feed_->current().failures(), 1U);
    peer honest(server_.accept()); // asked again
    ASSERT_EQ(honest.login(), soup::server_state::serving);
    ASSERT_TRUE(honest.send(peer::snapshot(all_, join + 10)));
    ASSERT_TRUE(wait_for(glimpse_phase::live));
    glimpse_counters const c = feed_->current();
    EXPECT_EQ(c.completed, 1U);
    EXPECT_EQ(c.future, 1U);
    EXPECT_EQ(c.covered_messages, 10U) << "buffered live messages the snapshot held";
    expect_full_books();
}

TEST_F(GlimpseClientTest, NoSnapshotIsAskedForBeforeTheStreamShowsWhereItIs) {
    // A snapshot is checked against the live stream's position: with none yet, the client
    // waits for the first live datagram before it connects.
    signet::test::watchdog dog(60s, "stream first");
    start_client({});
    EXPECT_FALSE(server_.accept(300ms).is_open());
    send_live(join, join + 1);
    peer server(server_.accept());
    ASSERT_EQ(server.login(), soup::server_state::serving);
    rt_->stop();
}

TEST_F(GlimpseClientTest, ALyingLengthFieldFailsTheAttemptWithoutReadingPastIt) {
    signet::test::watchdog dog(60s, "lying length");
    start();
    {
        peer liar(server_.accept());
        ASSERT_EQ(liar.login(), soup::server_state::serving);
        std::array<std::byte, 8> const lie{std::byte{0xff}, std::byte{0xf0}, std::byte{'S'}};
        ASSERT_TRUE(liar.send(lie)); // 65520 bytes announced: above the bound
        ASSERT_TRUE(eventually([&] { return feed_->current().protocol_failures == 1; }));
    }
    peer honest(server_.accept());
    ASSERT_EQ(honest.login(), soup::server_state::serving);
    ASSERT_TRUE(honest.send(peer::snapshot(all_, join)));
    ASSERT_TRUE(wait_for(glimpse_phase::live));
    expect_full_books();
}

TEST_F(GlimpseClientTest, ARejectedLoginIsOneErrorAndNoRetry) {
    signet::test::watchdog dog(60s, "rejected");
    start({.username = "alice", .password = "wrong"});
    peer strict(server_.accept(), "alice", "right");
    EXPECT_EQ(strict.login(), soup::server_state::closed);
    ASSERT_TRUE(wait_for(glimpse_phase::rejected));
    EXPECT_FALSE(server_.accept(300ms).is_open()); // no retry
    EXPECT_EQ(feed_->current().login_rejected, 1U);
    rt_->stop();
}

} // namespace

namespace {

// The buffer holds 64 live messages: the 3500 of the stream overflow it while the snapshot
// loads.
class GlimpseClientSmallBufferTest : public GlimpseClientTest {
protected:
    void SetUp() override {
        buffer_messages_ = 64;
        GlimpseClientTest::SetUp();
    }
};

TEST_F(GlimpseClientSmallBufferTest, ABufferThatOverflowsWhileLoadingIsCountedAndRetried) {
    signet::test::watchdog dog(60s, "buffer overflow");
    start();
    {
        peer first(server_.accept());
        ASSERT_EQ(first.login(), soup::server_state::serving);
        // Resumes at join + 1001: long evicted from a buffer of the last 64 messages.
        ASSERT_TRUE(first.send(peer::snapshot(all_, join + 1000)));
        ASSERT_TRUE(eventually([&] { return feed_->current().too_old == 1; }));
    }
    glimpse_counters const overflowed = feed_->current();
    EXPECT_GT(overflowed.buffer_evictions, 0U);
    EXPECT_EQ(feed_->current_phase(), glimpse_phase::buffering);
    peer second(server_.accept()); // the retry: a snapshot recent enough for the buffer
    ASSERT_EQ(second.login(), soup::server_state::serving);
    ASSERT_TRUE(second.send(peer::snapshot(all_, all_.size() - 10)));
    ASSERT_TRUE(wait_for(glimpse_phase::live));
    expect_full_books();
}

} // namespace
