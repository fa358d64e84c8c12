#include <algorithm>
#include <cctype>
#include <set>

#include <sched.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <signet/receiver/config.hpp>
#include <signet/receiver/feed_protocol.hpp>

#include "config_reader.hpp"
#include "protocols.hpp"

namespace signet::receiver {

namespace {

/// The [[feed]] keys every protocol has.
std::set<std::string_view> const& shared_feed_keys() {
    static std::set<std::string_view> const keys{"name",
                                                 "protocol",
                                                 "bind",
                                                 "bind_b",
                                                 "group",
                                                 "group_b",
                                                 "source",
                                                 "interface",
                                                 "queue_capacity",
                                                 "on_full",
                                                 "rcvbuf",
                                                 "timestamps",
                                                 "busy_poll_us",
                                                 "reuse_port",
                                                 "buffer_size",
                                                 "ring_buffers",
                                                 "max_sequence_jump",
                                                 "recovery_buffer",
                                                 "af_xdp"};
    return keys;
}

// A feed's `af_xdp = { queues = [0], xdp_mode = "auto", bind = "auto", ... }` (af_xdp backend).
net::af_xdp_options parse_af_xdp(config_reader const& feed) {
    auto const* t = feed.table().get("af_xdp")->as_table();
    if (t == nullptr) {
        feed.fail("af_xdp",
                  "expected a table, e.g. af_xdp = { queues = [0], xdp_mode = \"generic\" }");
    }
    config_reader const x_table(feed.file(), *t);
    x_table.reject_unknown_keys("af_xdp",
                                {"queues", "xdp_mode", "bind", "busy_poll_us", "busy_poll_budget"});
    net::af_xdp_options x;
    if (auto const* queues = t->get("queues")) {
        auto const* list = queues->as_array();
        if (list == nullptr) {
            x_table.fail("queues", "expected a list of RX queue numbers, e.g. [0, 1]");
        }
        for (auto const& q : *list) {
            auto const id = q.value<std::int64_t>();
            if (!q.is_integer() || !id || *id < 0 || *id > 63) {
                throw config_error(where(feed.file(), q.source()) +
                                   ": key 'queues': expected RX queue numbers from 0 to 63");
            }
            x.queues.push_back(static_cast<unsigned>(*id));
        }
    }
    x.mode = x_table.get_enum("xdp_mode", net::xdp_mode::automatic,
                              {{"auto", net::xdp_mode::automatic},
                               {"native", net::xdp_mode::native},
                               {"generic", net::xdp_mode::generic}});
    x.bind = x_table.get_enum("bind", net::xdp_bind::automatic,
                              {{"auto", net::xdp_bind::automatic},
                               {"copy", net::xdp_bind::copy},
                               {"zero_copy", net::xdp_bind::zero_copy}});
    x.busy_poll_us =
        static_cast<unsigned>(x_table.get_size("busy_poll_us", 0, 0, max_busy_poll_us));
    x.busy_poll_budget = static_cast<unsigned>(x_table.get_size("busy_poll_budget", 0, 0, 65'535));
    return x;
}

/// The first key of the table that neither the shared keys nor the protocol's take: renamed,
/// another protocol's, or unknown — one clear error each.
void reject_foreign_keys(config_reader const& feed, protocol_registration const& protocol) {
    std::set<std::string_view> allowed = shared_feed_keys();
    allowed.insert(protocol.keys.begin(), protocol.keys.end());
    for (auto const& [key, value] : feed.table()) {
        std::string_view const name = key.str();
        if (allowed.count(name) != 0) {
            continue;
        }
        auto const at = where(feed.file(), key.source()) + ": key '" + std::string(name) + "': ";
        for (renamed_key const& r : protocol.renamed) {
            if (r.old_name == name) {
                throw config_error(at + "renamed to '" + std::string(r.new_name) + "' (" +
                                   std::string(r.why) + ")");
            }
        }
        for (protocol_registration const& other : protocols()) {
            if (std::find(other.keys.begin(), other.keys.end(), name) != other.keys.end()) {
                throw config_error(at + "applies to protocol \"" + std::string(other.name) +
                                   "\", not \"" + std::string(protocol.name) + "\"");
            }
        }
        std::string list;
        for (auto const& a : allowed) {
            list += (list.empty() ? "" : ", ") + std::string(a);
        }
        throw config_error(at + "unknown key in [[feed]] of protocol \"" +
                           std::string(protocol.name) + "\" (known: " + list + ")");
    }
}

feed_config parse_feed(config_reader const& feed, std::size_t index, std::size_t max_orders) {
    feed_config f;
    f.name = feed.get_string("name");
    if (f.name.empty()) {
        throw config_error(feed.where() + ": key 'name': feed " + std::to_string(index + 1) +
                           " needs a non-empty name");
    }
    // A feed that names no protocol has the first registered one.
    protocol_registration const* protocol =
        feed.has("protocol") ? find_protocol(feed.get_string("protocol")) : &protocols().front();
    if (protocol == nullptr) {
        std::string names;
        for (protocol_registration const& p : protocols()) {
            names += (names.empty() ? "\"" : ", \"") + std::string(p.name) + "\"";
        }
        feed.fail("protocol", "expected one of " + names);
    }
    reject_foreign_keys(feed, *protocol);
    auto bind = feed.get_endpoint("bind", false);
    if (!bind) {
        throw config_error(feed.where() + ": key 'bind': feed '" + f.name +
                           "' needs bind = \"ip:port\"");
    }
    f.bind = *bind;
    f.bind_b = feed.get_endpoint("bind_b", false);
    f.group = feed.get_endpoint("group", true);
    f.group_b = feed.get_endpoint("group_b", true);
    f.source = feed.get_endpoint("source", true);
    for (auto [key, value] : {std::pair{"group", f.group}, std::pair{"group_b", f.group_b}}) {
        if (value && !value->is_multicast()) {
            feed.fail(key, value->to_string() + " is not a multicast address");
        }
    }
    if (f.group_b && !f.bind_b) {
        feed.fail("group_b", "needs bind_b (the line B socket)");
    }
    if (f.source && !f.group) {
        feed.fail("source", "source-specific multicast needs a group");
    }
    f.interface = feed.get_string("interface");
    f.queue_capacity = feed.get_size("queue_capacity", f.queue_capacity, 1, 32'000);
    f.on_full = feed.get_enum(
        "on_full", net::full_policy::backpressure,
        {{"backpressure", net::full_policy::backpressure}, {"drop", net::full_policy::drop}});
    f.rcvbuf = feed.get_size("rcvbuf", f.rcvbuf, 0, std::size_t{1} << 30);
    f.timestamps = feed.get_enum("timestamps", net::timestamping::software,
                                 {{"off", net::timestamping::off},
                                  {"software", net::timestamping::software},
                                  {"hardware", net::timestamping::hardware}});
    f.busy_poll_us = static_cast<unsigned>(feed.get_size("busy_poll_us", 0, 0, max_busy_poll_us));
    f.reuse_port = feed.get_bool("reuse_port", f.reuse_port);
    f.buffer_size = feed.get_size("buffer_size", f.buffer_size, min_buffer_size, max_buffer_size);
    f.ring_buffers = feed.get_size("ring_buffers", f.ring_buffers, 0, 32'032);
    if (!protocol->sequenced) {
        for (char const* key : {"max_sequence_jump", "recovery_buffer"}) {
            if (feed.has(key)) {
                feed.fail(key, "does not apply to protocol \"" + std::string(protocol->name) +
                                   "\" (it has no sequence numbers)");
            }
        }
    }
    f.max_sequence_jump =
        feed.get_size("max_sequence_jump", f.max_sequence_jump, 1, max_max_sequence_jump);
    f.recovery_buffer = feed.get_size("recovery_buffer", f.recovery_buffer, 16, 65'536);
    if (feed.has("af_xdp")) {
        f.af_xdp = parse_af_xdp(feed);
    }
    f.max_orders = max_orders;
    f.protocol = protocol->parse(feed);
    return f;
}

void read_nats(config_reader const& publish, nats_config& n) {
    auto const string = [&](std::string_view key, std::string& out) {
        if (publish.has(key)) {
            out = publish.get_string(key);
        }
    };
    string("nats", n.url);
    if (publish.has("nats")) {
        for (std::string const& server : comma_list(n.url)) {
            if (!server.starts_with("nats://") && !server.starts_with("tls://")) {
                publish.fail("nats", "expected a server URL, \"nats://host:port\" (or tls://; "
                                     "a comma-separated list for a cluster), got '" +
                                         server + "'");
            }
        }
    }
    string("nats_user", n.user);
    string("nats_password", n.password);
    string("nats_token", n.token);
    string("nats_creds", n.creds);
    string("nats_tls_ca", n.tls_ca);
    string("nats_tls_cert", n.tls_cert);
    string("nats_tls_key", n.tls_key);
    n.tls = publish.get_bool("nats_tls", n.tls);
    if (n.tls_cert.empty() != n.tls_key.empty()) {
        publish.fail(n.tls_cert.empty() ? "nats_tls_key" : "nats_tls_cert",
                     "nats_tls_cert and nats_tls_key go together (the certificate and its key)");
    }
    n.json = publish.get_enum("nats_format", false, {{"binary", false}, {"json", true}});
    if (publish.has("nats_subjects")) {
        n.kinds = comma_list(publish.get_string("nats_subjects"));
        for (std::string const& kind : n.kinds) {
            if (kind != "bbo" && kind != "trade" && kind != "book" && kind != "status" &&
                kind != "definition") {
                publish.fail("nats_subjects", "expected a comma-separated list of bbo, trade, "
                                              "book, status, definition; got '" +
                                                  kind + "'");
            }
        }
    }
    n.stream = publish.get_bool("nats_stream", n.stream);
    n.replicas = publish.get_size("nats_replicas", n.replicas, 1, 5);
    n.conflate = publish.get_bool("nats_conflate", n.conflate);
    n.queue = publish.get_size("nats_queue", n.queue, 64, std::size_t{1} << 24);
    string("standby", n.standby);
    if (publish.has("standby")) {
        bool const valid =
            !n.standby.empty() && n.standby.size() <= 64 &&
            std::all_of(n.standby.begin(), n.standby.end(), [](char ch) {
                return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '-' || ch == '_';
            });
        if (!valid) {
            publish.fail("standby", "expected a group name of letters, digits, '-' and '_' (at "
                                    "most 64), got '" +
                                        n.standby + "'");
        }
        if (n.url.empty()) {
            publish.fail("standby", "a standby group publishes through NATS: set nats = "
                                    "\"nats://host:port\"");
        }
        if (!n.stream) {
            publish.fail("standby", "a standby group needs nats_stream = true (a member taking "
                                    "over reads the group's last position from the stream)");
        }
    }
    string("standby_name", n.standby_name);
    n.standby_lease_ms = publish.get_size("standby_lease_ms", n.standby_lease_ms, 200, 60000);
    n.standby_history =
        publish.get_size("standby_history", n.standby_history, 1024, std::size_t{1} << 26);
    n.standby_instruments =
        publish.get_size("standby_instruments", n.standby_instruments, 1, std::size_t{1} << 20);
    bool const standby_keys = publish.has("standby_name") || publish.has("standby_lease_ms") ||
                              publish.has("standby_history") || publish.has("standby_instruments");
    if (standby_keys && n.standby.empty()) {
        publish.fail("standby", "the standby_* options need the group: standby = \"GROUP\"");
    }
    bool const any = !n.user.empty() || !n.token.empty() || !n.creds.empty() || n.tls ||
                     !n.tls_ca.empty() || !n.tls_cert.empty();
    if (any && n.url.empty()) {
        publish.fail("nats", "the nats_* options need the server: nats = \"nats://host:port\"");
    }
}

receiver_config parse(toml::table const& root, std::string const& file) {
    config_reader const top(file, root);
    top.reject_unknown_keys("the top level",
                            {"runtime", "feed", "stats", "book", "metrics", "publish"});
    receiver_config c;
    auto const section = [&](std::string_view name) -> std::optional<config_reader> {
        auto const* node = root.get(name);
        if (node == nullptr) {
            return std::nullopt;
        }
        auto const* t = node->as_table();
        if (t == nullptr) {
            top.fail(name, "expected a table [" + std::string(name) + "]");
        }
        return config_reader(file, *t);
    };
    if (auto const runtime = section("runtime")) {
        runtime->reject_unknown_keys("[runtime]", {"backend", "workers", "cpus", "idle", "poller"});
        if (runtime->has("backend") &&
            runtime->table().get("backend")->value<std::string>() == "memory") {
            // The library accepts it (net::parse_backend_kind); it has no sockets, so it only
            // serves programs that write the lines themselves (tests, benchmarks, replay).
            runtime->fail("backend", "\"memory\" is the in-process backend for tests and tools (no "
                                     "sockets): md_receiver has no writer for it; use \"auto\", "
                                     "\"io_uring\", \"epoll\", \"asio\" or \"af_xdp\"");
        }
        c.backend = runtime->get_enum("backend", net::backend_kind::automatic,
                                      {{"auto", net::backend_kind::automatic},
                                       {"io_uring", net::backend_kind::io_uring},
                                       {"epoll", net::backend_kind::epoll},
                                       {"asio", net::backend_kind::asio},
                                       {"af_xdp", net::backend_kind::af_xdp}});
        c.workers = runtime->get_size("workers", 1, 1, 256);
        if (auto const* cpus = runtime->table().get("cpus")) {
            auto const* list = cpus->as_array();
            if (list == nullptr) {
                runtime->fail("cpus", "expected a list of CPU ids, e.g. [0, 1]");
            }
            // Checked here because a CPU the system does not have only fails later, when a
            // worker thread is pinned to it.
            int const limit = configured_cpu_limit();
            for (auto const& cpu : *list) {
                auto const id = cpu.value<std::int64_t>();
                if (!cpu.is_integer() || !id || *id < 0 || *id >= limit) {
                    throw config_error(
                        where(file, cpu.source()) + ": key 'cpus': expected CPU ids from 0 to " +
                        std::to_string(limit - 1) + " (this machine has " + std::to_string(limit) +
                        " CPU(s))" + (id ? ", got " + std::to_string(*id) : std::string()));
                }
                c.cpus.push_back(static_cast<int>(*id));
            }
        }
        c.idle = runtime->get_enum("idle", idle_strategy::backoff,
                                   {{"spin", idle_strategy::spin},
                                    {"backoff", idle_strategy::backoff},
                                    {"block", idle_strategy::block}});
        c.poller = runtime->get_enum(
            "poller", net::poller_mode::contract,
            {{"contract", net::poller_mode::contract}, {"thread", net::poller_mode::thread}});
    }
    if (auto const stats = section("stats")) {
        stats->reject_unknown_keys("[stats]", {"interval_s", "silent_warning_s"});
        c.stats_interval_s = stats->get_seconds("interval_s", c.stats_interval_s, min_interval_s,
                                                max_interval_s, false);
        c.silent_warning_s = stats->get_seconds("silent_warning_s", c.silent_warning_s,
                                                min_interval_s, max_interval_s, true);
    }
    if (auto const book = section("book")) {
        book->reject_unknown_keys("[book]", {"max_orders"});
        c.max_orders = book->get_size("max_orders", c.max_orders, 1, max_max_orders);
    }
    if (auto const metrics = section("metrics")) {
        metrics->reject_unknown_keys("[metrics]", {"listen"});
        c.metrics_listen = metrics->get_endpoint("listen", false);
        if (c.metrics_listen && c.metrics_listen->port() == 0) {
            metrics->fail(
                "listen",
                "expected \"ip:port\" for the Prometheus endpoint, e.g. \"127.0.0.1:9464\"");
        }
    }
    if (auto const publish = section("publish")) {
        publish->reject_unknown_keys("[publish]", {"shm",
                                                   "shm_instruments",
                                                   "shm_events",
                                                   "nats",
                                                   "nats_user",
                                                   "nats_password",
                                                   "nats_token",
                                                   "nats_creds",
                                                   "nats_tls",
                                                   "nats_tls_ca",
                                                   "nats_tls_cert",
                                                   "nats_tls_key",
                                                   "nats_format",
                                                   "nats_subjects",
                                                   "nats_stream",
                                                   "nats_replicas",
                                                   "nats_conflate",
                                                   "nats_queue",
                                                   "standby",
                                                   "standby_name",
                                                   "standby_lease_ms",
                                                   "standby_history",
                                                   "standby_instruments"});
        read_nats(*publish, c.nats);
        if (publish->has("shm")) {
            c.shm = publish->get_string("shm");
            bool const valid = !c.shm.empty() && c.shm.size() <= 200 &&
                               std::all_of(c.shm.begin(), c.shm.end(), [](char ch) {
                                   return std::isalnum(static_cast<unsigned char>(ch)) != 0 ||
                                          ch == '-' || ch == '_' || ch == '.';
                               });
            if (!valid) {
                publish->fail("shm", "expected a segment name of letters, digits, '-', '_' and "
                                     "'.' (it appears as /dev/shm/NAME), e.g. \"signet-md\"");
            }
        }
        c.shm_instruments =
            publish->get_size("shm_instruments", c.shm_instruments, 1, std::size_t{1} << 20);
        c.shm_events = publish->get_size("shm_events", c.shm_events, 64, std::size_t{1} << 24);
        if ((c.shm_events & (c.shm_events - 1)) != 0) {
            publish->fail("shm_events", "expected a power of two (the ring's length)");
        }
    }
    auto const* feeds = root.get("feed");
    if (feeds == nullptr) {
        throw config_error(file + ": no [[feed]] table: at least one feed is needed");
    }
    auto const* list = feeds->as_array();
    if (list == nullptr || !list->is_array_of_tables()) {
        top.fail("feed", "expected [[feed]] tables");
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < list->size(); ++i) {
        config_reader const feed(file, *list->get(i)->as_table());
        c.feeds.push_back(parse_feed(feed, i, c.max_orders));
        if (!names.insert(c.feeds.back().name).second) {
            feed.fail("name", "duplicate feed name '" + c.feeds.back().name + "'");
        }
        if (c.backend == net::backend_kind::af_xdp && c.feeds.back().interface.empty()) {
            throw config_error(feed.where() +
                               ": key 'interface': backend \"af_xdp\" "
                               "needs each feed's interface (the XDP program attaches to it)");
        }
        if (c.backend != net::backend_kind::af_xdp && feed.has("af_xdp")) {
            feed.fail("af_xdp", "applies to [runtime] backend = \"af_xdp\"");
        }
    }
    return c;
}

} // namespace

std::string_view feed_config::protocol_name() const noexcept {
    return protocol ? protocol->protocol() : std::string_view();
}

receiver_config parse_receiver_config(std::string_view text, std::string const& source_name) {
    try {
        return parse(toml::parse(text, source_name), source_name);
    } catch (toml::parse_error const& e) {
        throw config_error(source_name + ":" + std::to_string(e.source().begin.line) +
                           ": TOML syntax: " + std::string(e.description()));
    }
}

receiver_config load_receiver_config(std::string const& path) {
    try {
        return parse(toml::parse_file(path), path);
    } catch (toml::parse_error const& e) {
        if (e.source().begin.line == 0) {
            throw config_error(path + ": cannot read the file: " + std::string(e.description()));
        }
        throw config_error(path + ":" + std::to_string(e.source().begin.line) +
                           ": TOML syntax: " + std::string(e.description()));
    }
}

int configured_cpu_limit() noexcept {
    long const configured = ::sysconf(_SC_NPROCESSORS_CONF);
    return static_cast<int>(std::clamp<long>(configured, 1, CPU_SETSIZE));
}

net::udp_socket_options line_a_socket(feed_config const& feed) {
    net::udp_socket_options a;
    a.bind = feed.bind;
    a.group = feed.group;
    a.source = feed.source;
    a.interface = feed.interface;
    a.receive_buffer = feed.rcvbuf;
    a.reuse_address = feed.group.has_value();
    a.reuse_port = feed.reuse_port;
    a.timestamps = feed.timestamps;
    a.busy_poll_us = feed.busy_poll_us;
    return a;
}

std::vector<line_spec> ab_lines(feed_config const& feed) {
    std::vector<line_spec> lines{{"a", line_a_socket(feed), line_role::arbitrated, 0}};
    if (feed.bind_b) {
        net::udp_socket_options b = lines.front().socket;
        b.bind = *feed.bind_b;
        b.group = feed.group_b ? feed.group_b : feed.group;
        lines.push_back({"b", b, line_role::arbitrated, 0});
    }
    return lines;
}

} // namespace signet::receiver
