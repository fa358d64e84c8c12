// md_subscribe: prints what a receiver publishes to NATS ([publish] nats; docs/publishing.md)
// on the subjects given: each message as a line of text or JSON. With --last it reads through
// JetStream and starts with the last bbo, trade, status and definition of every matching
// subject (the receiver's last-value stream), then follows.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>

#include <signet/receiver/event_json.hpp>
#include <signet/receiver/publish.hpp>

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

int fail(char const* what, natsStatus s) {
    std::fprintf(stderr, "md_subscribe: %s: %s\n", what, natsStatus_GetText(s));
    return 1;
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
        jsOptions o;
        jsOptions_Init(&o);
        o.Wait = 10000; // ms: a cluster that lost a server may be electing a stream leader
        s = natsConnection_JetStream(&js, nc, &o);
        if (s != NATS_OK) {
            return fail("JetStream", s);
        }
    }
    for (std::string const& subject : subjects) {
        natsSubscription* sub = nullptr;
        if (last) {
            jsSubOptions so;
            jsSubOptions_Init(&so);
            so.Config.DeliverPolicy = js_DeliverLastPerSubject;
            so.Ordered = true;
            jsErrCode error = static_cast<jsErrCode>(0);
            // A cluster that just lost a server may take a while to answer: try for 60 s.
            for (int attempt = 1;; ++attempt) {
                s = js_SubscribeSync(&sub, js, subject.c_str(), nullptr, &so, &error);
                if (s != NATS_TIMEOUT || attempt == 6 || stop_requested != 0) {
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
            return fail(("cannot subscribe to " + subject).c_str(), s);
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
    auto idle_since = std::chrono::steady_clock::now();
    while (stop_requested == 0 && (count == 0 || seen < count)) {
        bool any = false;
        for (natsSubscription* sub : subs) {
            natsMsg* msg = nullptr;
            if (natsSubscription_NextMsg(&msg, sub, subs.size() == 1 ? 100 : 10) != NATS_OK) {
                continue;
            }
            any = true;
            std::string_view const subject = natsMsg_GetSubject(msg);
            std::span<char const> const data(natsMsg_GetData(msg),
                                             static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
            line.clear();
            if (auto const e = signet::receiver::nats_layout::read(data)) {
                auto const [feed, symbol] = feed_and_symbol(subject);
                if (json) {
                    signet::receiver::append_event_json(line, {*e, feed, symbol});
                } else {
                    line = std::string(subject) + " ";
                    signet::receiver::append_event_json(line, {*e, feed, symbol});
                }
            } else if (json) { // nats_format = "json": the message is the object
                line.assign(data.data(), data.size());
            } else {
                line = std::string(subject) + " " + std::string(data.data(), data.size());
            }
            if (js != nullptr) {
                natsMsg_Ack(msg, nullptr);
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
    return 0;
}
