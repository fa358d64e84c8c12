// md_subscribe: prints what a receiver publishes to NATS ([publish] nats; docs/publishing.md)
// on the subjects given: each message as a line of text or JSON. With --last it reads through
// JetStream and starts with the last bbo, trade, status and definition of every matching
// subject (the receiver's last-value stream), then follows.
//
// --last makes its JetStream consumers itself (subscribe_last) instead of js_SubscribeSync's
// ordered consumer: against a three-server cluster that had just lost a server, the library's
// subscribe path crashed md_subscribe (SIGSEGV, libnats 3.4.1, before "subscribed"; nats.c
// issue 695 reports a crash of that path on a consumer info without a name). A push consumer
// on a fresh inbox, read by a core subscription, needs none of that machinery; its idle
// heartbeats tell a consumer that went silent (its server gone) from a quiet stream.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include <signet/receiver/event_json.hpp>
#include <signet/receiver/publish.hpp>
#include <signet/receiver/standby.hpp>

#include <nats/nats.h>

namespace {

volatile std::sig_atomic_t stop_requested = 0;

/// signet.<feed>.<symbol>.<kind>: the feed and symbol tokens ("" when not that shape).
std::pair<std::string_view, std::string_view> feed_and_symbol(std::string_view subject) {
    std::vector<std::string_view> tokens;
    for (std::size_t at = 0; at <= subject.size();) {
        std::size_t const end = std::min(subject.find('.', at), subject.size());
        tokens.push_back(subject.substr(at, end - at));
        at = end + 1;
    }
    if (tokens.size() != 4 || tokens[0] != "signet") {
        return {};
    }
    return {tokens[1], tokens[2]};
}

/// The message's position in its feed (standby.hpp's nats_position) as the JSON object's last
/// fields: "index", "previous" and, for a resynchronization's state, "resync": true.
void append_position(std::string& line, std::span<char const> data) {
    auto const p = signet::receiver::nats_position::read(data);
    if (!p || line.empty() || line.back() != '}') {
        return;
    }
    line.pop_back();
    line +=
        ",\"index\":" + std::to_string(p->index) + ",\"previous\":" + std::to_string(p->previous);
    if ((p->flags & signet::receiver::nats_position::resync) != 0) {
        line += ",\"resync\":true";
    }
    line += '}';
}

/// --chain: one feed's chain of positions as a consumer checks it (docs/publishing.md,
/// "Standby groups": what a consumer sees).
struct chain {
    std::optional<signet::receiver::nats_position> last;
    std::uint64_t messages = 0;
    std::uint64_t holes = 0;
    std::uint64_t doubles = 0;
    std::uint64_t resyncs = 0;
    std::uint64_t after_loss = 0;

    void take(std::string_view feed, signet::receiver::nats_position const& p) {
        using signet::receiver::nats_position;
        ++messages;
        if ((p.flags & nats_position::resync) != 0) {
            ++resyncs;
            last = p;
            return;
        }
        if ((p.flags & nats_position::after_loss) != 0) {
            ++after_loss;
        }
        bool ok = true;
        if (last) {
            ok = p.index > 0 ? p.sequence == last->sequence && p.index == last->index + 1
                             : p.previous == last->sequence && p.sequence > last->sequence;
        }
        if (!ok) {
            bool const twice = !(*last < p);
            (twice ? doubles : holes) += 1;
            if (holes + doubles <= 10) {
                std::fprintf(stderr,
                             "md_subscribe: feed %.*s: a %s: sequence %llu index %u (previous "
                             "%llu) after sequence %llu index %u\n",
                             static_cast<int>(feed.size()), feed.data(), twice ? "double" : "hole",
                             static_cast<unsigned long long>(p.sequence), p.index,
                             static_cast<unsigned long long>(p.previous),
                             static_cast<unsigned long long>(last->sequence), last->index);
            }
        }
        if (!last || *last < p) {
            last = p;
        }
    }
};

/// The position of a message in either format (nullopt: it carries none).
std::optional<signet::receiver::nats_position> position_of(std::span<char const> data) {
    if (auto const p = signet::receiver::nats_position::read(data)) {
        return p;
    }
    if (data.empty() || data.front() != '{') {
        return std::nullopt;
    }
    std::string_view const text(data.data(), data.size());
    using signet::receiver::json_number;
    auto const sequence = json_number(text, "sequence");
    auto const index = json_number(text, "index");
    auto const previous = json_number(text, "previous");
    if (!sequence || !index || !previous) {
        return std::nullopt;
    }
    signet::receiver::nats_position p;
    p.sequence = *sequence;
    p.index = static_cast<std::uint32_t>(*index);
    p.previous = *previous;
    p.flags = text.find("\"resync\":true") != std::string_view::npos
                  ? signet::receiver::nats_position::resync
                  : std::uint16_t{0};
    return p;
}

int fail(char const* what, natsStatus s) {
    std::fprintf(stderr, "md_subscribe: %s: %s\n", what, natsStatus_GetText(s));
    return 1;
}

constexpr std::int64_t heartbeat_ns = 5'000'000'000;

/// A consumer's idle heartbeat: a status message (header "Status: 100") without data.
bool is_heartbeat(natsMsg* msg) {
    char const* status = nullptr;
    return natsMsg_GetDataLength(msg) == 0 &&
           natsMsgHeader_Get(msg, "Status", &status) == NATS_OK && status != nullptr &&
           std::string_view(status) == "100";
}

/// --last for one subject: the stream that holds it, an ephemeral push consumer of it that
/// delivers the last message of every matching subject and then what comes (no acks, in
/// memory, one replica, idle heartbeats; the server removes it 30 s after md_subscribe goes),
/// read by a core subscription on its deliver inbox, made first so nothing is missed.
natsStatus subscribe_last(natsSubscription** sub, natsConnection* nc, jsCtx* js,
                          std::string const& subject, std::string& why) {
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = 10000; // ms: a cluster that lost a server may be electing a stream leader
    o.Stream.Info.SubjectsFilter = subject.c_str();
    jsErrCode error = static_cast<jsErrCode>(0);
    jsStreamNamesList* names = nullptr;
    natsStatus s = js_StreamNames(&names, js, &o, &error);
    if (s != NATS_OK) {
        why = "no stream list";
        return s;
    }
    if (names == nullptr || names->Count < 1 || names->List[0] == nullptr) {
        jsStreamNamesList_Destroy(names);
        why = "no stream holds it";
        return NATS_NOT_FOUND;
    }
    std::string const stream = names->List[0];
    jsStreamNamesList_Destroy(names);
    natsInbox* inbox = nullptr;
    s = natsInbox_Create(&inbox);
    if (s == NATS_OK) {
        s = natsConnection_SubscribeSync(sub, nc, inbox);
    }
    if (s == NATS_OK) {
        jsConsumerConfig c;
        jsConsumerConfig_Init(&c);
        c.DeliverSubject = inbox;
        c.DeliverPolicy = js_DeliverLastPerSubject;
        c.FilterSubject = subject.c_str();
        c.AckPolicy = js_AckNone;
        c.MemoryStorage = true;
        c.Replicas = 1;
        c.Heartbeat = heartbeat_ns;
        c.InactiveThreshold = 30'000'000'000;
        jsConsumerInfo* info = nullptr;
        s = js_AddConsumer(&info, js, stream.c_str(), &c, &o, &error);
        jsConsumerInfo_Destroy(info);
        if (s != NATS_OK) {
            why = "stream " + stream + ": no consumer";
            natsSubscription_Destroy(*sub);
            *sub = nullptr;
        }
    }
    natsInbox_Destroy(inbox);
    return s;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{"md_subscribe: print what a signet receiver publishes to NATS"};
    std::string server = "nats://127.0.0.1:4222";
    std::vector<std::string> subjects;
    bool json = false;
    bool last = false;
    std::uint64_t count = 0;
    double idle_s = 0;
    cli.add_option("subjects", subjects,
                   "subjects to follow, e.g. 'signet.itch.AAPL.bbo' or "
                   "'signet.itch.>'")
        ->required();
    cli.add_option("--server", server, "the NATS server (a comma-separated list for a cluster)")
        ->capture_default_str();
    cli.add_flag("--json", json, "one JSON object per line (else text)");
    bool check_chain = false;
    cli.add_flag("--chain", check_chain,
                 "check each feed's chain of positions (subscribe to whole feeds, "
                 "signet.<feed>.>): holes and doubles on stderr as they come, counts at exit; "
                 "exit 3 if any");
    cli.add_flag("--last", last,
                 "through JetStream: first the last bbo, trade, status and definition of "
                 "every matching subject, then what comes");
    cli.add_option("--count", count, "exit after this many messages (0: never)");
    cli.add_option("--idle-exit", idle_s,
                   "exit after this many seconds without a message (0: "
                   "never)");
    CLI11_PARSE(cli, argc, argv);
    std::signal(SIGINT, [](int) { stop_requested = 1; });
    std::signal(SIGTERM, [](int) { stop_requested = 1; });

    natsConnection* nc = nullptr;
    jsCtx* js = nullptr;
    std::vector<natsSubscription*> subs;
    natsStatus s = natsConnection_ConnectTo(&nc, server.c_str()); // takes a comma list too
    if (s != NATS_OK) {
        return fail(("cannot connect to " + server).c_str(), s);
    }
    if (last) {
        s = natsConnection_JetStream(&js, nc, nullptr);
        if (s != NATS_OK) {
            return fail("JetStream", s);
        }
    }
    for (std::string const& subject : subjects) {
        natsSubscription* sub = nullptr;
        std::string why;
        if (last) {
            // A cluster that just lost a server may take a while to answer: try for 60 s.
            for (int attempt = 1;; ++attempt) {
                s = subscribe_last(&sub, nc, js, subject, why);
                if ((s != NATS_TIMEOUT && s != NATS_NO_RESPONDERS) || attempt == 6 ||
                    stop_requested != 0) {
                    break;
                }
                std::fprintf(stderr,
                             "md_subscribe: %s: no answer from JetStream yet, asking again\n",
                             subject.c_str());
            }
        } else {
            s = natsConnection_SubscribeSync(&sub, nc, subject.c_str());
        }
        if (s != NATS_OK) {
            return fail(
                ("cannot subscribe to " + subject + (why.empty() ? "" : " (" + why + ")")).c_str(),
                s);
        }
        // No client-side limit: a burst waits here rather than being dropped as a slow
        // consumer (the count of what was dropped anyway is printed at exit).
        natsSubscription_SetPendingLimits(sub, -1, -1);
        subs.push_back(sub);
    }

    std::fprintf(stderr, "md_subscribe: subscribed to %zu subject(s) on %s\n", subjects.size(),
                 server.c_str());
    std::uint64_t seen = 0;
    std::string line;
    std::map<std::string, chain> chains; // --chain: by feed
    auto idle_since = std::chrono::steady_clock::now();
    // --last: when each consumer was last heard from (a message or an idle heartbeat).
    std::vector<std::chrono::steady_clock::time_point> heard(subs.size(), idle_since);
    auto const silent_limit = 3 * std::chrono::nanoseconds(heartbeat_ns);
    int status = 0;
    while (stop_requested == 0 && (count == 0 || seen < count) && status == 0) {
        bool any = false;
        for (std::size_t i = 0; i < subs.size(); ++i) {
            natsMsg* msg = nullptr;
            if (natsSubscription_NextMsg(&msg, subs[i], subs.size() == 1 ? 100 : 10) != NATS_OK) {
                if (last && std::chrono::steady_clock::now() - heard[i] > silent_limit) {
                    std::fprintf(stderr,
                                 "md_subscribe: %s: the JetStream consumer went silent (no "
                                 "heartbeat for %lld s): its server may be gone; run again\n",
                                 subjects[i].c_str(),
                                 static_cast<long long>(silent_limit / std::chrono::seconds(1)));
                    status = 1;
                    break;
                }
                continue;
            }
            heard[i] = std::chrono::steady_clock::now();
            if (last && is_heartbeat(msg)) {
                natsMsg_Destroy(msg);
                continue;
            }
            any = true;
            std::string_view const subject = natsMsg_GetSubject(msg);
            std::span<char const> const data(natsMsg_GetData(msg),
                                             static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
            line.clear();
            if (check_chain) {
                if (auto const p = position_of(data)) {
                    std::string_view const feed = feed_and_symbol(subject).first;
                    chains[std::string(feed)].take(feed, *p);
                }
            }
            if (auto const e = signet::receiver::nats_layout::read(data)) {
                auto const [feed, symbol] = feed_and_symbol(subject);
                if (!json) {
                    line = std::string(subject) + " ";
                }
                signet::receiver::append_event_json(line, {*e, feed, symbol});
                append_position(line, data);
            } else if (json) { // nats_format = "json": the message is the object
                line.assign(data.data(), data.size());
            } else {
                line = std::string(subject) + " " + std::string(data.data(), data.size());
            }
            natsMsg_Destroy(msg);
            std::puts(line.c_str());
            ++seen;
            if (count != 0 && seen >= count) {
                break;
            }
        }
        std::fflush(stdout);
        auto const now = std::chrono::steady_clock::now();
        if (any) {
            idle_since = now;
        } else if (idle_s > 0 && now - idle_since > std::chrono::duration<double>(idle_s)) {
            break;
        }
    }
    for (natsSubscription* sub : subs) {
        int64_t dropped = 0;
        if (natsSubscription_GetDropped(sub, &dropped) == NATS_OK && dropped > 0) {
            std::fprintf(stderr, "md_subscribe: %lld messages dropped as a slow consumer\n",
                         static_cast<long long>(dropped));
        }
        natsSubscription_Destroy(sub);
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    for (auto const& [feed, c] : chains) {
        std::fprintf(stderr,
                     "md_subscribe: feed %s: %llu messages, %llu holes, %llu doubles, %llu "
                     "resynchronization messages, %llu after a loss\n",
                     feed.c_str(), static_cast<unsigned long long>(c.messages),
                     static_cast<unsigned long long>(c.holes),
                     static_cast<unsigned long long>(c.doubles),
                     static_cast<unsigned long long>(c.resyncs),
                     static_cast<unsigned long long>(c.after_loss));
        if (status == 0 && c.holes + c.doubles > 0) {
            status = 3;
        }
    }
    return status;
}
