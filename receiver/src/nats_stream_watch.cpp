#include "nats_stream_watch.hpp"

#include <chrono>
#include <stdexcept>
#include <utility>

#include <spdlog/spdlog.h>

#include <signet/net/log.hpp>

#include <nats/nats.h>

namespace signet::receiver {

nats_stream_watch::nats_stream_watch(natsConnection* connection, std::vector<std::string> streams,
                                     std::vector<std::string> prefixes, int replicas,
                                     std::atomic<std::uint64_t> const* sent,
                                     std::function<std::uint64_t()> epoch,
                                     std::atomic<bool>& streams_due)
    : connection_(connection)
    , streams_(std::move(streams))
    , prefixes_(std::move(prefixes))
    , replicas_(replicas)
    , streams_due_(streams_due)
    , sent_(sent)
    , epoch_(std::move(epoch))
    , states_(streams_.size()) {
    jsOptions options;
    jsOptions_Init(&options);
    options.Wait = 1000; // ms: a stalled server holds this thread, nothing else
    if (natsStatus const s = natsConnection_JetStream(&js_, connection_, &options); s != NATS_OK) {
        throw std::runtime_error(std::string("publish nats: no JetStream context (") +
                                 natsStatus_GetText(s) + ")");
    }
    // acquire: pairs with the release store of the connect callback (its status before).
    if (streams_due_.exchange(false, std::memory_order_acquire)) {
        missing_ = !make(); // before the first event: the streams store the first values
    }
    thread_ = std::thread([this] { run(); });
}

nats_stream_watch::~nats_stream_watch() {
    {
        std::lock_guard const lock(mutex_);
        stop_ = true;
    }
    wake_.notify_one();
    thread_.join(); // a request in progress ends within its wait (5 s at most)
    jsCtx_Destroy(js_);
}

bool nats_stream_watch::make() {
    // A replicated stream is made once its replicas elected a leader: on a loaded cluster that
    // took more than the watch's 1 s (every try timed out); libnats's default wait, here only.
    jsOptions options;
    jsOptions_Init(&options);
    options.Wait = 5000;
    bool all = true;
    for (std::size_t i = 0; i < streams_.size(); ++i) {
        std::string const base = prefixes_[i] + "*.";
        std::string const subjects[] = {base + "bbo", base + "trade", base + "status",
                                        base + "definition"};
        char const* list[] = {subjects[0].c_str(), subjects[1].c_str(), subjects[2].c_str(),
                              subjects[3].c_str()};
        jsStreamConfig c;
        jsStreamConfig_Init(&c);
        c.Name = streams_[i].c_str();
        c.Subjects = list;
        c.SubjectsLen = 4;
        c.MaxMsgsPerSubject = 1; // the last value of each subject
        c.Replicas = replicas_;
        jsStreamInfo* info = nullptr;
        jsErrCode error = static_cast<jsErrCode>(0);
        natsStatus s = js_AddStream(&info, js_, &c, &options, &error);
        if (s != NATS_OK && error == JSStreamNameExistErr) {
            s = js_UpdateStream(&info, js_, &c, &options, &error);
        }
        jsStreamInfo_Destroy(info);
        if (s == NATS_OK) {
            made_.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        all = false;
        if (errors_.fetch_add(1, std::memory_order_relaxed) == 0) {
            SPDLOG_LOGGER_WARN(net::logger(),
                               "publish nats: cannot make the JetStream stream {} ({}, error {}): "
                               "trying again every second (is JetStream on?)",
                               streams_[i], natsStatus_GetText(s), static_cast<int>(error));
        }
    }
    return all;
}

void nats_stream_watch::wake() noexcept {
    {
        std::lock_guard const lock(mutex_);
        woken_ = true;
    }
    wake_.notify_one();
}

void nats_stream_watch::run() {
    std::unique_lock lock(mutex_);
    while (true) {
        wake_.wait_for(lock, std::chrono::seconds(1), [this] { return stop_ || woken_; });
        if (stop_) {
            break;
        }
        woken_ = false;
        lock.unlock();
        // acquire: pairs with the release store of the (re)connect callback.
        if (streams_due_.exchange(false, std::memory_order_acquire) || missing_) {
            bool const was_missing = missing_;
            missing_ = !make();
            if (was_missing && !missing_) {
                SPDLOG_LOGGER_INFO(net::logger(),
                                   "publish nats: the JetStream streams are made ({} failed "
                                   "attempts before)",
                                   errors_.load(std::memory_order_relaxed));
            }
        }
        for (std::size_t i = 0; i < streams_.size(); ++i) {
            jsStreamInfo* info = nullptr;
            // The count before the request: what was handed over by the time of the answer.
            std::uint64_t const sent = sent_[i].load(std::memory_order_relaxed);
            std::uint64_t const epoch = epoch_();
            if (js_GetStreamInfo(&info, js_, streams_[i].c_str(), nullptr, nullptr) == NATS_OK) {
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
