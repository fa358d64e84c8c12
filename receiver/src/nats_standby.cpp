#include "nats_standby.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>
#include <signet/receiver/event_json.hpp>

#include <nats/nats.h>

namespace signet::receiver {

namespace {

std::int64_t ns_of(standby_gate::clock::time_point t) noexcept {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

/// "released <sequence> <index>": a hand-over's position.
std::optional<nats_position> released_position(std::string_view value) {
    constexpr std::string_view prefix = "released ";
    if (!value.starts_with(prefix)) {
        return std::nullopt;
    }
    value.remove_prefix(prefix.size());
    nats_position p;
    auto const [end, ec] = std::from_chars(value.data(), value.data() + value.size(), p.sequence);
    if (ec != std::errc() || end == value.data() + value.size() || *end != ' ') {
        return std::nullopt;
    }
    auto const [end2, ec2] = std::from_chars(end + 1, value.data() + value.size(), p.index);
    if (ec2 != std::errc()) {
        return std::nullopt;
    }
    return p;
}

bool transport_error(natsStatus s) noexcept {
    return s == NATS_TIMEOUT || s == NATS_NO_RESPONDERS || s == NATS_CONNECTION_CLOSED ||
           s == NATS_CONNECTION_DISCONNECTED || s == NATS_NOT_YET_CONNECTED || s == NATS_IO_ERROR ||
           s == NATS_STALE_CONNECTION;
}

} // namespace

// ---------------------------------------------------------------------------------------------
// standby_gate

standby_gate::standby_gate(std::size_t feeds, std::size_t history, std::size_t instruments,
                           standby_sender& sender, clock::time_point (*now)())
    : mask_(std::bit_ceil(std::max<std::size_t>(history, 2)) - 1)
    , sender_(sender)
    , now_(now) {
    for (std::size_t i = 0; i < feeds; ++i) {
        auto f = std::make_unique<feed_state>();
        f->ring.resize(mask_ + 1);
        f->table.resize(instruments);
        feeds_.push_back(std::move(f));
    }
}

void standby_gate::remember(feed_state& f, md::event const& e, std::string_view symbol) noexcept {
    bool const stale = e.kind == md::event_kind::instrument_stale ||
                       e.kind == md::event_kind::instrument_recovered;
    if (e.instrument == md::all_instruments) {
        if (stale) {
            f.feed_stale = e;
            f.have_feed_stale = true;
        }
        return;
    }
    if (e.instrument >= f.table.size()) {
        return; // beyond the table: replayed under its id, never resynchronized
    }
    instrument& slot = f.table[e.instrument];
    if (!symbol.empty() &&
        (slot.symbol_size == 0 || e.kind == md::event_kind::instrument_definition)) {
        slot.symbol_size = static_cast<std::uint8_t>(std::min(symbol.size(), slot.symbol.size()));
        std::memcpy(slot.symbol.data(), symbol.data(), slot.symbol_size);
    }
    switch (e.kind) {
    case md::event_kind::instrument_definition:
        slot.definition = e;
        slot.have |= 1;
        break;
    case md::event_kind::trading_status:
        slot.status = e;
        slot.have |= 2;
        break;
    case md::event_kind::instrument_stale:
    case md::event_kind::instrument_recovered:
        slot.stale = e;
        slot.have |= 4;
        break;
    case md::event_kind::bbo:
        slot.bbo = e;
        slot.have |= 8;
        break;
    default:
        break;
    }
}

std::string_view standby_gate::symbol_of(feed_state const& f, entry const& e) const noexcept {
    if ((e.flags & 1u) == 0 || e.event.instrument >= f.table.size()) {
        return {};
    }
    instrument const& slot = f.table[e.event.instrument];
    return {slot.symbol.data(), slot.symbol_size};
}

void standby_gate::record(std::size_t feed, md::event const& e, std::string_view symbol,
                          nats_position const& p, clock::time_point now) noexcept {
    feed_state& f = *feeds_[feed];
    std::lock_guard const lock(mutex_);
    f.ring[f.written & mask_] = {.event = e,
                                 .previous = p.previous,
                                 .index = p.index,
                                 .flags = (symbol.empty() ? 0u : 1u) |
                                          ((p.flags & nats_position::after_loss) != 0 ? 2u : 0u)};
    ++f.written;
    // relaxed: a statistic read on its own.
    f.history.store(std::min<std::uint64_t>(f.written, mask_ + 1), std::memory_order_relaxed);
    remember(f, e, symbol);
    if (f.leader) {
        drain(feed, f, now, ~std::size_t{0});
    } else {
        f.next = f.written; // a follower's cursor follows its history (a takeover resets it)
    }
}

bool standby_gate::continues(nats_position const& last, nats_position const& p) noexcept {
    if ((p.flags & nats_position::after_loss) != 0) {
        return false;
    }
    return p.index > 0 ? p.sequence == last.sequence && p.index == last.index + 1
                       : p.previous == last.sequence && p.sequence > last.sequence;
}

bool standby_gate::may_send(feed_state const& f, clock::time_point now) const noexcept {
    // relaxed: the deadline and the flag are self-contained values (the file's top).
    return !f.suspended.load(std::memory_order_relaxed) &&
           ns_of(now) < f.deadline_ns.load(std::memory_order_relaxed);
}

void standby_gate::drain(std::size_t feed, feed_state& f, clock::time_point now,
                         std::size_t budget) noexcept {
    if (f.written - f.next > mask_ + 1) { // overrun while not publishing: the chain breaks below
        f.next = f.written - (mask_ + 1);
        f.published.reset();
        f.broken = true;
    }
    for (std::size_t n = 0; f.next < f.written && n < budget; ++n) {
        if (n != 0) {
            // Each send after the first reads the clock: a send can block (a full socket, up
            // to the write deadline), and one sent past the deadline, after the fence cut the
            // connection, would wait in libnats's reconnect buffer for the next connection.
            now = now_();
        }
        if (!may_send(f, now)) {
            return; // past the deadline: the events stay in the history for a resume
        }
        entry const& e = f.ring[f.next & mask_];
        nats_position const p = position(e);
        if (f.skip_through && !(*f.skip_through < p)) {
            ++f.next; // the old leader published it
            continue;
        }
        f.skip_through.reset();
        if (f.broken || (f.published && !continues(*f.published, p))) {
            // This member's history does not continue what the group published (it started
            // late, or its own queue lost events): its current state instead, flagged.
            f.broken = false;
            resync(feed, f);
            return;
        }
        if (!sender_.send(feed, e.event, symbol_of(f, e), p)) {
            // relaxed flag: the lease thread resumes from the group's last position.
            f.suspended.store(true, std::memory_order_relaxed);
            return;
        }
        f.published = p;
        ++f.next;
    }
}

std::uint64_t standby_gate::pump(std::size_t feed, std::size_t budget) {
    feed_state& f = *feeds_[feed];
    // Busy: the publishing thread holds it and drains anyway (or is held by a stalled server:
    // the lease thread must not wait behind it, it has renewals to make).
    std::unique_lock const lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock() || !f.leader) {
        return 0;
    }
    std::uint64_t const before = f.next;
    drain(feed, f, now_(), budget);
    return f.next - before;
}

std::uint64_t standby_gate::resync(std::size_t feed, feed_state& f) noexcept {
    if (f.written == 0) {
        return 0;
    }
    nats_position p = position(f.ring[(f.written - 1) & mask_]);
    p.previous = 0;
    p.flags = nats_position::resync;
    std::uint64_t sent = 0;
    auto const send = [&](md::event e, std::string_view symbol) {
        e.sequence = p.sequence; // the state as of the newest event (standby.hpp)
        if (may_send(f, now_()) && sender_.send(feed, e, symbol, p)) {
            ++sent;
        }
    };
    if (f.have_feed_stale) {
        send(f.feed_stale, {});
    }
    for (instrument const& slot : f.table) {
        std::string_view const symbol(slot.symbol.data(), slot.symbol_size);
        if ((slot.have & 1) != 0) {
            send(slot.definition, symbol);
        }
        if ((slot.have & 2) != 0) {
            send(slot.status, symbol);
        }
        if ((slot.have & 4) != 0) {
            send(slot.stale, symbol);
        }
        if ((slot.have & 8) != 0) {
            send(slot.bbo, symbol);
        }
    }
    f.published = p;
    f.next = f.written;
    // relaxed: statistics.
    f.resyncs.fetch_add(1, std::memory_order_relaxed);
    f.resync_messages.fetch_add(sent, std::memory_order_relaxed);
    return sent;
}

std::uint64_t standby_gate::take_over(std::size_t feed, group_position const& last,
                                      clock::time_point now, clock::time_point deadline,
                                      bool counted) {
    feed_state& f = *feeds_[feed];
    std::lock_guard const lock(mutex_);
    if (!sender_.prepare()) {
        f.suspended.store(true, std::memory_order_relaxed); // relaxed flag (the file's top)
        return 0;
    }
    std::uint64_t const oldest = f.written > mask_ + 1 ? f.written - (mask_ + 1) : 0;
    f.skip_through.reset();
    f.broken = false;
    f.published.reset();
    if (last.what == group_position::state::at) {
        f.published = last.position; // what comes next must continue it
    }
    bool must_resync = false;
    if (last.what == group_position::state::unknown) {
        must_resync = true;
    } else if (last.what == group_position::state::none) {
        must_resync = oldest != 0; // publish the whole history, if it is whole
        f.next = oldest;
    } else if (f.written == 0 || !(last.position < position(f.ring[(f.written - 1) & mask_]))) {
        f.skip_through = last.position; // behind the old leader (or even with it)
        f.next = f.written;
    } else {
        nats_position const first = position(f.ring[oldest & mask_]);
        // The history continues the group's stream when it holds the last position, or
        // starts right after it (index + 1, or index 0 chained on its sequence).
        bool const continues =
            !(last.position < first) ||
            (first.sequence == last.position.sequence && first.index == last.position.index + 1) ||
            (first.index == 0 && first.previous == last.position.sequence &&
             first.sequence > last.position.sequence);
        if (!continues) {
            must_resync = true;
        } else { // the first entry after the position (positions ascend in the ring)
            std::uint64_t lo = oldest;
            std::uint64_t hi = f.written;
            while (lo < hi) {
                std::uint64_t const mid = lo + (hi - lo) / 2;
                if (last.position < position(f.ring[mid & mask_])) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            f.next = lo;
        }
    }
    f.leader = true;
    // relaxed: see the file's top; the mutex orders the cursor with the next record().
    f.leader_seen.store(true, std::memory_order_relaxed);
    f.deadline_ns.store(ns_of(deadline), std::memory_order_relaxed);
    f.suspended.store(false, std::memory_order_relaxed);
    if (counted) {
        f.takeovers.fetch_add(1, std::memory_order_relaxed); // relaxed: a statistic
    }
    std::uint64_t sent = 0;
    if (must_resync) {
        sent = resync(feed, f);
    }
    std::uint64_t const before = f.next;
    drain(feed, f, now, catch_up_budget);
    return sent + (f.next - before);
}

void standby_gate::renewed(std::size_t feed, clock::time_point deadline) noexcept {
    // relaxed: a self-contained value (the file's top).
    feeds_[feed]->deadline_ns.store(ns_of(deadline), std::memory_order_relaxed);
}

void standby_gate::demote(std::size_t feed) {
    feed_state& f = *feeds_[feed];
    // relaxed, a self-contained value: the next drain() sends nothing, before the lock is ours.
    f.deadline_ns.store(0, std::memory_order_relaxed);
    std::lock_guard const lock(mutex_);
    f.leader = false;
    f.leader_seen.store(false, std::memory_order_relaxed); // relaxed: a statistic
}

void standby_gate::suspend() noexcept {
    for (auto& f : feeds_) {
        f->suspended.store(true, std::memory_order_relaxed); // relaxed flag (the file's top)
    }
}

bool standby_gate::suspended(std::size_t feed) const noexcept {
    return feeds_[feed]->suspended.load(std::memory_order_relaxed); // relaxed flag
}

std::int64_t standby_gate::deadline_ns(std::size_t feed) const noexcept {
    return feeds_[feed]->deadline_ns.load(std::memory_order_relaxed); // see the file's top
}

bool standby_gate::leading(std::size_t feed) const noexcept {
    return feeds_[feed]->leader_seen.load(std::memory_order_relaxed); // relaxed: a statistic
}

std::optional<nats_position> standby_gate::last_published(std::size_t feed) {
    std::lock_guard const lock(mutex_);
    return feeds_[feed]->published;
}

void standby_gate::fill(std::size_t feed, standby_feed_stats& s) const noexcept {
    feed_state const& f = *feeds_[feed];
    // relaxed: statistics, each read on its own.
    s.takeovers = f.takeovers.load(std::memory_order_relaxed);
    s.resyncs = f.resyncs.load(std::memory_order_relaxed);
    s.resync_messages = f.resync_messages.load(std::memory_order_relaxed);
    s.history = f.history.load(std::memory_order_relaxed);
}

// ---------------------------------------------------------------------------------------------
// nats_standby

nats_standby::nats_standby(options o, natsConnection* connection, standby_gate& gate,
                           std::function<bool()> connected, nats_fence& fence)
    : o_(std::move(o))
    , connection_(connection)
    , gate_(gate)
    , connected_(std::move(connected))
    , fence_(fence)
    , leases_(o_.feeds.size())
    , holders_(o_.feeds.size())
    , last_takeover_ms_(o_.feeds.size(), 0.0)
    , resumed_after_(o_.feeds.size())
    , roles_(o_.feeds.size(), "follower")
    , lease_errors_(std::make_unique<std::atomic<std::uint64_t>[]>(o_.feeds.size())) {
    jsOptions js_options;
    jsOptions_Init(&js_options);
    // A request waits at most until a deadline could pass: a stalled server holds this thread,
    // and the deadline stops the publishing meanwhile (a late answer is still a valid renew:
    // its deadline counts from before the request).
    js_options.Wait = std::max<std::int64_t>(publish_for().count(), 50);
    if (natsStatus const s = natsConnection_JetStream(&js_, connection_, &js_options);
        s != NATS_OK) {
        throw std::runtime_error(std::string("[publish] standby: no JetStream context: ") +
                                 natsStatus_GetText(s));
    }
    for (std::size_t i = 0; i < o_.feeds.size(); ++i) {
        seen_.push_back(std::make_unique<seen>());
        natsSubscription* sub = nullptr;
        if (natsStatus const s =
                natsConnection_Subscribe(&sub, connection_, o_.subjects[i].c_str(),
                                         &nats_standby::on_message, seen_.back().get());
            s != NATS_OK) {
            stop_subscriptions();
            jsCtx_Destroy(js_);
            throw std::runtime_error("[publish] standby: cannot subscribe to " + o_.subjects[i] +
                                     ": " + natsStatus_GetText(s));
        }
        // No client-side limit: a follower that dropped messages would resume too early.
        natsSubscription_SetPendingLimits(sub, -1, -1);
        subscriptions_.push_back(sub);
    }
    thread_ = std::thread([this] { run(); });
    fence_thread_ = std::thread([this] { watch_deadlines(); });
}

void nats_standby::watch_deadlines() {
    std::vector<std::int64_t> cut_at(o_.feeds.size(), 0); // the deadline cut for, per feed
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, poll_every(), [this] { return stop_; })) {
        std::int64_t const now = ns_of(standby_gate::clock::now());
        for (std::size_t i = 0; i < o_.feeds.size(); ++i) {
            std::int64_t const deadline = gate_.deadline_ns(i);
            if (deadline != 0 && now >= deadline && cut_at[i] != deadline) {
                cut_at[i] = deadline;
                lock.unlock();
                cut(i, "its deadline passed without a renew");
                lock.lock();
            }
        }
    }
}

void nats_standby::cut(std::size_t feed, char const* why) {
    if (fence_.cut()) {
        SPDLOG_LOGGER_WARN(net::logger(),
                           "publish standby: feed {}: {}: the events' NATS connection is cut "
                           "(what it had not delivered is dropped, never delivered after a "
                           "takeover); the next takeover or resume makes a new one",
                           o_.feeds[feed], why);
    }
}

void nats_standby::stop_subscriptions() noexcept {
    for (natsSubscription* sub : subscriptions_) {
        // Drained: no callback runs into this object after the wait.
        if (natsSubscription_Drain(sub) == NATS_OK) {
            natsSubscription_WaitForDrainCompletion(sub, 2000);
        } else {
            natsSubscription_Unsubscribe(sub);
        }
        natsSubscription_Destroy(sub);
    }
    subscriptions_.clear();
}

void nats_standby::on_message(natsConnection* nc, natsSubscription* sub, natsMsg* msg,
                              void* closure) noexcept {
    (void)nc;
    (void)sub;
    auto* s = static_cast<seen*>(closure);
    std::span<char const> const data(natsMsg_GetData(msg),
                                     static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
    std::optional<nats_position> p = nats_position::read(data);
    if (!p && !data.empty() && data.front() == '{') { // nats_format = "json"
        std::string_view const text(data.data(), data.size());
        auto const sequence = json_number(text, "sequence");
        auto const index = json_number(text, "index");
        if (sequence && index) {
            p = nats_position{.sequence = *sequence,
                              .index = static_cast<std::uint32_t>(*index),
                              .previous = 0,
                              .flags = 0};
        }
    }
    natsMsg_Destroy(msg);
    {
        std::lock_guard const lock(s->mutex);
        if (p && (!s->last || *s->last < *p)) {
            s->last = *p;
        }
        ++s->taken;
    }
    s->took.notify_all(); // no system call without a waiter
}

nats_standby::~nats_standby() {
    stop_thread();
    stop_subscriptions();
    kvStore_Destroy(kv_);
    jsCtx_Destroy(js_);
}

void nats_standby::stop_thread() {
    {
        std::lock_guard const lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all(); // the lease thread and the fence thread
    if (thread_.joinable()) {
        thread_.join();
    }
    if (fence_thread_.joinable()) {
        fence_thread_.join();
    }
}

void nats_standby::set_holder(std::size_t feed, std::string const& holder) {
    lease& l = leases_[feed];
    if (holder == l.holder) {
        return;
    }
    l.holder = holder;
    {
        std::lock_guard const lock(stats_mutex_);
        holders_[feed] = holder;
    }
    if (!holder.empty() && holder != o_.member && !holder.starts_with("released")) {
        SPDLOG_LOGGER_INFO(net::logger(),
                           "publish standby: feed {} follows {} (group {}, member {})",
                           o_.feeds[feed], holder, o_.group, o_.member);
    }
}

void nats_standby::run() {
    std::unique_lock lock(mutex_);
    while (!stop_) {
        lock.unlock();
        if (kv_ == nullptr && connected_()) {
            kvConfig c;
            kvConfig_Init(&c);
            std::string const bucket = "signet_standby_" + o_.group;
            c.Bucket = bucket.c_str();
            c.History = 1;
            c.TTL = std::chrono::duration_cast<std::chrono::nanoseconds>(o_.lease).count();
            c.StorageType = js_MemoryStorage;
            c.Replicas = static_cast<int>(o_.replicas);
            if (natsStatus const s = js_CreateKeyValue(&kv_, js_, &c); s != NATS_OK) {
                kv_ = nullptr;
                lease_errors_[0].fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
            }
        }
        if (kv_ != nullptr) {
            for (std::size_t i = 0; i < leases_.size(); ++i) {
                tick(i);
            }
        }
        lock.lock();
        wake_.wait_for(lock, poll_every(), [this] { return stop_; });
    }
}

void nats_standby::tick(std::size_t feed) {
    auto const now = standby_gate::clock::now();
    lease& l = leases_[feed];
    if (!l.holding) {
        poll(feed, now);
        return;
    }
    if (now >= l.next_renew) {
        renew(feed, now);
    }
    if (!l.holding) {
        return;
    }
    if (gate_.suspended(feed) && !l.resume_due && connected_()) {
        l.resume_due = true; // a lost connection or a failed send: continue from the group's
    }
    if (l.resume_due && connected_() && standby_gate::clock::now() < l.deadline) {
        resume(feed);
    } else if (!l.resume_due) {
        (void)gate_.pump(feed, standby_gate::catch_up_budget); // a catch-up's rest, if any
    }
}

void nats_standby::poll(std::size_t feed, standby_gate::clock::time_point now) {
    lease& l = leases_[feed];
    std::string const& key = o_.keys[feed];
    kvEntry* entry = nullptr;
    natsStatus s = kvStore_Get(&entry, kv_, key.c_str());
    std::uint64_t revision = 0;
    bool free = false;
    if (s == NATS_NOT_FOUND) {
        free = true;
    } else if (s == NATS_OK) {
        std::string const value =
            kvEntry_ValueString(entry) != nullptr
                ? std::string(kvEntry_ValueString(entry),
                              static_cast<std::size_t>(std::max(kvEntry_ValueLen(entry), 0)))
                : std::string();
        revision = kvEntry_Revision(entry);
        if (auto const p = released_position(value)) {
            free = true;
            l.released = p;
        } else if (value == o_.member) {
            free = true; // ours from before (a resumed suspension): take it back by its revision
        } else {
            set_holder(feed, value);
            // The holder's renewals move the revision every quarter lease. One that stood
            // still for three quarters of a lease since this member first saw it (after the
            // read: the write came before) belongs to a holder whose deadline — half a lease
            // after its renew left, before the write — passed a quarter lease ago, and whose
            // fence cut its connection then: take the key by compare-and-set on that revision
            // (it fails if the holder renewed meanwhile). Bounded by this member's clock, not
            // by when the server gets round to expiring the key.
            auto const seen_at = standby_gate::clock::now();
            if (revision != l.watched_revision) {
                l.watched_revision = revision;
                l.watched_since = seen_at;
                l.free_since = {};
            } else if (seen_at - l.watched_since >= stale_after()) {
                free = true;
                l.free_since = l.watched_since + stale_after();
                SPDLOG_LOGGER_INFO(net::logger(),
                                   "publish standby: feed {}: {}'s lease has not been renewed "
                                   "for {} ms (revision {}): taking it over",
                                   o_.feeds[feed], value, stale_after().count(), revision);
            }
        }
    } else {
        lease_errors_[feed].fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
    }
    kvEntry_Destroy(entry);
    if (!free) {
        return;
    }
    if (l.free_since == standby_gate::clock::time_point{}) {
        l.free_since = now;
    }
    auto const t0 = standby_gate::clock::now(); // before the request: the deadline's base
    std::uint64_t rev = 0;
    if (revision == 0) {
        s = kvStore_Create(&rev, kv_, key.c_str(), o_.member.data(),
                           static_cast<int>(o_.member.size()));
    } else {
        s = kvStore_Update(&rev, kv_, key.c_str(), o_.member.data(),
                           static_cast<int>(o_.member.size()), revision);
    }
    if (s != NATS_OK) {
        if (transport_error(s)) {
            lease_errors_[feed].fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
        }
        return; // another member was faster: the next poll names it
    }
    l.holding = true;
    l.resume_due = true;
    l.counted = true;
    l.watched_revision = 0;
    l.revision = rev;
    l.deadline = t0 + publish_for();
    l.next_renew = t0 + renew_every();
    set_holder(feed, o_.member);
    resume(feed);
}

void nats_standby::renew(std::size_t feed, standby_gate::clock::time_point now) {
    lease& l = leases_[feed];
    std::uint64_t rev = 0;
    natsStatus const s = kvStore_Update(&rev, kv_, o_.keys[feed].c_str(), o_.member.data(),
                                        static_cast<int>(o_.member.size()), l.revision);
    if (s == NATS_OK) {
        l.revision = rev;
        l.deadline = now + publish_for();
        l.next_renew = now + renew_every();
        if (!l.resume_due) {
            gate_.renewed(feed, l.deadline);
        }
        return;
    }
    if (transport_error(s)) {
        lease_errors_[feed].fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
        if (standby_gate::clock::now() < l.deadline) {
            return; // try again next tick; the deadline stops the publishing meanwhile
        }
        SPDLOG_LOGGER_WARN(net::logger(),
                           "publish standby: feed {}: could not renew the lease within {} ms "
                           "({}): stopped publishing; following",
                           o_.feeds[feed], publish_for().count(), natsStatus_GetText(s));
    } else {
        SPDLOG_LOGGER_WARN(net::logger(),
                           "publish standby: feed {}: lost the lease ({}): stopped publishing; "
                           "following",
                           o_.feeds[feed], natsStatus_GetText(s));
    }
    cut(feed, "the lease is lost"); // if the fence thread has not (its poll may come after)
    gate_.demote(feed);
    l.holding = false;
    l.resume_due = false;
    l.free_since = {};
    l.holder.clear();
    std::lock_guard const lock(stats_mutex_);
    roles_[feed] = "follower";
}

bool nats_standby::subscription_caught_up(std::size_t feed, standby_gate::clock::time_point until) {
    auto const left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - standby_gate::clock::now());
    if (left.count() <= 0 || natsConnection_FlushTimeout(connection_, left.count()) != NATS_OK) {
        return false;
    }
    // One call, under the subscription's lock: a message leaves pending and counts as
    // delivered in one step, before its callback runs.
    int pending = 0;
    std::int64_t delivered = 0;
    if (natsSubscription_GetStats(subscriptions_[feed], &pending, nullptr, nullptr, nullptr,
                                  &delivered, nullptr) != NATS_OK) {
        return false;
    }
    seen& s = *seen_[feed];
    std::unique_lock lock(s.mutex);
    return s.took.wait_until(lock, until, [&] { return s.taken >= delivered + pending; });
}

bool nats_standby::read_last(std::size_t feed, group_position& out,
                             standby_gate::clock::time_point until) {
    if (!subscription_caught_up(feed, until)) {
        return false;
    }
    jsStreamInfo* info = nullptr;
    natsStatus s = js_GetStreamInfo(&info, js_, o_.streams[feed].c_str(), nullptr, nullptr);
    std::uint64_t last = 0;
    std::uint64_t messages = 0;
    if (s == NATS_OK) {
        last = info->State.LastSeq;
        messages = info->State.Msgs;
    } else if (s != NATS_NOT_FOUND) { // no stream: nothing was published (it comes first)
        jsStreamInfo_Destroy(info);
        return false;
    }
    jsStreamInfo_Destroy(info);
    out = {};
    if (messages == 0 || last == 0) {
        out.what = group_position::state::none;
    } else {
        natsMsg* msg = nullptr;
        s = js_GetMsg(&msg, js_, o_.streams[feed].c_str(), last, nullptr, nullptr);
        if (s != NATS_OK) {
            natsMsg_Destroy(msg);
            return false;
        }
        std::span<char const> const data(natsMsg_GetData(msg),
                                         static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
        if (auto const p = nats_position::read(data)) {
            out = {.what = group_position::state::at, .position = *p};
        } else if (!data.empty() && data.front() == '{') { // nats_format = "json"
            std::string_view const text(data.data(), data.size());
            auto const sequence = json_number(text, "sequence");
            auto const index = json_number(text, "index");
            if (sequence && index) {
                out.what = group_position::state::at;
                out.position.sequence = *sequence;
                out.position.index = static_cast<std::uint32_t>(*index);
            } else {
                out.what = group_position::state::unknown;
            }
        } else {
            out.what = group_position::state::unknown;
        }
        natsMsg_Destroy(msg);
    }
    {
        std::lock_guard const lock(seen_[feed]->mutex); // what the live subjects delivered
        if (seen_[feed]->last &&
            (out.what != group_position::state::at || out.position < *seen_[feed]->last)) {
            out = {.what = group_position::state::at, .position = *seen_[feed]->last};
        }
    }
    if (leases_[feed].released) { // a hand-over's own word: the greatest
        nats_position const r = *leases_[feed].released;
        if (out.what != group_position::state::at || out.position < r) {
            out = {.what = group_position::state::at, .position = r};
        }
    }
    return true;
}

void nats_standby::resume(std::size_t feed) {
    lease& l = leases_[feed];
    bool const counted = l.counted;
    group_position last;
    if (!read_last(feed, last, l.deadline)) {
        lease_errors_[feed].fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
        return; // holding, not publishing: again next tick (within the deadline)
    }
    auto const now = standby_gate::clock::now();
    if (now >= l.deadline) {
        return; // the renew comes first
    }
    std::uint64_t const sent = gate_.take_over(feed, last, now, l.deadline, counted);
    if (gate_.suspended(feed)) {
        lease_errors_[feed].fetch_add(1, std::memory_order_relaxed); // relaxed: statistic
        return; // no connection to publish on yet: again next tick (within the deadline)
    }
    l.resume_due = false;
    l.counted = false;
    l.released.reset();
    auto const done = standby_gate::clock::now();
    double const ms =
        std::chrono::duration<double, std::milli>(
            done - (l.free_since != standby_gate::clock::time_point{} ? l.free_since : now))
            .count();
    l.free_since = {};
    standby_feed_stats s;
    gate_.fill(feed, s);
    {
        std::lock_guard const lock(stats_mutex_);
        roles_[feed] = "leader";
        if (counted) {
            last_takeover_ms_[feed] = ms;
            resumed_after_[feed] = last.position;
        }
    }
    char const* how = last.what == group_position::state::none ? "the group never published"
                      : last.what == group_position::state::unknown
                          ? "the group's last message has no position"
                          : "resumed after";
    SPDLOG_LOGGER_INFO(
        net::logger(),
        "publish standby: feed {} {} (group {}, member {}): {} sequence {} index "
        "{}; {} messages from its history{} in {:.1f} ms",
        o_.feeds[feed], counted ? "leads" : "leads again", o_.group, o_.member, how,
        last.position.sequence, last.position.index, sent,
        s.resyncs > 0 && last.what != group_position::state::at ? " (a resynchronization)" : "",
        ms);
}

void nats_standby::release() noexcept {
    stop_thread();
    if (kv_ == nullptr) {
        return;
    }
    bool flushed = false;
    for (std::size_t i = 0; i < leases_.size(); ++i) {
        lease& l = leases_[i];
        if (!l.holding) {
            continue;
        }
        gate_.demote(i);
        if (!flushed) {
            natsConnection_FlushTimeout(connection_, 2000); // the last events reach the server
            flushed = true;
        }
        std::optional<nats_position> const p = gate_.last_published(i);
        std::string const value =
            p ? "released " + std::to_string(p->sequence) + " " + std::to_string(p->index)
              : std::string();
        std::uint64_t rev = 0;
        // Nothing published: the key goes (a delete marker); else its position, by CAS.
        natsStatus const s = p ? kvStore_Update(&rev, kv_, o_.keys[i].c_str(), value.data(),
                                                static_cast<int>(value.size()), l.revision)
                               : kvStore_Delete(kv_, o_.keys[i].c_str());
        l.holding = false;
        SPDLOG_LOGGER_INFO(net::logger(),
                           "publish standby: feed {} hands over (group {}): {} after sequence "
                           "{} index {}",
                           o_.feeds[i], o_.group,
                           s == NATS_OK ? "released" : "could not release (the lease expires)",
                           p ? p->sequence : 0, p ? p->index : 0);
        std::lock_guard const lock(stats_mutex_);
        roles_[i] = "follower";
    }
}

standby_stats nats_standby::stats() const {
    standby_stats out;
    out.group = o_.group;
    out.member = o_.member;
    std::lock_guard const lock(stats_mutex_);
    for (std::size_t i = 0; i < o_.feeds.size(); ++i) {
        standby_feed_stats s;
        s.feed = o_.feeds[i];
        s.role = roles_[i];
        if (s.role == "leader" && gate_.suspended(i)) {
            s.role = "suspended";
        }
        s.holder = holders_[i];
        s.last_takeover_ms = last_takeover_ms_[i];
        s.resumed_after_sequence = resumed_after_[i].sequence;
        s.resumed_after_index = resumed_after_[i].index;
        s.lease_errors = lease_errors_[i].load(std::memory_order_relaxed); // relaxed: statistic
        gate_.fill(i, s);
        out.feeds.push_back(std::move(s));
    }
    return out;
}

} // namespace signet::receiver
