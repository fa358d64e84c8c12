#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

#include <sched.h>
#include <unistd.h>

#include <toml++/toml.h>

#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/md/nasdaq/moldudp64_recovery.hpp>
#include <signet/md/nasdaq/soupbintcp.hpp>
#include <signet/receiver/config.hpp>

namespace signet::receiver {

namespace {

std::string where(std::string const& file, toml::source_region const& region) {
    return file + ":" + std::to_string(region.begin.line);
}

[[noreturn]] void fail(std::string const& file, toml::node const& node, std::string_view key,
                       std::string const& problem) {
    throw config_error(where(file, node.source()) + ": key '" + std::string(key) + "': " + problem);
}

void reject_unknown_keys(std::string const& file, toml::table const& table,
                         std::string_view table_name, std::set<std::string_view> const& allowed) {
    for (auto const& [key, value] : table) {
        if (allowed.count(key.str()) == 0) {
            std::string list;
            for (auto const& a : allowed) {
                list += (list.empty() ? "" : ", ") + std::string(a);
            }
            throw config_error(where(file, key.source()) + ": key '" + std::string(key.str()) +
                               "': unknown key in [" + std::string(table_name) +
                               "] (known: " + list + ")");
        }
    }
}

std::string get_string(std::string const& file, toml::table const& t, std::string_view key) {
    auto const* node = t.get(key);
    if (node == nullptr) {
        return {};
    }
    auto const value = node->value<std::string>();
    if (!value) {
        fail(file, *node, key, "expected a string");
    }
    return *value;
}

template <typename Enum>
Enum get_enum(std::string const& file, toml::table const& t, std::string_view key, Enum fallback,
              std::initializer_list<std::pair<std::string_view, Enum>> choices) {
    auto const* node = t.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const text = node->value<std::string>();
    std::string names;
    for (auto const& [name, value] : choices) {
        if (text && *text == name) {
            return value;
        }
        names += (names.empty() ? "\"" : ", \"") + std::string(name) + "\"";
    }
    fail(file, *node, key, "expected one of " + names);
}

std::size_t get_size(std::string const& file, toml::table const& t, std::string_view key,
                     std::size_t fallback, std::size_t min, std::size_t max) {
    auto const* node = t.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const value = node->value<std::int64_t>();
    if (!node->is_integer() || !value || *value < static_cast<std::int64_t>(min) ||
        static_cast<std::uint64_t>(*value) > max) {
        fail(file, *node, key,
             "expected an integer from " + std::to_string(min) + " to " + std::to_string(max));
    }
    return static_cast<std::size_t>(*value);
}

bool get_bool(std::string const& file, toml::table const& t, std::string_view key, bool fallback) {
    auto const* node = t.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const value = node->value<bool>();
    if (!node->is_boolean() || !value) {
        fail(file, *node, key, "expected true or false");
    }
    return *value;
}

std::string format_number(double value) {
    std::ostringstream out;
    out << value;
    return out.str();
}

/// Seconds within [min, max]; with allow_zero, 0 too (it means "off").
double get_seconds(std::string const& file, toml::table const& t, std::string_view key,
                   double fallback, double min, double max, bool allow_zero) {
    auto const* node = t.get(key);
    if (node == nullptr) {
        return fallback;
    }
    auto const value = node->value<double>();
    bool const in_range = value && std::isfinite(*value) &&
                          ((*value >= min && *value <= max) || (allow_zero && *value == 0));
    if (!in_range) {
        std::string expected = "expected a number of seconds from " + format_number(min) + " to " +
                               format_number(max) + (allow_zero ? " (or 0: off)" : "");
        if (value) {
            expected += ", got " + format_number(*value);
        }
        fail(file, *node, key, expected);
    }
    return *value;
}

std::optional<net::udp_endpoint> get_endpoint(std::string const& file, toml::table const& t,
                                              std::string_view key, bool address_only) {
    auto const* node = t.get(key);
    if (node == nullptr) {
        return std::nullopt;
    }
    auto const text = node->value<std::string>();
    if (!text) {
        fail(file, *node, key, "expected a string");
    }
    if (address_only) {
        if (auto e = net::udp_endpoint::try_parse_address(*text)) {
            return e;
        }
        if (auto e = net::udp_endpoint::try_parse(*text)) {
            return e;
        }
        fail(file, *node, key, "'" + *text + "' is not an IP address");
    }
    if (auto e = net::udp_endpoint::try_parse(*text)) {
        return e;
    }
    fail(file, *node, key,
         "'" + *text +
             "' is not \"ip:port\" (e.g. \"127.0.0.1:30001\", \"*:30001\", \"[::1]:30001\")");
}

// A feed's `af_xdp = { queues = [0], xdp_mode = "auto", bind = "auto", ... }` (af_xdp backend).
net::af_xdp_options parse_af_xdp(std::string const& file, toml::node const& node) {
    auto const* t = node.as_table();
    if (t == nullptr) {
        fail(file, node, "af_xdp",
             "expected a table, e.g. af_xdp = { queues = [0], xdp_mode = \"generic\" }");
    }
    reject_unknown_keys(file, *t, "af_xdp",
                        {"queues", "xdp_mode", "bind", "busy_poll_us", "busy_poll_budget"});
    net::af_xdp_options x;
    if (auto const* queues = t->get("queues")) {
        auto const* list = queues->as_array();
        if (list == nullptr) {
            fail(file, *queues, "queues", "expected a list of RX queue numbers, e.g. [0, 1]");
        }
        for (auto const& q : *list) {
            auto const id = q.value<std::int64_t>();
            if (!q.is_integer() || !id || *id < 0 || *id > 63) {
                fail(file, q, "queues", "expected RX queue numbers from 0 to 63");
            }
            x.queues.push_back(static_cast<unsigned>(*id));
        }
    }
    x.mode = get_enum(file, *t, "xdp_mode", net::xdp_mode::automatic,
                      {{"auto", net::xdp_mode::automatic},
                       {"native", net::xdp_mode::native},
                       {"generic", net::xdp_mode::generic}});
    x.bind = get_enum(file, *t, "bind", net::xdp_bind::automatic,
                      {{"auto", net::xdp_bind::automatic},
                       {"copy", net::xdp_bind::copy},
                       {"zero_copy", net::xdp_bind::zero_copy}});
    x.busy_poll_us =
        static_cast<unsigned>(get_size(file, *t, "busy_poll_us", 0, 0, max_busy_poll_us));
    x.busy_poll_budget =
        static_cast<unsigned>(get_size(file, *t, "busy_poll_budget", 0, 0, 65'535));
    return x;
}

feed_config parse_feed(std::string const& file, toml::table const& t, std::size_t index) {
    reject_unknown_keys(file, t, "[feed]",
                        {"name",
                         "protocol",
                         "parser",
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
                         "session",
                         "max_sequence_jump",
                         "rerequest",
                         "rerequest_timeout_ms",
                         "rerequest_max_messages",
                         "rerequest_max_in_flight",
                         "rerequest_tries",
                         "recovery_buffer",
                         "snapshot",
                         "snapshot_username",
                         "snapshot_password",
                         "snapshot_buffer_messages",
                         "snapshot_bind",
                         "definitions_bind",
                         "af_xdp"});
    feed_config f;
    f.name = get_string(file, t, "name");
    if (f.name.empty()) {
        throw config_error(where(file, t.source()) + ": key 'name': feed " +
                           std::to_string(index + 1) + " needs a non-empty name");
    }
    f.protocol = get_enum(file, t, "protocol", protocol_kind::moldudp64,
                          {{"moldudp64", protocol_kind::moldudp64},
                           {"mdp3", protocol_kind::mdp3},
                           {"raw", protocol_kind::raw}});
    f.parser = get_enum(file, t, "parser",
                        f.protocol == protocol_kind::mdp3 ? parser_kind::mbp : parser_kind::itch50,
                        {{"itch50", parser_kind::itch50},
                         {"count", parser_kind::count},
                         {"mbp", parser_kind::mbp}});
    if ((f.protocol == protocol_kind::mdp3) != (f.parser == parser_kind::mbp)) {
        fail(file, *(t.get("parser") != nullptr ? t.get("parser") : t.get("protocol")), "parser",
             "parser \"mbp\" goes with protocol \"mdp3\", and only it");
    }
    if (f.protocol == protocol_kind::raw && f.parser == parser_kind::itch50) {
        fail(file, *t.get("protocol"), "parser",
             "parser \"itch50\" needs protocol \"moldudp64\" (use parser \"count\" for raw)");
    }
    auto bind = get_endpoint(file, t, "bind", false);
    if (!bind) {
        throw config_error(where(file, t.source()) + ": key 'bind': feed '" + f.name +
                           "' needs bind = \"ip:port\"");
    }
    f.bind = *bind;
    f.bind_b = get_endpoint(file, t, "bind_b", false);
    f.group = get_endpoint(file, t, "group", true);
    f.group_b = get_endpoint(file, t, "group_b", true);
    f.source = get_endpoint(file, t, "source", true);
    for (auto [key, value] : {std::pair{"group", f.group}, std::pair{"group_b", f.group_b}}) {
        if (value && !value->is_multicast()) {
            fail(file, *t.get(key), key, value->to_string() + " is not a multicast address");
        }
    }
    if (f.group_b && !f.bind_b) {
        fail(file, *t.get("group_b"), "group_b", "needs bind_b (the line B socket)");
    }
    if (f.source && !f.group) {
        fail(file, *t.get("source"), "source", "source-specific multicast needs a group");
    }
    f.interface = get_string(file, t, "interface");
    f.queue_capacity = get_size(file, t, "queue_capacity", f.queue_capacity, 1, 32'000);
    f.on_full = get_enum(
        file, t, "on_full", net::full_policy::backpressure,
        {{"backpressure", net::full_policy::backpressure}, {"drop", net::full_policy::drop}});
    f.rcvbuf = get_size(file, t, "rcvbuf", f.rcvbuf, 0, std::size_t{1} << 30);
    f.timestamps = get_enum(file, t, "timestamps", net::timestamping::software,
                            {{"off", net::timestamping::off},
                             {"software", net::timestamping::software},
                             {"hardware", net::timestamping::hardware}});
    f.busy_poll_us =
        static_cast<unsigned>(get_size(file, t, "busy_poll_us", 0, 0, max_busy_poll_us));
    f.reuse_port = get_bool(file, t, "reuse_port", f.reuse_port);
    f.buffer_size =
        get_size(file, t, "buffer_size", f.buffer_size, min_buffer_size, max_buffer_size);
    f.ring_buffers = get_size(file, t, "ring_buffers", f.ring_buffers, 0, 32'032);
    f.session = get_string(file, t, "session");
    if (f.session.size() > md::nasdaq::moldudp64_session_size ||
        !std::all_of(f.session.begin(), f.session.end(),
                     [](char c) { return c >= 0x20 && c <= 0x7e; })) {
        fail(file, *t.get("session"), "session",
             "expected a MoldUDP64 session id: at most 10 printable ASCII characters");
    }
    f.max_sequence_jump =
        get_size(file, t, "max_sequence_jump", f.max_sequence_jump, 1, max_max_sequence_jump);
    f.rerequest = get_endpoint(file, t, "rerequest", false);
    if (f.rerequest &&
        (f.rerequest->is_any() || f.rerequest->port() == 0 || f.rerequest->is_multicast())) {
        fail(file, *t.get("rerequest"), "rerequest",
             "expected the re-request server's unicast \"ip:port\"");
    }
    f.rerequest_timeout_ms =
        get_size(file, t, "rerequest_timeout_ms", f.rerequest_timeout_ms, 1, 60'000);
    f.rerequest_max_messages = get_size(file, t, "rerequest_max_messages", f.rerequest_max_messages,
                                        1, md::nasdaq::moldudp64_max_messages);
    f.rerequest_max_in_flight =
        get_size(file, t, "rerequest_max_in_flight", f.rerequest_max_in_flight, 1,
                 md::nasdaq::moldudp64_recovery::max_chunks);
    f.rerequest_tries =
        static_cast<unsigned>(get_size(file, t, "rerequest_tries", f.rerequest_tries, 1, 100));
    f.recovery_buffer = get_size(file, t, "recovery_buffer", f.recovery_buffer, 16, 65'536);
    f.snapshot = get_endpoint(file, t, "snapshot", false);
    if (f.snapshot &&
        (f.snapshot->is_any() || f.snapshot->port() == 0 || f.snapshot->is_multicast())) {
        fail(file, *t.get("snapshot"), "snapshot",
             "expected the GLIMPSE snapshot server's unicast \"ip:port\"");
    }
    f.snapshot_username = get_string(file, t, "snapshot_username");
    f.snapshot_password = get_string(file, t, "snapshot_password");
    for (auto [key, value, limit] : {std::tuple{"snapshot_username", &f.snapshot_username,
                                                md::nasdaq::soupbintcp::username_length},
                                     std::tuple{"snapshot_password", &f.snapshot_password,
                                                md::nasdaq::soupbintcp::password_length}}) {
        if (value->size() > limit || !std::all_of(value->begin(), value->end(),
                                                  [](char c) { return c > 0x20 && c <= 0x7e; })) {
            fail(file, *t.get(key), key,
                 "expected at most " + std::to_string(limit) +
                     " printable ASCII characters without spaces (SoupBinTCP login)");
        }
        if (!value->empty() && !f.snapshot) {
            fail(file, *t.get(key), key, "needs snapshot = \"ip:port\"");
        }
    }
    f.snapshot_bind = get_endpoint(file, t, "snapshot_bind", false);
    f.definitions_bind = get_endpoint(file, t, "definitions_bind", false);
    if (f.protocol == protocol_kind::mdp3) {
        for (auto [key, value] : {std::pair{"snapshot_bind", &f.snapshot_bind},
                                  std::pair{"definitions_bind", &f.definitions_bind}}) {
            if (!*value) {
                throw config_error(where(file, t.source()) + ": key '" + key + "': mdp3 feed '" +
                                   f.name + "' needs " + key + " = \"ip:port\"");
            }
        }
    } else {
        for (char const* key : {"snapshot_bind", "definitions_bind"}) {
            if (t.get(key) != nullptr) {
                fail(file, *t.get(key), key, "applies to protocol \"mdp3\" only");
            }
        }
    }
    if (auto const* node = t.get("af_xdp")) {
        f.af_xdp = parse_af_xdp(file, *node);
    }
    f.snapshot_buffer_messages = get_size(file, t, "snapshot_buffer_messages",
                                          f.snapshot_buffer_messages, 1024, std::size_t{1} << 26);
    if (f.snapshot && f.parser != parser_kind::itch50) {
        fail(file, *t.get("snapshot"), "snapshot", "needs parser \"itch50\" (it loads books)");
    }
    if (f.protocol != protocol_kind::moldudp64) {
        for (char const* key : {"session", "max_sequence_jump", "rerequest", "snapshot",
                                "snapshot_username", "snapshot_password"}) {
            if (t.get(key) != nullptr) {
                fail(file, *t.get(key), key, "applies to protocol \"moldudp64\" only");
            }
        }
    }
    return f;
}

receiver_config parse(toml::table const& root, std::string const& file) {
    reject_unknown_keys(file, root, "top level", {"runtime", "feed", "stats", "book", "metrics"});
    receiver_config c;
    if (auto const* node = root.get("runtime")) {
        auto const* t = node->as_table();
        if (t == nullptr) {
            fail(file, *node, "runtime", "expected a table [runtime]");
        }
        reject_unknown_keys(file, *t, "runtime", {"backend", "workers", "cpus", "idle", "poller"});
        if (auto const* backend = t->get("backend");
            backend != nullptr && backend->value<std::string>() == "memory") {
            // The library accepts it (net::parse_backend_kind); it has no sockets, so it only
            // serves programs that write the lines themselves (tests, benchmarks, replay).
            fail(file, *backend, "backend",
                 "\"memory\" is the in-process backend for tests and tools (no sockets): "
                 "md_receiver has no writer for it; use \"auto\", \"io_uring\", \"epoll\", "
                 "\"asio\" or \"af_xdp\"");
        }
        c.backend = get_enum(file, *t, "backend", net::backend_kind::automatic,
                             {{"auto", net::backend_kind::automatic},
                              {"io_uring", net::backend_kind::io_uring},
                              {"epoll", net::backend_kind::epoll},
                              {"asio", net::backend_kind::asio},
                              {"af_xdp", net::backend_kind::af_xdp}});
        c.workers = get_size(file, *t, "workers", 1, 1, 256);
        if (auto const* cpus = t->get("cpus")) {
            auto const* list = cpus->as_array();
            if (list == nullptr) {
                fail(file, *cpus, "cpus", "expected a list of CPU ids, e.g. [0, 1]");
            }
            // Checked here because a CPU the system does not have only fails later, when a
            // worker thread is pinned to it.
            int const limit = configured_cpu_limit();
            for (auto const& cpu : *list) {
                auto const id = cpu.value<std::int64_t>();
                if (!cpu.is_integer() || !id || *id < 0 || *id >= limit) {
                    fail(file, cpu, "cpus",
                         "expected CPU ids from 0 to " + std::to_string(limit - 1) +
                             " (this machine has " + std::to_string(limit) + " CPU(s))" +
                             (id ? ", got " + std::to_string(*id) : std::string()));
                }
                c.cpus.push_back(static_cast<int>(*id));
            }
        }
        c.idle = get_enum(file, *t, "idle", idle_strategy::backoff,
                          {{"spin", idle_strategy::spin},
                           {"backoff", idle_strategy::backoff},
                           {"block", idle_strategy::block}});
        c.poller = get_enum(
            file, *t, "poller", net::poller_mode::contract,
            {{"contract", net::poller_mode::contract}, {"thread", net::poller_mode::thread}});
    }
    if (auto const* node = root.get("stats")) {
        auto const* t = node->as_table();
        if (t == nullptr) {
            fail(file, *node, "stats", "expected a table [stats]");
        }
        reject_unknown_keys(file, *t, "stats", {"interval_s", "silent_warning_s"});
        c.stats_interval_s = get_seconds(file, *t, "interval_s", c.stats_interval_s, min_interval_s,
                                         max_interval_s, false);
        c.silent_warning_s = get_seconds(file, *t, "silent_warning_s", c.silent_warning_s,
                                         min_interval_s, max_interval_s, true);
    }
    if (auto const* node = root.get("book")) {
        auto const* t = node->as_table();
        if (t == nullptr) {
            fail(file, *node, "book", "expected a table [book]");
        }
        reject_unknown_keys(file, *t, "book", {"max_orders"});
        c.max_orders = get_size(file, *t, "max_orders", c.max_orders, 1, max_max_orders);
    }
    if (auto const* node = root.get("metrics")) {
        auto const* t = node->as_table();
        if (t == nullptr) {
            fail(file, *node, "metrics", "expected a table [metrics]");
        }
        reject_unknown_keys(file, *t, "metrics", {"listen"});
        c.metrics_listen = get_endpoint(file, *t, "listen", false);
        if (c.metrics_listen && c.metrics_listen->port() == 0) {
            fail(file, *t->get("listen"), "listen",
                 "expected \"ip:port\" for the Prometheus endpoint, e.g. \"127.0.0.1:9464\"");
        }
    }
    auto const* feeds = root.get("feed");
    if (feeds == nullptr) {
        throw config_error(file + ": no [[feed]] table: at least one feed is needed");
    }
    auto const* list = feeds->as_array();
    if (list == nullptr || !list->is_array_of_tables()) {
        fail(file, *feeds, "feed", "expected [[feed]] tables");
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < list->size(); ++i) {
        auto const& t = *list->get(i)->as_table();
        c.feeds.push_back(parse_feed(file, t, i));
        c.feeds.back().max_orders = c.max_orders;
        if (!names.insert(c.feeds.back().name).second) {
            fail(file, *t.get("name"), "name", "duplicate feed name '" + c.feeds.back().name + "'");
        }
        if (c.backend == net::backend_kind::af_xdp && c.feeds.back().interface.empty()) {
            throw config_error(where(file, t.source()) +
                               ": key 'interface': backend \"af_xdp\" "
                               "needs each feed's interface (the XDP program attaches to it)");
        }
        if (c.backend != net::backend_kind::af_xdp && t.get("af_xdp") != nullptr) {
            fail(file, *t.get("af_xdp"), "af_xdp", "applies to [runtime] backend = \"af_xdp\"");
        }
    }
    return c;
}

} // namespace

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

char const* line_name(feed_config const& feed, std::size_t line) noexcept {
    if (line == 0) {
        return "a";
    }
    if (line == 1 && feed.bind_b) {
        return "b";
    }
    if (feed.protocol == protocol_kind::mdp3) {
        return line == (feed.bind_b ? 2U : 1U) ? "s" : "d";
    }
    return "r";
}

std::vector<net::udp_socket_options> line_options(feed_config const& feed) {
    std::vector<net::udp_socket_options> lines;
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
    lines.push_back(a);
    if (feed.bind_b) {
        net::udp_socket_options b = a;
        b.bind = *feed.bind_b;
        b.group = feed.group_b ? feed.group_b : (feed.group ? feed.group : std::nullopt);
        lines.push_back(b);
    }
    if (feed.protocol == protocol_kind::mdp3) {
        for (auto const& bind : {feed.snapshot_bind, feed.definitions_bind}) {
            net::udp_socket_options l = a;
            l.bind = *bind;
            l.group = std::nullopt;
            lines.push_back(l);
        }
    }
    if (feed.rerequest) {
        // The request line: sends the requests and receives the answers (ephemeral port).
        net::udp_socket_options r;
        r.bind =
            *net::udp_endpoint::try_parse_address(feed.rerequest->is_v6() ? "::" : "0.0.0.0", 0);
        r.receive_buffer = feed.rcvbuf;
        r.timestamps = feed.timestamps;
        lines.push_back(r);
    }
    return lines;
}

} // namespace signet::receiver
