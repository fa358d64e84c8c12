#include "event_dispatch.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace signet::receiver {

char const* to_string(delivery_mode mode) noexcept {
    return mode == delivery_mode::inline_call ? "inline" : "queued";
}

namespace detail {

namespace {

std::string_view symbol_of(instrument_entry const* instruments, std::uint32_t id) noexcept {
    if (instruments == nullptr || id >= max_instrument_ids) {
        return {};
    }
    instrument_entry const& i = instruments[id];
    // acquire: pairs with the release store in feed_dispatcher::define(); the symbol is
    // written before and never again.
    return i.defined.load(std::memory_order_acquire) ? std::string_view(i.symbol.data(), i.length)
                                                     : std::string_view{};
}

} // namespace

feed_queue::feed_queue(std::size_t capacity, std::string const& feed_name,
                       instrument_entry const* instrument_table, bool conflate)
    : queue(capacity)
    , feed(feed_name)
    , instruments(instrument_table) {
    if (conflate) {
        pending_slot.assign(max_instrument_ids, -1);
        pending.reserve(max_kept_bbos);
    }
}

subscriber::subscriber(subscription options, event_handler handler, std::string name)
    : options_(std::move(options))
    , handler_(std::move(handler))
    , name_(std::move(name)) {}

void subscriber::call(event_view const& view) noexcept {
    handler_(view);
    add(delivered_, 1);
}

feed_queue& subscriber::add_feed(std::string const& feed, instrument_entry const* instruments) {
    queues_.push_back(std::make_unique<feed_queue>(options_.queue_capacity, feed, instruments,
                                                   options_.conflate_bbo));
    return *queues_.back();
}

void subscriber::attach(blocking_work_contract_group& group) {
    contract_ = group.create_contract([this](work_contract_token& token) { run(token); });
    if (!contract_.is_valid()) {
        throw std::invalid_argument("receiver::subscribe: too many queued subscribers");
    }
}

bool subscriber::catch_up(feed_queue& q) noexcept {
    if (q.unreported_lost != 0) {
        md::event notice = md::marker_event(md::event_kind::events_lost, md::all_instruments, {});
        notice.lost = {.count = q.unreported_lost, .reserved = {}};
        if (!q.queue.push(notice)) {
            return false;
        }
        q.unreported_lost = 0;
    }
    std::size_t sent = 0;
    while (sent < q.pending.size() && q.queue.push(q.pending[sent])) {
        q.pending_slot[q.pending[sent].instrument] = -1;
        ++sent;
    }
    if (sent != 0) {
        q.pending.erase(q.pending.begin(), q.pending.begin() + static_cast<std::ptrdiff_t>(sent));
        for (std::size_t i = 0; i < q.pending.size(); ++i) { // the rest moved down
            q.pending_slot[q.pending[i].instrument] = static_cast<std::int32_t>(i);
        }
    }
    return q.pending.empty();
}

void subscriber::lose(feed_queue& q, md::event const& e) noexcept {
    if (e.kind == md::event_kind::bbo && !q.pending_slot.empty() &&
        e.instrument < max_instrument_ids) {
        if (std::int32_t const slot = q.pending_slot[e.instrument]; slot >= 0) {
            q.pending[static_cast<std::size_t>(slot)] = e; // the latest replaces the kept one
            add(conflated_, 1);
            return;
        }
        if (q.pending.size() < max_kept_bbos) {
            q.pending_slot[e.instrument] = static_cast<std::int32_t>(q.pending.size());
            q.pending.push_back(e); // reserved: never allocates
            return;
        }
    }
    ++q.unreported_lost;
    add(dropped_, 1);
}

void subscriber::push(feed_queue& q, md::event const& e) noexcept {
    bool const lagging = q.unreported_lost != 0 || !q.pending.empty();
    if ((!lagging || catch_up(q)) && q.queue.push(e)) {
        if (q.pushes_in_run++ == 0) {
            contract_.schedule(); // after the push: the run sees it (the rest: flush())
        }
        return;
    }
    lose(q, e);
    if (lagging) {
        contract_.schedule(); // catch_up() may have handed some over
    }
}

void subscriber::flush(feed_queue& q) noexcept {
    bool wake = q.pushes_in_run > 1; // pushed after the run's first schedule
    q.pushes_in_run = 0;
    if ((q.unreported_lost != 0 || !q.pending.empty()) && catch_up(q)) {
        wake = true;
    }
    if (wake) {
        contract_.schedule();
    }
}

void subscriber::run(work_contract_token& token) {
    bool more = false;
    for (auto& q : queues_) {
        std::size_t n = 0;
        for (; n < batch; ++n) {
            md::event const* const e = q->queue.front();
            if (e == nullptr) {
                break;
            }
            handler_(event_view{*e, q->feed, symbol_of(q->instruments, e->instrument)});
            if (e->kind == md::event_kind::events_lost) {
                add(lost_notices_, 1);
            }
            q->queue.pop_front();
        }
        add(delivered_, n);
        more = more || n == batch;
    }
    if (more) {
        token.schedule(); // a queue may hold more: another run, after the others had theirs
    }
}

void subscriber::abandon() noexcept {
    for (auto& q : queues_) {
        std::uint64_t left = q->pending.size(); // kept bbos: not counted yet
        while (q->queue.front() != nullptr) {
            q->queue.pop_front();
            ++left;
        }
        add(dropped_, left);
        std::uint64_t const lost = left + q->unreported_lost; // unreported: counted already
        q->pending.clear();
        q->unreported_lost = 0;
        if (lost != 0) { // the workers are joined: the handler cannot be running elsewhere
            md::event notice =
                md::marker_event(md::event_kind::events_lost, md::all_instruments, {});
            notice.lost = {.count = lost, .reserved = {}};
            handler_(event_view{notice, q->feed, {}});
            add(lost_notices_, 1);
        }
    }
}

subscriber_stats subscriber::stats() const {
    return {.name = name_,
            .mode = options_.mode,
            .delivered = delivered_.load(std::memory_order_relaxed),
            .dropped = dropped_.load(std::memory_order_relaxed),
            .conflated = conflated_.load(std::memory_order_relaxed),
            .lost_notices = lost_notices_.load(std::memory_order_relaxed)};
}

feed_dispatcher::feed_dispatcher(std::string feed)
    : feed_(std::move(feed))
    , instruments_(std::make_unique<instrument_entry[]>(max_instrument_ids)) {}

void feed_dispatcher::add(subscriber& s, feed_queue* queue) {
    if (routes_.size() == max_feed_subscribers) {
        throw std::invalid_argument("receiver::subscribe: feed '" + feed_ + "' has " +
                                    std::to_string(max_feed_subscribers) + " subscribers already");
    }
    std::uint64_t const bit = std::uint64_t{1} << routes_.size();
    routes_.push_back({&s, queue, s.options().kinds, bit});
    kinds_ = kinds_ | s.options().kinds;
    if (s.options().symbols.empty()) {
        unfiltered_ |= bit;
        for (std::size_t i = 0; i < max_instrument_ids; ++i) {
            instruments_[i].subscribers = unfiltered_; // nothing is defined before start()
        }
    }
    // Symbol filters are applied when an instrument is defined (define()).
    kinds_ = kinds_ | md::event_mask::of({md::event_kind::instrument_definition});
}

void feed_dispatcher::define(md::event const& e) noexcept {
    instrument_entry& i = instruments_[e.instrument];
    if (i.defined.load(std::memory_order_relaxed)) { // the producer's own write
        return;                                      // the first definition names it
    }
    auto const& raw = e.definition.symbol;
    std::size_t length =
        static_cast<std::size_t>(std::find(raw.begin(), raw.end(), '\0') - raw.begin());
    while (length > 0 && raw[length - 1] == ' ') { // ITCH pads with spaces
        --length;
    }
    std::copy_n(raw.begin(), length, i.symbol.begin());
    i.length = static_cast<std::uint8_t>(length);
    std::string_view const symbol(i.symbol.data(), length);
    std::uint64_t mask = unfiltered_;
    for (route const& r : routes_) {
        auto const& wanted = r.s->options().symbols;
        if (std::find(wanted.begin(), wanted.end(), symbol) != wanted.end()) {
            mask |= r.bit;
        }
    }
    i.subscribers = mask;
    // release: pairs with the acquire load in symbol_of(); publishes the symbol.
    i.defined.store(true, std::memory_order_release);
}

void feed_dispatcher::on_event(md::event const& e) noexcept {
    if (e.kind == md::event_kind::instrument_definition && e.instrument < max_instrument_ids) {
        define(e);
    }
    std::uint64_t mask = unfiltered_;
    if (e.instrument == md::all_instruments) {
        mask = ~std::uint64_t{0};
    } else if (e.instrument < max_instrument_ids) {
        mask = instruments_[e.instrument].subscribers;
    }
    for (route const& r : routes_) {
        if ((mask & r.bit) == 0 || !r.kinds.has(e.kind)) {
            continue;
        }
        if (r.queue != nullptr) {
            r.s->push(*r.queue, e);
        } else {
            r.s->call(event_view{e, feed_, symbol_of(instruments_.get(), e.instrument)});
        }
    }
}

void feed_dispatcher::end_of_run() noexcept {
    for (route const& r : routes_) {
        if (r.queue != nullptr) {
            r.s->flush(*r.queue);
        }
    }
}

} // namespace detail

} // namespace signet::receiver
