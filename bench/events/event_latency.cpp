// signet_event_latency: wire to the first instruction of the user's handler. The same paced
// MoldUDP64 + ITCH 5.0 stream (bench/packet_rate's sender: each packet stamped with its send
// time) reaches one handler three ways:
//   raw      the physical limit for this design on this machine: one thread's blocking
//            recvmmsg loop (or a spinning one, --idle spin) that decodes MoldUDP64 + ITCH into
//            the same book (md::nasdaq::itch50_parser, its pipelined push/flush) and calls the
//            handler inline from the parser's events;
//   inline   signet::receiver::receiver (one moldudp64 feed, one worker, the default backend)
//            with an inline subscription: the handler runs in the feed's parser contract;
//   queued   the same receiver with a queued subscription: the handler runs as its own work
//            contract on an event worker (--event-idle block or spin);
//   shm      the same receiver publishing into shared memory ([publish] shm): the handler runs
//            in another process (this program, --reader shm:NAME) that spins on the event ring;
//   nats     the same receiver publishing to NATS ([publish] nats, --nats URL: a running
//            nats-server): the handler runs in another process subscribed to the subjects.
// The handler's first instructions read the clocks; once per packet (the first event of its
// first message, which carries the send stamp as its exchange time) it records now - send
// stamp and now - the kernel's receive stamp. Designs run in interleaved rounds at each rate;
// one JSON object per (round, rate, design) with p50, p99, p99.9 of both and what was lost.
// --path veth sends across a veth pair of two namespaces made for the run (root); with
// --backend af_xdp the receiver takes the frames through its XDP program (no kernel receive
// stamp on that path: the receiver's own stamp stands in, so kernel->handler is shorter).
// --path memory measures the hand-off alone: no network and no sender thread; a contract on
// the receiver's worker (the first of --cpus) writes each packet into the feed's memory line,
// stamped just before, and the parser contract runs next on that worker; the consumer has the
// second CPU (queued: the event worker pinned there, --event-idle spin; shm: the reader
// process pinned there, spinning). Stamp -> handler is then the event's creation (plus the
// parse of the packet: inline shows that part alone) to the consumer's first instruction; raw
// is the machine's own limit: a stamp handed over in one cache line from a thread on the
// first CPU to one spinning on the second. The queued design also records made -> handler:
// an inline subscription ahead of the consumer's stamps each message's first event as the
// dispatcher hands it on (creation_stamps.hpp), so the parse is left out (its stamps cost the
// parser a clock read a message, which its stamp -> handler includes). The shm design has no
// such column: its publisher is the feed's first subscription, so no stamp can precede it.
//
//   signet_event_latency --rates 100000,1000000 --rounds 3 --duration 3 --json out.json
//   signet_event_latency --path veth --backend af_xdp --json out.json
//   signet_event_latency --designs inline,shm,nats --nats nats://127.0.0.1:4222
//   signet_event_latency --path memory --designs raw,inline,queued,shm --event-idle spin
//                        --payload 64

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/core/metrics/histogram.hpp>
#include <signet/core/work_contract.hpp>
#include <signet/md/big_endian.hpp>
#include <signet/md/events.hpp>
#include <signet/md/nasdaq/itch50.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/net/memory_line.hpp>
#include <signet/net/unique_fd.hpp>
#include <signet/receiver/nasdaq/moldudp64_protocol.hpp>
#include <signet/receiver/publish.hpp>
#include <signet/receiver/receiver.hpp>
#include <signet/receiver/shm_reader.hpp>

#include "common.hpp"
#include "creation_stamps.hpp"
#include "latency_probe.hpp"
#include "network_path.hpp"
#include "points_file.hpp"
#include "sender.hpp"
#include <nats/nats.h>
#include <nlohmann/json.hpp>

namespace {

using namespace signet;
using json = nlohmann::ordered_json;
using bench::latency_probe;
using bench::percentiles;

/// The queued subscription's queue, in events.
constexpr std::size_t queue_capacity = 1 << 16;

struct probe_sink final : md::event_sink {
    latency_probe* probe;
    explicit probe_sink(latency_probe* p)
        : probe(p) {}
    void on_event(md::event const& e) noexcept override { probe->on_event(e); }
};

/// A design under test: opens its socket at construction, runs until stop().
class design {
public:
    virtual ~design() = default;
    [[nodiscard]] virtual std::uint16_t port() const = 0;
    virtual void start() = 0;
    virtual void stop() = 0;
    [[nodiscard]] virtual std::uint64_t packets() const = 0;
};

/// A design that is a thread of its own: run() until stopping(), counting packets_. A derived
/// class stops it in its own destructor (the thread uses its members).
class threaded_design : public design {
public:
    void start() override {
        thread_ = std::thread([this] { run(); });
    }
    void stop() override {
        stop_.store(true, std::memory_order_relaxed); // relaxed: polled; join orders the rest
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    std::uint64_t packets() const override {
        return packets_.load(std::memory_order_relaxed); // relaxed: a snapshot
    }

protected:
    virtual void run() = 0;
    [[nodiscard]] bool stopping() const noexcept {
        return stop_.load(std::memory_order_relaxed); // relaxed: a flag polled by run()
    }
    std::atomic<std::uint64_t> packets_{0}; // the thread's only; relaxed: others read snapshots

private:
    std::thread thread_;
    std::atomic<bool> stop_{false};
};

/// One thread, one socket: recvmmsg, MoldUDP64 framing, ITCH into the book, events inline.
class raw_design final : public threaded_design {
public:
    raw_design(latency_probe& probe, bool spin, int cpu)
        : sink_(&probe)
        , parser_(md::nasdaq::itch_order_book_options{.max_orders = 1 << 20})
        , spin_(spin)
        , cpu_(cpu) {
        fd_.reset(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP));
        if (!fd_.is_open()) {
            throw std::system_error(errno, std::generic_category(), "socket");
        }
        int const on = 1;
        int const buffer = 8 << 20;
        timeval const timeout{0, 20'000}; // to see stop()
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr = bench::current_path().receiver;
        socklen_t length = sizeof(address);
        if (::setsockopt(fd_.get(), SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof(on)) != 0 ||
            ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &buffer, sizeof(buffer)) != 0 ||
            ::setsockopt(fd_.get(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout)) != 0 ||
            ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
            ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&address), &length) != 0) {
            throw std::system_error(errno, std::generic_category(), "raw socket setup");
        }
        port_ = ntohs(address.sin_port);
        parser_.set_event_sink(&sink_);
    }
    ~raw_design() override { stop(); }
    std::uint16_t port() const override { return port_; }

private:
    static constexpr std::size_t batch = 64;

    void run() override {
        if (cpu_ >= 0) {
            pin_this_thread(cpu_, "raw receive loop");
        }
        std::vector<std::array<std::byte, bench::packet_buffer_size>> buffers(batch);
        std::array<iovec, batch> vectors{};
        std::array<mmsghdr, batch> headers{};
        std::array<std::array<char, CMSG_SPACE(sizeof(timespec))>, batch> control{};
        while (!stopping()) {
            for (std::size_t i = 0; i < batch; ++i) {
                vectors[i] = {buffers[i].data(), buffers[i].size()};
                headers[i].msg_hdr = {};
                headers[i].msg_hdr.msg_iov = &vectors[i];
                headers[i].msg_hdr.msg_iovlen = 1;
                headers[i].msg_hdr.msg_control = control[i].data();
                headers[i].msg_hdr.msg_controllen = control[i].size();
            }
            int const n = ::recvmmsg(fd_.get(), headers.data(), batch,
                                     spin_ ? MSG_DONTWAIT : MSG_WAITFORONE, nullptr);
            if (n <= 0) {
                continue;
            }
            for (int i = 0; i < n; ++i) {
                deliver({buffers[static_cast<std::size_t>(i)].data(),
                         headers[static_cast<std::size_t>(i)].msg_len},
                        kernel_stamp(headers[static_cast<std::size_t>(i)].msg_hdr));
            }
            parser_.flush(); // the end of a batch, as the receiver's parser contract does
            packets_.fetch_add(static_cast<std::uint64_t>(n), std::memory_order_relaxed);
        }
    }

    static std::uint64_t kernel_stamp(msghdr const& m) noexcept {
        for (cmsghdr const* c = CMSG_FIRSTHDR(&m); c != nullptr;
             c = CMSG_NXTHDR(const_cast<msghdr*>(&m), const_cast<cmsghdr*>(c))) {
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
                timespec t{};
                std::memcpy(&t, CMSG_DATA(c), sizeof(t));
                return static_cast<std::uint64_t>(t.tv_sec) * 1'000'000'000u +
                       static_cast<std::uint64_t>(t.tv_nsec);
            }
        }
        return 0;
    }

    void deliver(std::span<std::byte const> datagram, std::uint64_t receive_ns) noexcept {
        if (datagram.size() < md::nasdaq::moldudp64_header_size) {
            return;
        }
        std::uint64_t sequence = md::load_be64(datagram.data() + 10);
        std::size_t const count = md::load_be16(datagram.data() + 18);
        std::size_t offset = md::nasdaq::moldudp64_header_size;
        for (std::size_t k = 0; k < count && offset + 2 <= datagram.size(); ++k) {
            std::size_t const length = md::load_be16(datagram.data() + offset);
            offset += 2;
            if (offset + length > datagram.size()) {
                return;
            }
            parser_.push(datagram.subspan(offset, length),
                         {.sequence = sequence++, .receive_ns = receive_ns});
            offset += length;
        }
    }

    probe_sink sink_;
    md::nasdaq::itch50_parser parser_;
    bool spin_;
    int cpu_;
    net::unique_fd fd_;
    std::uint16_t port_ = 0;
};

/// signet::receiver with one moldudp64 feed and one subscriber (inline or queued).
class receiver_design final : public design {
public:
    /// `publish`: "" (the probe subscribes), "shm:NAME" or "nats:URL" (the probe is in
    /// another process).
    /// `stamps` (or null): an inline subscription made before the probe's writes each
    /// message's making into it, for the probe to look up.
    receiver_design(latency_probe& probe, receiver::delivery_mode mode, bool spin, int cpu,
                    bool event_spin, int event_cpu, net::backend_kind backend,
                    std::string const& publish, bench::creation_stamps* stamps) {
        receiver::receiver_config config;
        config.backend = backend;
        config.stats_interval_s = 1;
        config.silent_warning_s = 0;
        config.workers = 1;
        config.idle = spin ? idle_strategy::spin : idle_strategy::block;
        if (cpu >= 0) {
            config.cpus = {cpu};
        }
        receiver::feed_config feed;
        feed.name = "bench";
        sockaddr_in address{};
        address.sin_family = AF_INET;
        address.sin_addr = bench::current_path().receiver;
        feed.bind = net::udp_endpoint::from_sockaddr(reinterpret_cast<sockaddr const*>(&address),
                                                     sizeof(address));
        if (backend == net::backend_kind::af_xdp) {
            feed.interface = bench::current_path().interface;
        }
        feed.protocol = std::make_shared<receiver::nasdaq::moldudp64_settings>();
        config.feeds.push_back(feed);
        if (publish.starts_with("shm:")) {
            config.shm = publish.substr(4);
            config.shm_events = 1 << 20;
        } else if (publish.starts_with("nats:")) {
            config.nats.url = publish.substr(5);
            config.nats.stream = false; // core subjects: what the consumer reads
        }
        receiver_ = std::make_unique<receiver::receiver>(
            config,
            receiver::receiver_options{
                .stats_lines = false,
                .event_idle = event_spin ? idle_strategy::spin : idle_strategy::block,
                .event_cpus = event_cpu >= 0 ? std::vector<int>{event_cpu} : std::vector<int>{}});
        if (stamps != nullptr) { // first: a feed's subscriptions run in the order made
            receiver_->subscribe({.name = "made", .mode = receiver::delivery_mode::inline_call},
                                 [stamps](receiver::event_view const& v) {
                                     stamps->stamp(v.event, bench::monotonic_ns());
                                 });
        }
        if (publish.empty()) {
            receiver_->subscribe(
                {.name = "probe", .mode = mode, .queue_capacity = queue_capacity},
                [&probe](receiver::event_view const& v) { probe.on_event(v.event); });
        }
    }
    [[nodiscard]] receiver::receiver const& get() const { return *receiver_; }
    [[nodiscard]] receiver::receiver& get() { return *receiver_; }
    std::uint16_t port() const override { return receiver_->runtime().local_endpoint(0).port(); }
    void start() override { receiver_->start(); }
    void stop() override { receiver_->stop(); }
    std::uint64_t packets() const override { return receiver_->parser(0).live().packets; }

private:
    std::unique_ptr<receiver::receiver> receiver_;
};

/// Where the packets come from: the sender over the network path, or the memory line.
class packet_source {
public:
    virtual ~packet_source() = default;
    virtual void start() = 0;
    /// Returns once every packet was sent (written).
    virtual void wait() = 0;
    [[nodiscard]] virtual std::uint64_t sent() const = 0;
};

class network_source final : public packet_source {
public:
    explicit network_source(bench::sender_options o)
        : sender_(std::move(o)) {}
    void start() override { sender_.start(); }
    void wait() override { sender_.wait(); }
    std::uint64_t sent() const override { return sender_.sent(); }

private:
    bench::sender sender_;
};

/// --path memory: a contract of the receiver's own group writes the packets into feed 0's
/// memory line on the receiver's worker, paced, at most one a run, each stamped just before it
/// is written; the parser contract runs next on the same worker (the contract reschedules
/// itself: the worker never idles).
class memory_source final : public packet_source {
public:
    memory_source(receiver::receiver& r, bench::packet_templates const& templates,
                  double packets_per_s, std::uint64_t limit)
        : line_(r.runtime().memory_line(0))
        , templates_(templates)
        , period_ns_(static_cast<std::uint64_t>(1e9 / packets_per_s))
        , limit_(limit)
        , contract_(r.runtime().group().create_contract([this] { run(); })) {}
    ~memory_source() override { contract_.release(); }
    void start() override {
        next_ns_ = bench::monotonic_ns();
        contract_.schedule();
    }
    void wait() override {
        // Asleep until the last packet is due, then polling every 10 ms: this thread waking
        // often would take the consumer's CPU from it (1 ms polls showed in the p99).
        std::this_thread::sleep_for(std::chrono::nanoseconds(period_ns_ * limit_));
        while (sent() < limit_) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10)); // polling the worker
        }
    }
    std::uint64_t sent() const override {
        return sent_.load(std::memory_order_relaxed); // relaxed: one writer, a snapshot
    }

private:
    void run() noexcept {
        std::uint64_t const n = sent_.load(std::memory_order_relaxed); // the only writer
        if (n < limit_ && bench::monotonic_ns() >= next_ns_) {
            bool const written = line_.write([this](std::span<std::byte> buffer) {
                std::size_t const size = bench::produce_packet(templates_, cursor_, buffer.data());
                bench::stamp_packet(buffer.data(), bench::monotonic_ns());
                return size;
            });
            if (written) {
                line_.flush(); // schedules the parser contract
                next_ns_ += period_ns_;
                sent_.store(n + 1, std::memory_order_relaxed);
            }
        }
        if (sent_.load(std::memory_order_relaxed) < limit_) {
            contract_.schedule(); // again: the next packet falls due
        }
    }

    net::memory_line line_;
    bench::packet_templates const& templates_;
    bench::feed_cursor cursor_;
    std::uint64_t period_ns_;
    std::uint64_t limit_;
    std::uint64_t next_ns_ = 0;
    std::atomic<std::uint64_t> sent_{0};
    work_contract contract_;
};

/// --path memory's raw design: the physical limit of a hand-off between the two CPUs, paced
/// and measured as the others are. The writer (a thread on the first CPU) stamps a number and
/// its stamp into one cache line; the reader (a thread on the second, spinning) records now -
/// stamp through the same probe. Nothing of the receiver: what the machine itself gives (its
/// cache-line transfer, its ticks and steal).
struct handoff_line {
    alignas(64) std::atomic<std::uint64_t> number{
        0};                              // release by the writer, acquire by the reader
    std::atomic<std::uint64_t> stamp{0}; // relaxed: ordered by `number`
};

class raw_handoff_design final : public threaded_design {
public:
    raw_handoff_design(latency_probe& probe, int cpu)
        : probe_(probe)
        , cpu_(cpu) {}
    ~raw_handoff_design() override { stop(); }
    [[nodiscard]] handoff_line& line() noexcept { return line_; }
    std::uint16_t port() const override { return 0; }

private:
    void run() override {
        if (cpu_ >= 0) {
            pin_this_thread(cpu_, "raw hand-off reader");
        }
        std::uint64_t last = 0;
        while (!stopping()) {
            // acquire: pairs with the writer's release store of `number`, after its stamp
            std::uint64_t const n = line_.number.load(std::memory_order_acquire);
            if (n == last) {
                continue;
            }
            md::event e{};
            e.sequence = n;
            e.exchange_ns = line_.stamp.load(std::memory_order_relaxed);
            probe_.on_event(e); // its first instruction reads the clock
            last = n;
            packets_.store(n, std::memory_order_relaxed); // relaxed: a snapshot
        }
    }

    latency_probe& probe_;
    int cpu_;
    handoff_line line_;
};

/// The writer of raw_handoff_design's line: a thread on its CPU, paced (spinning on the clock).
class raw_handoff_source final : public packet_source {
public:
    raw_handoff_source(handoff_line& line, double packets_per_s, std::uint64_t limit, int cpu)
        : line_(line)
        , period_ns_(static_cast<std::uint64_t>(1e9 / packets_per_s))
        , limit_(limit)
        , cpu_(cpu) {}
    ~raw_handoff_source() override { wait(); }
    void start() override {
        thread_ = std::thread([this] { run(); });
    }
    void wait() override {
        if (thread_.joinable()) {
            thread_.join();
        }
    }
    std::uint64_t sent() const override {
        return sent_.load(std::memory_order_relaxed); // relaxed: a snapshot
    }

private:
    void run() {
        if (cpu_ >= 0) {
            pin_this_thread(cpu_, "raw hand-off writer");
        }
        std::uint64_t next = bench::monotonic_ns();
        for (std::uint64_t n = 1; n <= limit_; ++n) {
            while (bench::monotonic_ns() < next) {
            }
            line_.stamp.store(bench::monotonic_ns() & bench::timestamp_mask,
                              std::memory_order_relaxed);
            line_.number.store(n, std::memory_order_release); // pairs with the reader's acquire
            sent_.store(n, std::memory_order_relaxed);        // relaxed: a snapshot
            next += period_ns_;
        }
    }

    handoff_line& line_;
    std::uint64_t period_ns_;
    std::uint64_t limit_;
    int cpu_;
    std::thread thread_;
    std::atomic<std::uint64_t> sent_{0};
};

/// The handler in another process: this program run as `--reader shm:NAME|nats:URL`, its
/// stdin and stdout pipes to this one. It says "ready" once it reads, records until its stdin
/// closes, then prints its percentiles as one JSON line.
class reader_process {
public:
    /// `cpu`: where the reader runs (-1: not pinned).
    reader_process(std::string const& what, int cpu) {
        int in[2];
        int out[2];
        if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0) {
            throw std::system_error(errno, std::generic_category(), "pipe");
        }
        pid_ = ::fork();
        if (pid_ == 0) { // exec at once: nothing of this multi-threaded process is used
            ::dup2(in[0], STDIN_FILENO);
            ::dup2(out[1], STDOUT_FILENO);
            std::string const at = std::to_string(cpu);
            char const* argv[] = {"signet_event_latency", "--reader", what.c_str(),
                                  "--reader-cpu",         at.c_str(), nullptr};
            ::execv("/proc/self/exe", const_cast<char* const*>(argv));
            ::_exit(127);
        }
        ::close(in[0]);
        ::close(out[1]);
        to_ = in[1];
        from_ = ::fdopen(out[0], "r");
        if (line().find("ready") == std::string::npos) {
            throw std::runtime_error("the reader process did not start (" + what + ")");
        }
    }
    /// Closes its stdin and returns what it printed.
    json finish() {
        ::close(to_);
        json const result = json::parse(line());
        ::fclose(from_);
        ::waitpid(pid_, nullptr, 0);
        return result;
    }

private:
    std::string line() {
        char text[4096];
        return std::fgets(text, sizeof text, from_) != nullptr ? text : "";
    }
    pid_t pid_ = -1;
    int to_ = -1;
    std::FILE* from_ = nullptr;
};

bool stdin_closed() {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0; // readable: EOF (nothing is ever written to it)
}

/// --reader: the other process's side.
int run_reader(std::string const& what, int cpu) {
    if (cpu >= 0) {
        pin_this_thread(cpu, "reader");
    }
    latency_probe probe;
    probe.record(true);
    std::uint64_t lost = 0;
    if (what.starts_with("shm:")) {
        std::unique_ptr<receiver::shm::reader> r;
        while (!r) { // the receiver makes the segment first
            try {
                r = std::make_unique<receiver::shm::reader>(what.substr(4));
            } catch (std::exception const&) {
                std::this_thread::sleep_for(std::chrono::milliseconds(1)); // polling its creation
            }
        }
        receiver::shm::cursor c = r->tail(0);
        std::puts("ready");
        std::fflush(stdout);
        md::event e{};
        for (std::uint64_t idle = 0;;) {
            receiver::shm::poll const p = r->next(c, e);
            if (p == receiver::shm::poll::event) {
                probe.on_event(e);
                idle = 0;
            } else if (++idle % (1u << 22) == 0 && stdin_closed()) {
                // A syscall every 2^22 empty polls (tens of ms): one every 4096 put some of the
                // hand-offs (here, one every 11 us) behind it.
                break;
            }
        }
        lost = r->lost();
    } else {
        natsConnection* nc = nullptr;
        natsSubscription* sub = nullptr;
        if (natsConnection_ConnectTo(&nc, what.substr(5).c_str()) != NATS_OK ||
            natsConnection_SubscribeSync(&sub, nc, "signet.bench.>") != NATS_OK ||
            natsConnection_Flush(nc) != NATS_OK) {
            return 1;
        }
        natsSubscription_SetPendingLimits(sub, -1, -1);
        std::puts("ready");
        std::fflush(stdout);
        while (true) {
            natsMsg* msg = nullptr;
            if (natsSubscription_NextMsg(&msg, sub, 20) == NATS_OK) {
                std::span<char const> const data(
                    natsMsg_GetData(msg), static_cast<std::size_t>(natsMsg_GetDataLength(msg)));
                if (auto const ev = receiver::nats_layout::read(data)) {
                    probe.on_event(*ev);
                }
                natsMsg_Destroy(msg);
            } else if (stdin_closed()) {
                break;
            }
        }
        int64_t dropped = 0;
        natsSubscription_GetDropped(sub, &dropped);
        lost = static_cast<std::uint64_t>(dropped);
        natsSubscription_Destroy(sub);
        natsConnection_Destroy(nc);
    }
    json const out{{"events", probe.events()},
                   {"lost", lost},
                   {"send_to_handler_ns", percentiles(probe.from_send())},
                   {"kernel_to_handler_ns", percentiles(probe.from_kernel())}};
    std::puts(out.dump().c_str());
    return 0;
}

struct settings {
    net::backend_kind backend = net::backend_kind::automatic;
    double duration_s = 3;
    double warmup_s = 0.5;
    bool spin = false;
    bool event_spin = false;
    int receiver_cpu = 0;
    int sender_cpu = 1; // --path memory: the consumer's (event worker, reader process)
    bool memory = false;
    std::string nats_url;
};

json run_point(std::string const& name, double messages_per_s, settings const& s,
               bench::packet_templates const& templates) {
    latency_probe probe;
    // --path memory, queued: the latency from the event's making too (the hand-off alone; its
    // ring twice the subscription's queue: the consumer is never that many messages behind).
    std::unique_ptr<bench::creation_stamps> stamps;
    if (s.memory && name == "queued") {
        stamps = std::make_unique<bench::creation_stamps>(2 * queue_capacity);
        probe.made_by(stamps.get());
    }
    std::unique_ptr<design> d;
    std::unique_ptr<reader_process> reader;
    std::string publish;
    if (name == "shm") {
        publish = "shm:signet-bench-" + std::to_string(::getpid());
    } else if (name == "nats") {
        publish = "nats:" + s.nats_url;
    }
    if (name == "raw" && s.memory) {
        d = std::make_unique<raw_handoff_design>(probe, s.sender_cpu);
    } else if (name == "raw") {
        d = std::make_unique<raw_design>(probe, s.spin, s.receiver_cpu);
    } else {
        d = std::make_unique<receiver_design>(
            probe,
            name == "inline" ? receiver::delivery_mode::inline_call
                             : receiver::delivery_mode::queued,
            s.spin, s.receiver_cpu, s.event_spin, s.memory ? s.sender_cpu : -1, s.backend, publish,
            stamps.get());
    }
    if (!publish.empty()) {
        reader = std::make_unique<reader_process>(publish, s.memory ? s.sender_cpu : -1);
    }
    double const packets_per_s = messages_per_s / templates.mean_messages();
    auto const limit = static_cast<std::uint64_t>(packets_per_s * (s.warmup_s + s.duration_s));
    std::unique_ptr<packet_source> source;
    if (s.memory && name == "raw") {
        source = std::make_unique<raw_handoff_source>(dynamic_cast<raw_handoff_design&>(*d).line(),
                                                      packets_per_s, limit, s.receiver_cpu);
    } else if (s.memory) {
        source = std::make_unique<memory_source>(dynamic_cast<receiver_design&>(*d).get(),
                                                 templates, packets_per_s, limit);
    }
    d->start();
    if (!s.memory) {
        source = std::make_unique<network_source>(bench::sender_options{.ports = {d->port()},
                                                                        .templates = &templates,
                                                                        .rate = packets_per_s,
                                                                        .batch = 32,
                                                                        .limit = limit,
                                                                        .cpu = s.sender_cpu});
    }
    packet_source& out = *source;
    out.start();
    std::this_thread::sleep_for(std::chrono::duration<double>(s.warmup_s)); // the warm-up phase
    probe.record(true);
    out.wait();
    // The receiver takes what was sent (bounded: a receiver that lost packets still ends).
    auto const deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (d->packets() < out.sent() && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1)); // polling, not a sync delay
    }
    d->stop();
    json other;
    json published;
    if (reader) {
        if (name == "nats") { // stop() flushed it to the server; the reader drains it before
                              // it looks at its stdin (only after 20 ms without a message)
            auto const n = dynamic_cast<receiver_design const&>(*d).get().nats();
            published = {
                {"published", n->published}, {"failed", n->failed}, {"dropped", n->dropped}};
        }
        other = reader->finish();
        if (name == "shm") {
            ::shm_unlink(("/" + publish.substr(4)).c_str());
        }
    }
    if (!other.is_null()) {
        return {{"design", name},
                {"messages_per_s", messages_per_s},
                {"packets_per_s", packets_per_s},
                {"packets_sent", out.sent()},
                {"packets_received", d->packets()},
                {"events", other["events"]},
                {"reader_lost", other["lost"]},
                {"publisher", published},
                {"send_to_handler_ns", other["send_to_handler_ns"]},
                {"kernel_to_handler_ns", other["kernel_to_handler_ns"]}};
    }
    json point{{"design", name},
               {"messages_per_s", messages_per_s},
               {"packets_per_s", packets_per_s},
               {"packets_sent", out.sent()},
               {"packets_received", d->packets()},
               {"events", probe.events()},
               {"send_to_handler_ns", percentiles(probe.from_send())},
               {"kernel_to_handler_ns", percentiles(probe.from_kernel())}};
    if (stamps) {
        point["made_to_handler_ns"] = percentiles(probe.from_made());
        point["made_unmatched"] = probe.unmatched();
    }
    return point;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App app{"signet wire-to-handler latency: raw recvmmsg loop vs the receiver's inline and "
                 "queued subscriptions"};
    std::vector<double> rates{100'000, 1'000'000};
    std::vector<std::string> designs{"raw", "inline", "queued"};
    std::size_t rounds = 3;
    std::string json_path;
    std::string idle = "block";
    std::string event_idle = "block";
    std::vector<int> cpus{0, 1};
    std::size_t payload = 512;
    std::string path = "loopback";
    std::string backend = "auto";
    settings s;
    app.add_option("--rates", rates, "messages/s, paced (packets/s = rate / messages a packet)")
        ->delimiter(',');
    app.add_option("--designs", designs, "raw, inline, queued, shm, nats")
        ->delimiter(',')
        ->check(CLI::IsMember({"raw", "inline", "queued", "shm", "nats"}));
    app.add_option("--nats", s.nats_url, "the nats design's server (nats://host:port)");
    std::string reader;
    app.add_option("--reader", reader, "internal: the other process of the shm and nats designs");
    int reader_cpu = -1;
    app.add_option("--reader-cpu", reader_cpu, "internal: the reader process's CPU");
    app.add_option("--rounds", rounds, "interleaved rounds (every design at every rate)");
    app.add_option("--duration", s.duration_s, "seconds measured per point");
    app.add_option("--warmup", s.warmup_s, "seconds sent before measuring");
    app.add_option("--idle", idle, "receiving thread: block or spin")
        ->check(CLI::IsMember({"block", "spin"}));
    app.add_option("--event-idle", event_idle, "queued: the event worker, block or spin")
        ->check(CLI::IsMember({"block", "spin"}));
    app.add_option("--cpus", cpus, "receiving CPU, sending CPU (-1: unpinned)")->delimiter(',');
    app.add_option("--payload", payload, "UDP payload bytes a packet is filled to (64 or 512)")
        ->check(CLI::IsMember({64, 512}));
    app.add_option("--path", path,
                   "loopback, veth (a veth pair of two namespaces; root), or memory (no network: "
                   "the hand-off alone; raw is then one cache line between the two CPUs)")
        ->check(CLI::IsMember({"loopback", "veth", "memory"}));
    app.add_option("--backend", backend, "the receiver's backend (af_xdp: --path veth)")
        ->check(CLI::IsMember({"auto", "io_uring", "epoll", "af_xdp"}));
    app.add_option("--json", json_path, "write the points here");
    CLI11_PARSE(app, argc, argv);
    if (!reader.empty()) {
        return run_reader(reader, reader_cpu);
    }
#if !defined(NDEBUG) || !defined(__OPTIMIZE__)
    std::printf("Debug build: numbers are not representative\n");
#endif
    if (std::find(designs.begin(), designs.end(), "nats") != designs.end() && s.nats_url.empty()) {
        std::fprintf(stderr, "the nats design needs --nats URL (a running nats-server)\n");
        return 2;
    }
    s.spin = idle == "spin";
    s.event_spin = event_idle == "spin";
    s.receiver_cpu = cpus.empty() ? -1 : cpus[0];
    s.sender_cpu = cpus.size() < 2 ? -1 : cpus[1];
    spdlog::set_level(spdlog::level::warn);
    s.backend = net::parse_backend_kind(backend);
    s.memory = path == "memory";
    if (s.memory) {
        s.backend = net::backend_kind::memory;
    }
    if (s.backend == net::backend_kind::af_xdp && path != "veth") {
        std::fprintf(stderr, "--backend af_xdp needs --path veth\n");
        return 2;
    }
    // Before any thread starts: the namespaces' setns applies to this thread only.
    struct path_guard {
        ~path_guard() { bench::remove_veth_path(); }
    } const remove_path_at_exit;
    if (path == "veth") {
        try {
            bench::use_veth_path();
        } catch (std::exception const& e) {
            std::fprintf(stderr, "signet_event_latency: %s\n", e.what());
            return 77; // no veth here: skipped
        }
    }

    bench::packet_templates const templates(payload, 4096);
    json points = json::array();
    std::printf("%-6s %-8s %10s %12s %10s %10s %10s %10s %10s\n", "round", "design", "msgs/s",
                "recv/sent", "send p50", "p99", "p99.9", "kern p50", "p99");
    for (std::size_t round = 1; round <= rounds; ++round) {
        for (double const rate : rates) {
            for (std::string const& name : designs) {
                json p = run_point(name, rate, s, templates);
                p["round"] = round;
                p["idle"] = idle;
                p["event_idle"] = event_idle;
                p["payload"] = payload;
                p["path"] = path;
                p["backend"] = backend;
                p["messages_per_packet"] = templates.mean_messages();
                auto const& send = p["send_to_handler_ns"];
                auto const& kernel = p["kernel_to_handler_ns"];
                auto const n = [](json const& v) {
                    return static_cast<unsigned long long>(v.get<std::uint64_t>());
                };
                std::printf("%-6zu %-8s %10.0f %6llu/%-6llu %10llu %10llu %10llu %10llu %10llu\n",
                            round, name.c_str(), rate, n(p["packets_received"]),
                            n(p["packets_sent"]), n(send["p50"]), n(send["p99"]), n(send["p999"]),
                            n(kernel["p50"]), n(kernel["p99"]));
                if (p.contains("made_to_handler_ns")) {
                    auto const& made = p["made_to_handler_ns"];
                    std::printf("%-6s made -> handler: p50 %llu, p99 %llu, p99.9 %llu (%llu "
                                "unmatched)\n",
                                "", n(made["p50"]), n(made["p99"]), n(made["p999"]),
                                n(p["made_unmatched"]));
                }
                std::fflush(stdout);
                points.push_back(std::move(p));
            }
        }
    }
    return json_path.empty() || bench::write_points_file(json_path, points) ? 0 : 1;
}
