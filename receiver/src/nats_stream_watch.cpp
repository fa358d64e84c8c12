#include "nats_stream_watch.hpp"

#include <chrono>
#include <utility>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>

#include <nats/nats.h>

namespace signet::receiver {

nats_stream_watch::nats_stream_watch(natsConnection* connection, std::vector<std::string> streams,
                                     std::atomic<std::uint64_t> const* sent,
                                     std::function<std::uint64_t()> epoch)
    : connection_(connection)
    , streams_(std::move(streams))
    , sent_(sent)
    , epoch_(std::move(epoch))
    , states_(streams_.size())
    , thread_([this] { run(); }) {}

nats_stream_watch::~nats_stream_watch() {
    {
        std::lock_guard const lock(mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    thread_.join(); // a request in progress ends within its 1 s wait
}

void nats_stream_watch::run() {
    jsOptions options;
    jsOptions_Init(&options);
    options.Wait = 1000; // ms: a stalled server holds this thread, nothing else
    jsCtx* js = nullptr;
    if (natsConnection_JetStream(&js, connection_, &options) != NATS_OK) {
        SPDLOG_LOGGER_WARN(net::logger(), "publish nats: cannot watch the JetStream streams "
                                          "(no JetStream context): their losses go uncounted");
        return;
    }
    std::unique_lock lock(mutex_);
    while (!wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_; })) {
        lock.unlock();
        for (std::size_t i = 0; i < streams_.size(); ++i) {
            jsStreamInfo* info = nullptr;
            // The count before the request: what was handed over by the time of the answer.
            std::uint64_t const sent = sent_[i].load(std::memory_order_relaxed);
            std::uint64_t const epoch = epoch_();
            if (js_GetStreamInfo(&info, js, streams_[i].c_str(), nullptr, nullptr) == NATS_OK) {
                observe(i, sent, epoch, info->State.LastSeq);
            }
            jsStreamInfo_Destroy(info);
        }
        std::uint64_t total = 0;
        for (stream_state const& s : states_) {
            total += s.past + s.shortfall;
        }
        unstored_.store(total, std::memory_order_relaxed);
        lock.lock();
    }
    jsCtx_Destroy(js);
}

void nats_stream_watch::observe(std::size_t i, std::uint64_t sent, std::uint64_t epoch,
                                std::uint64_t sequence) {
    stream_state& s = states_[i];
    if (!s.based || epoch != s.epoch || sequence < s.sequence0) {
        s.past += s.shortfall;
        s = {.based = true,
             .epoch = epoch,
             .sent0 = sent,
             .sequence0 = sequence,
             .sent_before = sent,
             .shortfall = 0,
             .past = s.past,
             .logged = s.logged};
        return;
    }
    // What was handed over up to the previous check has had a second to be stored.
    std::uint64_t const handed = s.sent_before - s.sent0;
    std::uint64_t const stored = sequence - s.sequence0;
    s.sent_before = sent;
    if (handed > stored && handed - stored > s.shortfall) {
        s.shortfall = handed - stored;
        if (!s.logged) {
            s.logged = true;
            SPDLOG_LOGGER_WARN(net::logger(),
                               "publish nats: the JetStream stream {} did not store {} of the "
                               "messages sent to it (its store is full, or it has no leader): a "
                               "late consumer may get older values; counted as stream_unstored",
                               streams_[i], s.shortfall);
        }
    }
}

} // namespace signet::receiver
