// glimpse_service on loopback: the packets recorded through the publisher's hook become a book
// whose snapshot — served to a SoupBinTCP client — rebuilds it exactly and ends with End of
// Snapshot at the next sequence; wrong credentials are rejected; a hand-off that skipped
// packets makes later logins rejected instead of served a wrong book. Waits are for events
// (bytes, a counter), with generous deadlines.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <signet/md/nasdaq/glimpse.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/soupbintcp_client.hpp>
#include <signet/net/unique_fd.hpp>
#include <signet/publisher/nasdaq/glimpse_service.hpp>

#include "md/md_test_support.hpp"
#include "support/stress.hpp"
#include "support/tcp_peer.hpp"

namespace {

namespace pub = signet::publisher;
namespace md = signet::md;
namespace t = signet::md::test;
namespace soup = signet::md::nasdaq::soupbintcp;
using namespace std::chrono_literals;

constexpr std::size_t symbols = 12;
constexpr md::nasdaq::itch_order_book_options book{.max_orders = 1 << 14, .index_pages = 64};

// Records messages [from, to) of `all` as MoldUDP64 packets of 8 (sequence = index + 1).
void record(pub::nasdaq::glimpse_service& service, std::vector<t::bytes> const& all,
            std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; i += 8) {
        std::vector<t::bytes> const batch(all.begin() + static_cast<std::ptrdiff_t>(i),
                                          all.begin() +
                                              static_cast<std::ptrdiff_t>(std::min(to, i + 8)));
        service.record(t::view(t::mold_packet("GLIMPSETST", i + 1, batch)));
    }
}

struct snapshot_result {
    soup::client_state state = soup::client_state::idle;
    soup::client_failure failure = soup::client_failure::none;
    std::vector<t::bytes> messages; // End of Snapshot included
};

// Logs in over a blocking socket and reads until End of Snapshot, a failure or 20 s.
snapshot_result fetch(std::uint16_t port, std::string_view username = "",
                      std::string_view password = "") {
    signet::net::unique_fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = htons(port);
    EXPECT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof address), 0);
    soup::client client({.username = username, .password = password});
    snapshot_result result;
    EXPECT_TRUE(client.start(0));
    EXPECT_TRUE(signet::test::send_all(fd.get(), client.output()));
    client.sent(client.output().size(), 0);
    std::vector<std::byte> buffer(1 << 16);
    std::size_t filled = 0;
    bool done = false;
    while (!done) {
        pollfd p{.fd = fd.get(), .events = POLLIN, .revents = 0};
        if (::poll(&p, 1, 20'000) != 1) {
            break;
        }
        ssize_t const n = ::recv(fd.get(), buffer.data() + filled, buffer.size() - filled, 0);
        if (n <= 0) {
            break;
        }
        filled += static_cast<std::size_t>(n);
        std::size_t const used =
            client.on_bytes(std::span<std::byte const>(buffer.data(), filled), 0,
                            [&](std::uint64_t, std::span<std::byte const> message) {
                                result.messages.emplace_back(message.begin(), message.end());
                                done = done || md::nasdaq::glimpse::is_end_of_snapshot(message);
                            });
        std::memmove(buffer.data(), buffer.data() + used, filled - used);
        filled -= used;
        done = done || client.state() == soup::client_state::failed;
    }
    result.state = client.state();
    result.failure = client.failure();
    return result;
}

TEST(GlimpseService, ASnapshotRebuildsThePublishedBookAndResumesAtTheNextSequence) {
    signet::test::watchdog dog(std::chrono::seconds(60), "glimpse snapshot");
    std::vector<t::bytes> const all = t::generated_stream(5, 4000, symbols);
    pub::nasdaq::glimpse_service service({.book = book, .handoff_bytes = 1 << 20});
    record(service, all, 0, 3000);
    snapshot_result const got = fetch(service.port());
    ASSERT_EQ(got.state, soup::client_state::logged_in);
    ASSERT_FALSE(got.messages.empty());
    auto const resume = md::nasdaq::glimpse::parse_end_of_snapshot(t::view(got.messages.back()));
    ASSERT_TRUE(resume.has_value());
    EXPECT_EQ(*resume, 3001U); // everything recorded before the login is in it
    md::nasdaq::itch50_parser rebuilt(book);
    for (std::size_t i = 0; i + 1 < got.messages.size(); ++i) {
        rebuilt.on_message(t::view(got.messages[i]));
    }
    md::nasdaq::itch50_parser reference(book);
    for (std::size_t i = 0; i < 3000; ++i) {
        reference.on_message(t::view(all[i]));
    }
    t::expect_same_books(rebuilt.book(), reference.book(), symbols);
    ASSERT_TRUE(signet::test::eventually([&] { return service.counts().snapshots_sent == 1; }));
    pub::nasdaq::glimpse_counts const c = service.counts();
    EXPECT_EQ(c.logins, 1U);
    EXPECT_EQ(c.applied_messages, 3000U);
    EXPECT_EQ(c.orders_sent, reference.book().size());
    EXPECT_EQ(c.snapshot_messages, got.messages.size());
    // Later packets move the book on: a second snapshot resumes later.
    record(service, all, 3000, 4000);
    snapshot_result const second = fetch(service.port());
    ASSERT_FALSE(second.messages.empty());
    EXPECT_EQ(md::nasdaq::glimpse::parse_end_of_snapshot(t::view(second.messages.back())), 4001U);
}

TEST(GlimpseService, WrongCredentialsAreRejected) {
    signet::test::watchdog dog(std::chrono::seconds(60), "glimpse rejected");
    pub::nasdaq::glimpse_service service(
        {.username = "alice", .password = "right", .book = book, .handoff_bytes = 1 << 20});
    snapshot_result const got = fetch(service.port(), "alice", "wrong");
    EXPECT_EQ(got.state, soup::client_state::failed);
    EXPECT_EQ(got.failure, soup::client_failure::not_authorized);
    EXPECT_TRUE(got.messages.empty());
    ASSERT_TRUE(signet::test::eventually([&] { return service.counts().rejected_logins == 1; }));
    EXPECT_EQ(fetch(service.port(), "alice", "right").state, soup::client_state::logged_in);
}

TEST(GlimpseService, AHandOffThatSkippedPacketsIsNeverServed) {
    signet::test::watchdog dog(std::chrono::seconds(60), "glimpse broken");
    std::vector<t::bytes> const all = t::generated_stream(6, 2000, symbols);
    pub::nasdaq::glimpse_service service({.book = book, .handoff_bytes = 1 << 20});
    record(service, all, 0, 800);
    record(service, all, 1000, 2000); // 801..1000 never reached the service
    snapshot_result const got = fetch(service.port());
    EXPECT_EQ(got.state, soup::client_state::failed);
    EXPECT_EQ(got.failure, soup::client_failure::session_not_available);
    pub::nasdaq::glimpse_counts const c = service.counts();
    EXPECT_EQ(c.sequence_breaks, 1U);
    EXPECT_EQ(c.applied_messages, 800U);
}

} // namespace
