#include "nats_publisher.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <unistd.h>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/receiver/event_json.hpp>

#include "config_reader.hpp"
#include <fmt/format.h>
#include <nats/nats.h>

namespace signet::receiver {

namespace {

/// A subject token: letters, digits, '-' and '_' pass; anything else (NATS separators and
/// wildcards, spaces) becomes '_'.
void append_token(std::string& out, std::string_view text) {
    for (char const c : text) {
        bool const plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                           (c >= '0' && c <= '9') || c == '-' || c == '_';
        out += plain ? c : '_';
    }
}

[[noreturn]] void refuse(std::string const& what, natsStatus s) {
    char const* detail = nats_GetLastError(nullptr);
    throw std::runtime_error(
        "[publish] nats: " + what + ": " + natsStatus_GetText(s) +
        (detail != nullptr && *detail != 0 ? std::string(" (") + detail + ")" : std::string()));
}

void check(natsStatus s, std::string const& what) {
    if (s != NATS_OK) {
        refuse(what, s);
    }
}

} // namespace

std::string_view subject_kind(md::event_kind kind) noexcept {
    switch (kind) {
    case md::event_kind::bbo:
        return "bbo";
    case md::event_kind::trade:
        return "trade";
    case md::event_kind::instrument_definition:
        return "definition";
    case md::event_kind::trading_status:
    case md::event_kind::instrument_stale:
    case md::event_kind::instrument_recovered:
        return "status";
    case md::event_kind::events_lost:
        return "";
    default: // orders, levels, clears and snapshot marks: the book
        return "book";
    }
}

md::event_mask kinds_of_subjects(std::vector<std::string> const& subjects) noexcept {
    md::event_mask mask;
    for (std::size_t k = 0; k < md::event_kinds; ++k) {
        auto const kind = static_cast<md::event_kind>(k);
        std::string_view const subject = subject_kind(kind);
        if (std::find(subjects.begin(), subjects.end(), subject) != subjects.end()) {
            mask = mask | md::event_mask::of({kind});
        }
    }
    return mask;
}

nats_publisher::nats_publisher(nats_config const& config, std::vector<std::string> const& feeds)
    : config_(config)
    , feeds_(feeds) {
    for (std::string const& feed : feeds_) {
        std::string prefix = "signet.";
        append_token(prefix, feed);
        prefixes_.push_back(prefix + ".");
        std::string stream = "signet_";
        append_token(stream, feed);
        stream_names_.push_back(stream);
    }
    stream_sent_ = std::make_unique<std::atomic<std::uint64_t>[]>(feeds_.size());
    last_sequence_.assign(feeds_.size(), 0);
    previous_sequence_.assign(feeds_.size(), 0);
    next_index_.assign(feeds_.size(), 0);
    lost_.assign(feeds_.size(), 0);
    subject_.reserve(256);
    subject_symbol_.reserve(32);
    payload_.reserve(1024);
    check(natsOptions_Create(&options_), "cannot make the connection's options");
    configure(options_, "signet receiver");
    // Reconnect for ever: every 250 ms plus up to 100 ms of jitter; a write that cannot go out
    // within 2 s counts as a lost connection (a stalled server), so publish() never waits
    // longer than that.
    check(natsOptions_SetMaxReconnect(options_, -1), "SetMaxReconnect");
    check(natsOptions_SetReconnectWait(options_, 250), "SetReconnectWait");
    check(natsOptions_SetReconnectJitter(options_, 100, 1000), "SetReconnectJitter");
    if (!config_.standby.empty()) {
        // The lease's requests buffer nothing into an outage either (a renew flushed late is
        // refused by its revision anyway). 0 would mean libnats's default.
        check(natsOptions_SetReconnectBufSize(options_, 1), "SetReconnectBufSize");
        // The events' own connection: no reconnect (prepare() makes a new one), a connect that
        // gives up within a quarter lease (the lease thread waits for it).
        check(natsOptions_Create(&data_options_), "cannot make the data connection's options");
        configure(data_options_, "signet receiver (standby data)");
        check(natsOptions_SetAllowReconnect(data_options_, false), "SetAllowReconnect");
        check(natsOptions_SetTimeout(
                  data_options_, std::max<std::int64_t>(
                                     static_cast<std::int64_t>(config_.standby_lease_ms / 4), 50)),
              "SetTimeout");
    }
    check(natsOptions_SetRetryOnFailedConnect(options_, true, &nats_publisher::on_connected, this),
          "SetRetryOnFailedConnect");
    check(natsOptions_SetDisconnectedCB(options_, &nats_publisher::on_disconnected, this),
          "SetDisconnectedCB");
    check(natsOptions_SetReconnectedCB(options_, &nats_publisher::on_reconnected, this),
          "SetReconnectedCB");
    check(natsOptions_SetClosedCB(options_, &nats_publisher::on_closed, this), "SetClosedCB");
    natsStatus const s = natsConnection_Connect(&connection_, options_);
    if (s == NATS_OK) {
        on_connected(connection_, this);
    } else if (s == NATS_NOT_YET_CONNECTED) {
        SPDLOG_LOGGER_WARN(net::logger(),
                           "publish nats: {} does not answer yet: connecting in the background "
                           "(events are buffered meanwhile, then counted as failed)",
                           config_.url);
    } else {
        refuse("cannot connect to " + config_.url, s);
    }
    if (config_.stream) {
        try {
            watch_ = std::make_unique<nats_stream_watch>(
                connection_, stream_names_, prefixes_, static_cast<int>(config_.replicas),
                stream_sent_.get(), [this] { return disconnects_.load(std::memory_order_relaxed); },
                streams_due_);
            // release: pairs with the acquire load of the (re)connect callback.
            wake_watch_.store(watch_.get(), std::memory_order_release);
        } catch (...) {
            shut();
            throw;
        }
    }
    if (!config_.standby.empty()) {
        nats_standby::options o;
        o.group = config_.standby;
        o.member = config_.standby_name;
        if (o.member.empty()) {
            std::array<char, 256> host{};
            gethostname(host.data(), host.size() - 1);
            o.member = std::string(host.data()) + ":" + std::to_string(getpid());
        }
        o.lease = std::chrono::milliseconds(config_.standby_lease_ms);
        o.replicas = config_.replicas;
        o.feeds = feeds_;
        for (std::size_t i = 0; i < feeds_.size(); ++i) {
            std::string key;
            append_token(key, feeds_[i]);
            o.keys.push_back(key);
        }
        o.streams = stream_names_;
        for (std::string const& prefix : prefixes_) {
            o.subjects.push_back(prefix + ">");
        }
        gate_ = std::make_unique<standby_gate>(feeds_.size(), config_.standby_history,
                                               config_.standby_instruments, *this);
        try {
            standby_ = std::make_unique<nats_standby>(
                std::move(o), connection_, *gate_,
                [this] {
                    return connected_.load(std::memory_order_relaxed); // relaxed: a state
                },
                fence_);
        } catch (...) {
            shut(); // before the watch goes: no callback wakes it after
            watch_.reset();
            throw;
        }
    }
}

void nats_publisher::configure(natsOptions* options, char const* name) const {
    std::vector<std::string> const servers = comma_list(config_.url); // a cluster: several
    std::vector<char const*> list;
    for (std::string const& server : servers) {
        list.push_back(server.c_str());
    }
    check(natsOptions_SetServers(options, list.data(), static_cast<int>(list.size())),
          "bad server URL '" + config_.url + "'");
    check(natsOptions_SetName(options, name), "SetName");
    if (!config_.user.empty()) {
        check(natsOptions_SetUserInfo(options, config_.user.c_str(), config_.password.c_str()),
              "nats_user");
    }
    if (!config_.token.empty()) {
        check(natsOptions_SetToken(options, config_.token.c_str()), "nats_token");
    }
    if (!config_.creds.empty()) {
        check(natsOptions_SetUserCredentialsFromFiles(options, config_.creds.c_str(), nullptr),
              "nats_creds '" + config_.creds + "'");
    }
    if (config_.tls || !config_.tls_ca.empty() || !config_.tls_cert.empty()) {
        check(natsOptions_SetSecure(options, true), "nats_tls");
        if (!config_.tls_ca.empty()) {
            check(natsOptions_LoadCATrustedCertificates(options, config_.tls_ca.c_str()),
                  "nats_tls_ca '" + config_.tls_ca + "'");
        }
        if (!config_.tls_cert.empty()) {
            check(natsOptions_LoadCertificatesChain(options, config_.tls_cert.c_str(),
                                                    config_.tls_key.c_str()),
                  "nats_tls_cert/nats_tls_key");
        }
    }
    // A write that cannot go out within 2 s counts as a lost connection (a stalled server), so
    // a publish never waits longer than that.
    check(natsOptions_SetWriteDeadline(options, 2000), "SetWriteDeadline");
}

bool nats_publisher::prepare() noexcept {
    if (data_ != nullptr && natsConnection_Status(data_) == NATS_CONN_STATUS_CONNECTED) {
        return true;
    }
    std::lock_guard const lock(data_mutex_);
    natsConnection_Destroy(data_); // closed: whatever it held is dropped with it
    data_ = nullptr;
    if (natsConnection_Connect(&data_, data_options_) != NATS_OK) {
        natsConnection_Destroy(data_);
        data_ = nullptr;
        return false;
    }
    char* ip = nullptr;
    int port = 0;
    if (natsConnection_GetLocalIPAndPort(data_, &ip, &port) != NATS_OK || ip == nullptr ||
        !fence_.attach(ip, port)) {
        SPDLOG_LOGGER_WARN(net::logger(), "publish standby: cannot find the data connection's "
                                          "socket: what a partition holds back may arrive late");
    }
    std::free(ip);
    return true;
}

void nats_publisher::shut() noexcept {
    if (connection_ == nullptr) {
        return;
    }
    closing_.store(true, std::memory_order_relaxed); // the callbacks stay quiet
    natsConnection_Close(connection_);
    std::unique_lock lock(closed_mutex_); // libnats calls nothing of ours after on_closed
    closed_cv_.wait_for(lock, std::chrono::seconds(5), [this] { return closed_; });
}

nats_publisher::~nats_publisher() {
    if (standby_) {
        standby_->release(); // a hand-over: after the last publish (flush() ran), then its key
        standby_.reset();
    }
    natsConnection_Destroy(data_);       // after the hand-over (its events flushed before)
    shut();                              // no callback after it (none wakes the watch)
    watch_.reset();                      // its requests fail at once on the closed connection
    natsConnection_Destroy(connection_); // closes: what is still buffered is given up
    natsOptions_Destroy(data_options_);
    natsOptions_Destroy(options_);
}

void nats_publisher::on_connected(natsConnection* nc, void* self) noexcept {
    (void)nc;
    auto* p = static_cast<nats_publisher*>(self);
    p->connected_.store(true, std::memory_order_relaxed);
    p->ever_connected_.store(true, std::memory_order_relaxed);
    // release: pairs with the acquire exchange of the stream watch, which makes the streams.
    p->streams_due_.store(true, std::memory_order_release);
    // acquire: pairs with the release store after the watch was made.
    if (nats_stream_watch* const watch = p->wake_watch_.load(std::memory_order_acquire)) {
        watch->wake();
    }
    SPDLOG_LOGGER_INFO(net::logger(), "publish nats: connected to {}", p->config_.url);
}

void nats_publisher::on_disconnected(natsConnection* nc, void* self) noexcept {
    (void)nc;
    auto* p = static_cast<nats_publisher*>(self);
    if (p->gate_) {
        p->gate_->suspend(); // a member of a group stops publishing at once
    }
    if (p->connected_.exchange(false, std::memory_order_relaxed) &&
        !p->closing_.load(std::memory_order_relaxed)) {
        p->disconnects_.fetch_add(1, std::memory_order_relaxed);
        SPDLOG_LOGGER_WARN(net::logger(),
                           "publish nats: lost the connection to {}: reconnecting (events are "
                           "buffered meanwhile)",
                           p->config_.url);
    }
}

void nats_publisher::on_reconnected(natsConnection* nc, void* self) noexcept {
    auto* p = static_cast<nats_publisher*>(self);
    p->reconnects_.fetch_add(1, std::memory_order_relaxed);
    on_connected(nc, self);
}

void nats_publisher::on_closed(natsConnection* nc, void* self) noexcept {
    (void)nc;
    auto* p = static_cast<nats_publisher*>(self);
    std::lock_guard const lock(p->closed_mutex_);
    p->closed_ = true;
    p->closed_cv_.notify_one();
}

void nats_publisher::publish(event_view const& v) noexcept {
    std::size_t feed = 0;
    while (feed + 1 < feeds_.size() && feeds_[feed] != v.feed) {
        ++feed;
    }
    std::string_view const kind = subject_kind(v.event.kind);
    if (kind.empty()) {
        if (v.event.kind == md::event_kind::events_lost) {
            lost_[feed] = 1; // the next event says so (nats_position::after_loss)
        }
        return;
    }
    nats_position p;
    p.sequence = v.event.sequence;
    if (next_index_[feed] != 0 && v.event.sequence == last_sequence_[feed]) {
        p.index = next_index_[feed]++;
    } else {
        previous_sequence_[feed] = next_index_[feed] != 0 ? last_sequence_[feed] : 0;
        last_sequence_[feed] = v.event.sequence;
        next_index_[feed] = 1;
        p.index = 0;
    }
    p.previous = previous_sequence_[feed];
    if (lost_[feed] != 0) {
        lost_[feed] = 0;
        p.flags |= nats_position::after_loss;
    }
    if (gate_) { // a standby group: the gate decides (and sends while this member leads)
        gate_->record(feed, v.event, v.symbol, p, std::chrono::steady_clock::now());
        return;
    }
    (void)send(feed, v.event, v.symbol, p);
}

bool nats_publisher::send(std::size_t feed, md::event const& e, std::string_view symbol,
                          nats_position const& p) noexcept {
    std::string_view const kind = subject_kind(e.kind);
    if (feed != subject_feed_ || e.instrument != subject_instrument_ || symbol != subject_symbol_) {
        subject_feed_ = feed;
        subject_instrument_ = e.instrument;
        subject_symbol_.assign(symbol.substr(0, subject_symbol_.capacity()));
        subject_ = prefixes_[feed];
        if (e.instrument == md::all_instruments) {
            subject_ += "_all";
        } else if (symbol.empty()) { // not defined (yet): its id
            std::array<char, 12> id{'_'};
            auto const end = std::to_chars(id.data() + 1, id.data() + id.size(), e.instrument);
            subject_.append(id.data(), end.ptr);
        } else {
            append_token(subject_, symbol);
        }
        subject_ += '.';
        subject_stem_ = subject_.size();
    }
    subject_.resize(subject_stem_);
    subject_ += kind;
    std::array<char, nats_position::header + sizeof(md::event)> message;
    std::string_view body;
    if (config_.json) {
        payload_.clear();
        append_event_json(payload_, {e, feeds_[feed], symbol});
        if (!payload_.empty() && payload_.back() == '}') { // the position's fields
            payload_.pop_back();
            std::array<char, 96> extra{};
            auto const n = fmt::format_to_n(
                extra.data(), extra.size(), ",\"index\":{},\"previous\":{}{}}}", p.index,
                p.previous, (p.flags & nats_position::resync) != 0 ? ",\"resync\":true" : "");
            payload_.append(extra.data(), n.out);
        }
        body = payload_;
    } else {
        nats_position::write(e, p, message); // published from here: no copy
        body = std::string_view(message.data(), message.size());
    }
    natsConnection* const on = gate_ ? data_ : connection_; // under the gate's mutex: stable
    if (on == nullptr) {
        return false;
    }
    natsStatus const s =
        natsConnection_Publish(on, subject_.c_str(), body.data(), static_cast<int>(body.size()));
    if (s == NATS_OK) {
        published_.fetch_add(1, std::memory_order_relaxed);
        if (watch_ && kind != "book") { // one of its stream's subjects
            std::atomic<std::uint64_t>& sent = stream_sent_[feed];
            // relaxed, one writer at a time (publish()'s thread, or the gate's mutex): a count
            // the stream watch reads on its own.
            sent.store(sent.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
        }
        return true;
    }
    failed_.fetch_add(1, std::memory_order_relaxed);
    // At most one line a second: while a connection breaks, libnats fails some publishes and
    // buffers others, so "once per outage" by the last publish's success logged a line each.
    ++unlogged_failures_;
    auto const now = std::chrono::steady_clock::now();
    if (now - failure_logged_ >= std::chrono::seconds(1)) {
        failure_logged_ = now;
        SPDLOG_LOGGER_WARN(net::logger(),
                           "publish nats: publishing to {} fails ({}): {} event(s) lost since "
                           "the last such line, counted as failed (one line a second at most)",
                           config_.url, natsStatus_GetText(s), unlogged_failures_);
        unlogged_failures_ = 0;
    }
    return false;
}

void nats_publisher::flush() noexcept {
    if (connected_.load(std::memory_order_relaxed)) {
        natsConnection_FlushTimeout(connection_, 2000);
    }
    std::lock_guard const lock(data_mutex_); // the events' connection, with standby
    if (data_ != nullptr && natsConnection_Status(data_) == NATS_CONN_STATUS_CONNECTED) {
        natsConnection_FlushTimeout(data_, 2000);
    }
}

std::optional<standby_stats> nats_publisher::standby() const {
    if (!standby_) {
        return std::nullopt;
    }
    return standby_->stats();
}

nats_stats nats_publisher::stats() const {
    nats_stats s;
    s.url = config_.url;
    bool const up = connected_.load(std::memory_order_relaxed);
    s.state = up                                                ? "connected"
              : ever_connected_.load(std::memory_order_relaxed) ? "reconnecting"
                                                                : "connecting";
    s.published = published_.load(std::memory_order_relaxed);
    s.failed = failed_.load(std::memory_order_relaxed);
    s.disconnects = disconnects_.load(std::memory_order_relaxed);
    s.stream_unstored = watch_ ? watch_->unstored() : 0;
    s.reconnects = reconnects_.load(std::memory_order_relaxed);
    s.streams = watch_ ? watch_->made() : 0;
    s.stream_errors = watch_ ? watch_->errors() : 0;
    return s;
}

} // namespace signet::receiver
