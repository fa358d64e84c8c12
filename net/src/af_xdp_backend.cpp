// af_xdp backend: kernel bypass for the receive lines. signet's own XDP program
// (net/bpf/xdp_redirect.bpf.c, built at build time and embedded) runs on each interface the
// feeds name and redirects the frames addressed to a line (destination address and UDP port)
// into the AF_XDP socket of the queue the frame arrived on; everything else (ARP, other
// traffic, IP fragments) goes on to the kernel's stack. Each line keeps its ordinary UDP socket:
// it owns the port, joins the multicast group (so IGMP still works) and catches what the program
// passes (a queue without an AF_XDP socket).
//
// Sockets. One AF_XDP socket per (interface, RX queue), a port, for the lines that ask for that
// queue (`queues`; default every queue). The program's map is per interface, so a port may
// receive a frame of any line on its interface: the driver sorts each frame to its line by
// destination address and port among all of them (the last hit first; as in the kernel, a
// line with the address before one bound to any address).
//
// Memory. One UMEM for the backend: every frame of every line, page-aligned, frames of 2048 or
// 4096 bytes. It is the lines' packet pool: a packet's data points into its frame (after the
// Ethernet, VLAN, IPv4 and UDP headers) and packet::buffer is the frame's index, returned by the
// parser through the line's pool.returns() queue as on the other backends (the line's
// packet_pool allocates no buffers of its own). Each port has its own fill and RX rings over the
// shared UMEM (XDP_SHARED_UMEM). The frames: sum over lines of their pool's count
// (queue_capacity + 32) plus fill_size per port. Two budgets keep that enough: a port's fill
// and RX rings together hold at most fill_size frames (`held`), and a line's queue and returns
// queue at most its pool's count (`out`; so the parser's push into the returns queue, which
// holds that many, never fails). The free stack therefore always has a frame for each fill
// slot and each line's room, and a stalled port or line cannot starve the others.
//
// Threading. One side, the driver, does everything per packet: the poller thread in thread
// mode, the reactor contract in contract mode (never concurrently with itself). Per step it
// takes the returned frames (spsc pops), refills the fill rings, reaps each RX ring in batches
// of 32 (one realtime stamp per batch), checks and strips the headers and pushes packets into
// the lines' queues (deliver()). No syscall per packet; per step at most one wake-up syscall
// per port whose fill ring asks for it (need_wakeup; copy mode never does). Idle: one epoll set
// holds the AF_XDP sockets (readable when an RX ring is not empty), the wake-up eventfd and the
// runtime's readiness set.
//
// Why nothing is lost or handled twice. The driver is one thread at a time (the poller thread,
// or the reactor contract, which never runs concurrently with itself), so it is the only
// consumer of every RX ring and the only producer of every fill ring and line queue; the kernel
// is the other side of each ring (libxdp's acquire/release ring accessors). Frames come back
// through each line's spsc returns queue (producer: the feed's parser contract). A paused line
// uses feed_state.hpp's pause protocol, whose RMW pair makes either the driver see the room or
// the parser see the request and call resume(), which schedules the reactor and writes the
// eventfd. The one flag two threads write is a line's `kernel` readiness_flag (a worker in
// wait() may see its UDP socket's edge while the reactor runs on another): set with release by
// whoever sees the edge, taken with an acquire exchange by the driver before it reads, so an
// edge after the exchange marks it again.
//
// Backpressure: a frame whose line has no room stays in the RX ring, and so do the frames
// behind it (lines that share a queue share its ring: head-of-line blocking; give such lines
// on_full = drop or queues of their own); the kernel drops beyond the ring, counted by
// XDP_STATISTICS (kernel_drops). The line asks the parser side to resume it (the pause protocol
// of feed_state.hpp); resume() wakes the driver. Meanwhile the port is blocked: out of the epoll
// set, since its non-empty RX ring would keep an idle driver from sleeping. Under
// full_policy::drop the packet is counted and its frame goes straight back to the free stack.
// A line's UDP socket is read in batches up to EAGAIN; after a batch the driver schedules
// itself (a blocking reactor does not re-run by itself, and the edge-triggered socket gives no
// new edge for what is already queued).
//
// Timestamps: no kernel receive stamp exists on this path. The driver stamps each batch as it
// takes it from the RX ring (realtime_clock, as user_rx_ns on every backend) and, unless the
// line's timestamps are off, puts that stamp in kernel_rx_ns too, so latency still has a
// start: the receive stamp is a user-space one here, and timestamp_note() says so. XDP receive
// metadata (bpf_xdp_metadata_rx_timestamp) is not read: few drivers offer it, and veth gives
// none for locally sent frames.
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <signet/core/cpu_affinity.hpp>
#include <signet/core/realtime_clock.hpp>
#include <signet/net/detail/delivery.hpp>
#include <signet/net/detail/feed_state.hpp>
#include <signet/net/detail/readiness_set.hpp>
#include <signet/net/detail/timer_queue.hpp>
#include <signet/net/detail/xdp_frame.hpp>
#include <signet/net/log.hpp>
#include <signet/net/unique_fd.hpp>

#include "backends.hpp"
#include "xdp_redirect.h"
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <net/if.h>
#include <xdp/xsk.h>

extern unsigned char const signet_xdp_redirect_object[];
extern unsigned long const signet_xdp_redirect_object_size;

namespace signet::net::detail {

namespace {

// XDP_PACKET_HEADROOM: the kernel writes a frame this far into its UMEM chunk.
constexpr std::size_t kernel_headroom = 256;
// Steps between two non-blocking looks at the epoll set (the runtime's readiness set and the
// lines' UDP sockets) while the driver is busy: when idle it sleeps there anyway.
constexpr std::uint64_t events_every = 64;
// Ring sizes: at least min_ring, so that a burst finds room as it would in a socket's receive
// buffer even when the pools are small; at most the max_ values.
constexpr std::size_t min_ring = 2048;
constexpr std::size_t max_fill_ring = std::size_t{1} << 18;
constexpr std::size_t max_rx_ring = std::size_t{1} << 18;
// The kernel frees a closed AF_XDP socket's hold on its queue asynchronously: a bind right
// after another receiver (or test) closed its socket may find the queue busy for a moment.
constexpr auto busy_queue_patience = std::chrono::seconds(2);

// libbpf's own messages go to our log at debug level: every failure that matters comes back as
// an error code that the backend turns into its one-line reason.
int libbpf_to_log(libbpf_print_level level, char const* format, va_list arguments) {
    if (level == LIBBPF_DEBUG) {
        return 0;
    }
    std::array<char, 512> text{};
    int const n = std::vsnprintf(text.data(), text.size(), format, arguments);
    SPDLOG_LOGGER_DEBUG(logger(), "af_xdp: libbpf: {}",
                        std::string_view(text.data()).substr(0, text.size()));
    return n;
}

[[noreturn]] void fail(int error, std::string const& what) {
    throw std::system_error(error, std::generic_category(), "af_xdp backend: " + what);
}

std::string privileges_hint(int error) {
    return error == EPERM || error == EACCES
               ? " (needs root: CAP_NET_ADMIN, CAP_BPF and CAP_NET_RAW)"
               : "";
}

/// RX queues of `interface` (the directories /sys/class/net/IF/queues/rx-N), at least 1.
unsigned rx_queue_count(std::string const& interface) {
    unsigned count = 0;
    std::error_code error;
    while (count < SIGNET_XDP_MAX_QUEUES &&
           std::filesystem::is_directory(
               "/sys/class/net/" + interface + "/queues/rx-" + std::to_string(count), error)) {
        ++count;
    }
    return std::max(count, 1U);
}

struct mmap_deleter {
    std::size_t bytes = 0;
    void operator()(std::byte* p) const noexcept { ::munmap(p, bytes); }
};

class af_xdp_backend final : public receive_backend {
public:
    explicit af_xdp_backend(blocking_work_contract_group&)
        : epoll_fd_(::epoll_create1(EPOLL_CLOEXEC))
        , wake_("af_xdp backend") {
        if (!epoll_fd_.is_open()) {
            fail(errno, "epoll_create1");
        }
        watch_fd(wake_.get(), &wake_);
        (void)libbpf_set_print(libbpf_to_log);
    }

    ~af_xdp_backend() override {
        stop();
        teardown();
    }

    backend_kind kind() const noexcept override { return backend_kind::af_xdp; }

    void attach(line_state& line) override {
        auto xl = std::make_unique<xdp_line>();
        xl->line = &line;
        // A line without an interface (a re-request answer line on an ephemeral port) is read
        // through its UDP socket only.
        xl->kernel_only = line.options.interface.empty();
        line.backend = this;
        line.resume = [](line_state& l) {
            static_cast<af_xdp_backend*>(l.backend)->resume();
        };
        // The UDP socket: what the program passes on to the kernel for this line (datagrams
        // sent before start(), IP fragments, a queue without an AF_XDP socket) is read too.
        watch_fd(line.socket.native_handle(), &line.socket, EPOLLIN | EPOLLET);
        lines_.push_back(std::move(xl));
    }

    void watch(readiness_set& set) override {
        readiness_ = &set;
        watch_fd(set.fd(), &set);
    }

    void start(int cpu, timer_queue& timers) override {
        timers_ = &timers;
        setup_or_undo(); // on the controlling thread: errors reach start()'s caller
        // The thread steps only once pinned: a failed pin leaves no packet behind in a frame of
        // the UMEM that undo_setup() unmaps.
        thread_ = std::thread([this] {
            // acquire: pairs with the release stores below.
            launch_.wait(launch::pending, std::memory_order_acquire);
            if (launch_.load(std::memory_order_acquire) == launch::run) {
                run_thread();
            }
        });
        std::exception_ptr failed;
        try {
            signet::pin_thread(thread_, cpu, "af_xdp poller");
        } catch (...) {
            failed = std::current_exception();
        }
        // release: pairs with the thread's acquire wait.
        launch_.store(failed ? launch::abandon : launch::run, std::memory_order_release);
        launch_.notify_one();
        if (failed) {
            thread_.join();
            undo_setup();
            std::rethrow_exception(failed);
        }
    }

    bool supports_reactor(std::size_t /*workers*/) const noexcept override { return true; }

    void start_reactor(work_contract& reactor) override {
        reactor_ = &reactor;
        for (auto& xl : lines_) {
            xl->kernel.contract = &reactor;
        }
        setup_or_undo();
    }

    bool poll() override {
        if (finished_) {
            return false; // the final reap is done: nothing more is delivered
        }
        // acquire: pairs with the release store in stop().
        if (stop_requested_.load(std::memory_order_acquire) && !finished_) {
            if (stop_deadline_ == std::chrono::steady_clock::time_point{}) {
                stop_deadline_ = std::chrono::steady_clock::now() + stop_deadline;
            }
            bool const moved = step();
            finished_ =
                !moved && (rings_empty() || std::chrono::steady_clock::now() >= stop_deadline_);
            return moved;
        }
        return step();
    }

    bool finished() const noexcept override { return finished_; }

    bool wait(std::chrono::nanoseconds timeout) override {
        (void)sleep(timeout);
        return true; // the reactor reaps what woke us
    }

    void wake() noexcept override { wake_.signal(); }

    void stop() override {
        // release: pairs with the acquire loads in poll() and run_thread().
        stop_requested_.store(true, std::memory_order_release);
        if (thread_.joinable()) {
            wake();
            thread_.join();
        }
    }

    std::string const& timestamp_note(line_state const& line) const noexcept override {
        static std::string const note =
            "af_xdp: stamped in user space as the frame leaves the RX ring (no kernel stamp on "
            "this path)";
        return line.options.timestamps == timestamping::off ? line.socket.timestamp_note() : note;
    }

    bool input_waiting(line_state const& line) const noexcept override {
        if (receive_backend::input_waiting(line)) {
            return true; // its UDP socket
        }
        xdp_line const* xl = find_line(line);
        if (xl == nullptr) {
            return false;
        }
        for (auto const& p : ports_) {
            if (std::find(p->routes.begin(), p->routes.end(), xl) == p->routes.end()) {
                continue;
            }
            // Frames the kernel produced that the driver has not consumed (for this line or
            // another of the port: conservative). acquire: pairs with the kernel's release of
            // the producer; relaxed: the consumer is the driver's own (atomic stores), only
            // compared here.
            if (__atomic_load_n(p->rx.producer, __ATOMIC_ACQUIRE) !=
                __atomic_load_n(p->rx.consumer, __ATOMIC_RELAXED)) {
                return true;
            }
        }
        return false;
    }

    std::uint64_t kernel_drops(line_state const& line) const noexcept override {
        std::uint64_t drops = line.socket.kernel_drops();
        xdp_line const* xl = find_line(line);
        if (xl == nullptr) {
            return drops;
        }
        // The ports' drops are shared by their lines: each line of a port reports them.
        for (auto const& p : ports_) {
            if (std::find(p->lines.begin(), p->lines.end(), xl) == p->lines.end()) {
                continue;
            }
            xdp_statistics stats{};
            socklen_t length = sizeof(stats);
            if (::getsockopt(p->fd, SOL_XDP, XDP_STATISTICS, &stats, &length) == 0) {
                drops += stats.rx_dropped + stats.rx_ring_full + stats.rx_invalid_descs;
            }
        }
        return drops;
    }

private:
    struct xdp_line {
        line_state* line = nullptr;
        frame_destination match{}; // address 0: any
        bool shadowed = false;     // any-address line beside a line with an address, same port
        bool kernel_only = false;  // no interface: its UDP socket is all there is
        bool delivered = false;    // this step: the parser needs scheduling
        // Frames in the line's queue or its returns queue (driver only): at most pool.count(),
        // which the returns queue holds, so the parser's push there never fails.
        std::size_t out = 0;
        // The UDP socket had an edge not read to EAGAIN yet (readiness_set.hpp's protocol). Set
        // by whoever sees the edge in sleep() (the driver, or in reactor mode a worker in
        // wait()); taken by the driver before it reads; again() when it stops before EAGAIN,
        // which in reactor mode schedules the reactor (a blocking reactor does not re-run by
        // itself). Set to begin with: datagrams sent before start() wait there.
        readiness_flag kernel{nullptr, true};
        std::uint64_t through_kernel = 0; // datagrams the UDP socket received (logged once)
    };

    struct port {
        std::string interface;
        unsigned queue = 0;
        xsk_socket* xsk = nullptr;
        int fd = -1;
        xsk_ring_prod fill{};
        xsk_ring_cons completion{};
        xsk_ring_cons rx{};
        std::vector<xdp_line*> lines;  // the lines that asked for this queue
        std::vector<xdp_line*> routes; // every line on the interface: the program sends any of
                                       // them to this queue's socket; frames sorted by these
        std::size_t last = 0;          // the routes entry hit last
        std::uint32_t held = 0;        // frames on the fill and RX rings: at most fill_size
        bool blocked = false;          // a frame waits for room: not watched by epoll
        std::uint64_t strays = 0;      // frames for none of the lines (logged once)
    };

    struct interface_state {
        std::string name;
        int index = 0;
        unsigned queues = 1;
        xdp_mode mode = xdp_mode::automatic;
        std::uint32_t attach_flags = 0; // XDP_FLAGS_* in effect
        bpf_object* object = nullptr;
        int program_fd = -1;
        int lines_map = -1;
        int sockets_map = -1;
        bool attached = false;
        std::uint32_t lines = 0; // entries in lines_map
        unique_fd lock;          // lock_interface()
    };

    void watch_fd(int fd, void* tag, std::uint32_t events = EPOLLIN) {
        epoll_event event{};
        event.events = events;
        event.data.ptr = tag;
        if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
            fail(errno, "epoll_ctl");
        }
    }

    xdp_line const* find_line(line_state const& line) const noexcept {
        for (auto const& xl : lines_) {
            if (xl->line == &line) {
                return xl.get();
            }
        }
        return nullptr;
    }

    // ---- setup ---------------------------------------------------------------------------------

    // A start that fails part-way leaves nothing behind: no program on an interface (which
    // would keep redirecting the feeds' frames to sockets nobody reads), no lock, no socket.
    void setup_or_undo() {
        try {
            setup();
        } catch (...) {
            undo_setup();
            throw;
        }
    }

    void undo_setup() noexcept {
        teardown();
        ports_.clear();
        interfaces_.clear(); // releases the interfaces' locks
        free_.clear();
        area_.reset();
    }

    void setup() {
        if (lines_.empty()) {
            return;
        }
        std::size_t const buffer_size = lines_.front()->line->pool.buffer_size();
        for (auto const& xl : lines_) {
            if (xl->line->pool.buffer_size() != buffer_size) {
                throw std::invalid_argument(
                    "af_xdp backend: every feed needs the same buffer_size (one UMEM)");
            }
        }
        buffer_size_ = buffer_size;
        frame_size_ = buffer_size + kernel_headroom + frame_header_room <= 2048 ? 2048 : 4096;
        if (buffer_size + kernel_headroom + frame_header_room > frame_size_) {
            throw std::invalid_argument("af_xdp backend: buffer_size " +
                                        std::to_string(buffer_size) + " is too large (at most " +
                                        std::to_string(4096 - kernel_headroom - frame_header_room) +
                                        " bytes of payload fit a 4096-byte frame)");
        }
        // Ports: (interface, queue) pairs, in the order lines name them.
        std::vector<std::vector<unsigned>> line_queues(lines_.size());
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            if (lines_[i]->kernel_only) {
                continue;
            }
            line_state const& line = *lines_[i]->line;
            interface_state& itf = interface_for(line);
            auto const& wanted = line.feed.af_xdp.queues;
            if (wanted.empty()) {
                for (unsigned q = 0; q < itf.queues; ++q) {
                    line_queues[i].push_back(q);
                }
            }
            for (unsigned q : wanted) {
                if (q >= itf.queues) {
                    throw std::invalid_argument(
                        "af_xdp backend: feed '" + line.feed.name + "': interface " + itf.name +
                        " has " + std::to_string(itf.queues) + " RX queue(s); queue " +
                        std::to_string(q) + " does not exist");
                }
                line_queues[i].push_back(q);
            }
            for (unsigned q : line_queues[i]) {
                port& p = port_for(itf.name, q);
                if (!p.lines.empty()) {
                    af_xdp_options const& first = p.lines.front()->line->feed.af_xdp;
                    if (first.bind != line.feed.af_xdp.bind ||
                        first.busy_poll_us != line.feed.af_xdp.busy_poll_us ||
                        first.busy_poll_budget != line.feed.af_xdp.busy_poll_budget) {
                        throw std::invalid_argument(
                            "af_xdp backend: feeds '" + p.lines.front()->line->feed.name +
                            "' and '" + line.feed.name + "' share " + itf.name + " queue " +
                            std::to_string(q) +
                            " (one AF_XDP socket) but ask for different bind or busy-poll keys");
                    }
                }
                p.lines.push_back(lines_[i].get());
            }
        }
        // Ring sizes from the pools (rings are powers of two): a port's RX ring holds its lines'
        // pools, its fill ring the largest pool (both within min_ring and the max_ values).
        std::size_t fill_size = min_ring;
        for (auto const& xl : lines_) {
            fill_size = std::max(fill_size, std::bit_ceil(xl->line->pool.count()));
        }
        fill_size = std::min(fill_size, max_fill_ring);
        std::size_t frames = fill_size * ports_.size();
        for (auto const& xl : lines_) {
            frames += xl->line->pool.count();
        }
        if (frames > std::numeric_limits<std::uint32_t>::max() / frame_size_) {
            throw std::invalid_argument("af_xdp backend: too many frames for one UMEM");
        }
        if (ports_.empty()) {
            throw std::invalid_argument("af_xdp backend: no line names an interface "
                                        "(udp_socket_options::interface)");
        }
        fill_size_ = fill_size;
        create_umem(frames, fill_size);
        for (auto& itf : interfaces_) {
            load_program(*itf);
        }
        for (auto& xl : lines_) {
            if (!xl->kernel_only) {
                register_line(*xl);
            }
        }
        for (auto& p : ports_) {
            for (auto const& xl : lines_) {
                if (!xl->kernel_only && xl->line->options.interface == p->interface) {
                    p->routes.push_back(xl.get());
                }
            }
            for (xdp_line* xl : p->routes) {
                for (xdp_line const* other : p->routes) {
                    xl->shadowed = xl->shadowed || (other->match.port == xl->match.port &&
                                                    other->match.address != 0);
                }
            }
        }
        for (auto& p : ports_) {
            open_port(*p);
            refill(*p);
        }
        log_startup(line_queues);
    }

    port& port_for(std::string const& interface, unsigned queue) {
        for (auto& p : ports_) {
            if (p->interface == interface && p->queue == queue) {
                return *p;
            }
        }
        ports_.push_back(std::make_unique<port>());
        ports_.back()->interface = interface;
        ports_.back()->queue = queue;
        return *ports_.back();
    }

    interface_state& interface_for(line_state const& line) {
        std::string const& name = line.options.interface;
        for (auto& itf : interfaces_) {
            if (itf->name == name) {
                if (itf->mode != line.feed.af_xdp.mode) {
                    throw std::invalid_argument(
                        "af_xdp backend: feeds on interface " + name +
                        " ask for different xdp_mode values (one XDP program per interface)");
                }
                return *itf;
            }
        }
        auto itf = std::make_unique<interface_state>();
        itf->name = name;
        itf->index = static_cast<int>(::if_nametoindex(name.c_str()));
        if (itf->index == 0) {
            fail(ENODEV, "interface '" + name + "' (feed '" + line.feed.name + "') does not exist");
        }
        itf->queues = rx_queue_count(name);
        itf->mode = line.feed.af_xdp.mode;
        interfaces_.push_back(std::move(itf));
        return *interfaces_.back();
    }

    void create_umem(std::size_t frames, std::size_t fill_size) {
        std::size_t const bytes = frames * frame_size_;
        void* area = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        if (area == MAP_FAILED) {
            fail(errno, "mmap of the UMEM (" + std::to_string(bytes) + " bytes)");
        }
        area_ = std::unique_ptr<std::byte, mmap_deleter>(static_cast<std::byte*>(area),
                                                         mmap_deleter{bytes});
        xsk_umem_config config{};
        config.fill_size = static_cast<std::uint32_t>(fill_size);
        config.comp_size = 64; // receive only: nothing is ever transmitted
        config.frame_size = static_cast<std::uint32_t>(frame_size_);
        config.frame_headroom = 0;
        config.flags = 0;
        port& first = *ports_.front();
        if (int const rc =
                xsk_umem__create(&umem_, area, bytes, &first.fill, &first.completion, &config);
            rc != 0) {
            fail(-rc, "xsk_umem__create" + privileges_hint(-rc));
        }
        free_.reserve(frames);
        for (std::size_t f = frames; f-- > 0;) {
            free_.push_back(static_cast<std::uint32_t>(f));
        }
    }

    void load_program(interface_state& itf) {
        LIBBPF_OPTS(bpf_object_open_opts, open_options, .object_name = "signet_xdp");
        itf.object = bpf_object__open_mem(signet_xdp_redirect_object,
                                          signet_xdp_redirect_object_size, &open_options);
        if (itf.object == nullptr) {
            fail(errno, "opening the embedded XDP program");
        }
        if (int const rc = bpf_object__load(itf.object); rc != 0) {
            fail(-rc,
                 "loading the XDP program for " + itf.name + " was refused" + privileges_hint(-rc));
        }
        bpf_program* program = bpf_object__find_program_by_name(itf.object, "signet_redirect");
        itf.program_fd = program != nullptr ? bpf_program__fd(program) : -1;
        itf.lines_map = bpf_object__find_map_fd_by_name(itf.object, "signet_lines");
        itf.sockets_map = bpf_object__find_map_fd_by_name(itf.object, "signet_sockets");
        if (itf.program_fd < 0 || itf.lines_map < 0 || itf.sockets_map < 0) {
            fail(ENOENT, "the embedded XDP program lacks its program or maps");
        }
        std::uint32_t const base = XDP_FLAGS_UPDATE_IF_NOEXIST;
        std::vector<std::uint32_t> tries;
        switch (itf.mode) {
        case xdp_mode::native:
            tries = {base | XDP_FLAGS_DRV_MODE};
            break;
        case xdp_mode::generic:
            tries = {base | XDP_FLAGS_SKB_MODE};
            break;
        case xdp_mode::automatic:
            tries = {base | XDP_FLAGS_DRV_MODE, base | XDP_FLAGS_SKB_MODE};
            break;
        }
        lock_interface(itf);
        int rc = 0;
        for (bool retried = false;;) {
            for (std::uint32_t flags : tries) {
                rc = bpf_xdp_attach(itf.index, itf.program_fd, flags, nullptr);
                if (rc == 0) {
                    itf.attach_flags = flags & ~base;
                    itf.attached = true;
                    return;
                }
                if (rc == -EBUSY || rc == -EEXIST) {
                    break;
                }
            }
            if ((rc != -EBUSY && rc != -EEXIST) || retried || !remove_stale_program(itf)) {
                break;
            }
            retried = true;
        }
        if (rc == -EBUSY || rc == -EEXIST) {
            fail(-rc, "interface " + itf.name +
                          " already has an XDP program (another receiver, or xdp-loader): "
                          "remove it first (ip link set dev " +
                          itf.name + " xdp off)");
        }
        fail(-rc, "attaching the XDP program to " + itf.name + " in " +
                      std::string(to_string(itf.mode)) + " mode was refused" +
                      privileges_hint(-rc) +
                      (itf.mode == xdp_mode::native ? " (the driver may lack native XDP: try "
                                                      "xdp_mode = \"generic\")"
                                                    : ""));
    }

    // One af_xdp receiver per interface: an flock on a file named after the network namespace
    // and the interface, held while the program is attached. The kernel drops it with the
    // process, so a receiver that died without detaching leaves a lock anyone may take.
    void lock_interface(interface_state& itf) {
        struct stat ns {};
        if (::stat("/proc/thread-self/ns/net", &ns) != 0) {
            return;
        }
        std::string const path = "/run/signet-af_xdp." + std::to_string(ns.st_ino) + "." +
                                 std::to_string(itf.index) + ".lock";
        itf.lock = unique_fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
        if (!itf.lock.is_open()) {
            return; // no /run to lock in: the attach alone decides
        }
        if (::flock(itf.lock.get(), LOCK_EX | LOCK_NB) != 0) {
            fail(EBUSY, "interface " + itf.name +
                            " is served by another af_xdp receiver (one per interface)");
        }
    }

    // Holding the interface's lock: a signet program still attached is a dead receiver's (it
    // did not stop cleanly). Detaches it; true if there was one.
    bool remove_stale_program(interface_state const& itf) {
        if (!itf.lock.is_open()) {
            return false;
        }
        LIBBPF_OPTS(bpf_xdp_query_opts, query);
        if (bpf_xdp_query(itf.index, 0, &query) != 0 || query.prog_id == 0) {
            return false;
        }
        unique_fd const old(bpf_prog_get_fd_by_id(query.prog_id));
        bpf_prog_info info{};
        std::uint32_t length = sizeof(info);
        if (!old.is_open() || bpf_obj_get_info_by_fd(old.get(), &info, &length) != 0 ||
            std::string_view(info.name) != "signet_redirect") {
            return false;
        }
        std::uint32_t const mode = query.attach_mode == XDP_ATTACHED_SKB   ? XDP_FLAGS_SKB_MODE
                                   : query.attach_mode == XDP_ATTACHED_DRV ? XDP_FLAGS_DRV_MODE
                                                                           : 0U;
        LIBBPF_OPTS(bpf_xdp_attach_opts, detach, .old_prog_fd = old.get());
        if (bpf_xdp_detach(itf.index, mode, &detach) != 0) {
            return false;
        }
        SPDLOG_LOGGER_WARN(logger(),
                           "af_xdp: interface {}: removed the XDP program of a receiver that did "
                           "not stop cleanly",
                           itf.name);
        return true;
    }

    interface_state& interface_named(std::string const& name) {
        for (auto& itf : interfaces_) {
            if (itf->name == name) {
                return *itf;
            }
        }
        throw std::logic_error("af_xdp backend: unknown interface " + name);
    }

    // The line's destination into the program's map (a frame for it is redirected) and into
    // the driver's sorting.
    void register_line(xdp_line& xl) {
        line_state& line = *xl.line;
        interface_state& itf = interface_named(line.options.interface);
        if (itf.lines >= SIGNET_XDP_MAX_LINES) {
            fail(ENOSPC, "more than " + std::to_string(SIGNET_XDP_MAX_LINES) +
                             " lines on interface " + itf.name);
        }
        ++itf.lines;
        udp_endpoint const local = line.socket.local_endpoint();
        if (local.is_v6()) {
            throw std::invalid_argument("af_xdp backend: feed '" + line.feed.name +
                                        "': IPv4 only (the XDP program matches IPv4/UDP)");
        }
        udp_endpoint const& match = line.options.group ? *line.options.group : local;
        signet_xdp_destination key{};
        if (!match.is_any()) {
            key.address = reinterpret_cast<sockaddr_in const*>(match.data())->sin_addr.s_addr;
        }
        key.port = htons(local.port());
        xl.match = {key.address, key.port};
        std::uint32_t const one = 1;
        if (int const rc = bpf_map_update_elem(itf.lines_map, &key, &one, BPF_NOEXIST); rc != 0) {
            fail(-rc == EEXIST ? EADDRINUSE : -rc, "feed '" + line.feed.name +
                                                       "': another line on " + itf.name +
                                                       " already takes " + match.to_string());
        }
    }

    // The port's AF_XDP socket: its own fill and RX rings over the shared UMEM, registered in
    // the program's map for its queue.
    void open_port(port& p) {
        interface_state& itf = interface_named(p.interface);
        af_xdp_options const& options = p.lines.front()->line->feed.af_xdp;
        std::size_t frames = 0;
        for (auto const* xl : p.lines) {
            frames += xl->line->pool.count();
        }
        xsk_socket_config config{};
        // At least the fill ring: every frame the kernel holds for this port fits the RX ring.
        config.rx_size = static_cast<std::uint32_t>(
            std::max(std::clamp(std::bit_ceil(frames), min_ring, max_rx_ring), fill_size_));
        config.tx_size = 0;
        config.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
        config.xdp_flags = itf.attach_flags;
        config.bind_flags = XDP_USE_NEED_WAKEUP;
        if (options.bind == xdp_bind::copy) {
            config.bind_flags |= XDP_COPY;
        } else if (options.bind == xdp_bind::zero_copy) {
            config.bind_flags |= XDP_ZEROCOPY;
        }
        auto const patience = std::chrono::steady_clock::now() + busy_queue_patience;
        int rc = 0;
        // libxdp keeps the addresses of the rings' structs (port is never moved).
        while ((rc = xsk_socket__create_shared(&p.xsk, itf.name.c_str(), p.queue, umem_, &p.rx,
                                               nullptr, &p.fill, &p.completion, &config)) ==
                   -EBUSY &&
               std::chrono::steady_clock::now() < patience) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (rc != 0) {
            p.xsk = nullptr;
            std::string const why =
                -rc == EOPNOTSUPP && options.bind == xdp_bind::zero_copy
                    ? ": the driver has no AF_XDP zero-copy (use bind = \"copy\" or \"auto\")"
                : -rc == EBUSY ? ": another AF_XDP socket holds that queue"
                               : privileges_hint(-rc);
            fail(-rc, "AF_XDP socket on " + itf.name + " queue " + std::to_string(p.queue) +
                          " (feed '" + p.lines.front()->line->feed.name + "')" + why);
        }
        p.fd = xsk_socket__fd(p.xsk);
        set_busy_poll(p.fd, options);
        std::uint32_t const key = p.queue;
        if (int const urc = bpf_map_update_elem(itf.sockets_map, &key, &p.fd, BPF_ANY); urc != 0) {
            fail(-urc, "registering the AF_XDP socket in the XDP program's map");
        }
        watch_fd(p.fd, &p);
        xdp_options bound{};
        socklen_t length = sizeof(bound);
        if (::getsockopt(p.fd, SOL_XDP, XDP_OPTIONS, &bound, &length) == 0) {
            bound_mode_ = (bound.flags & XDP_OPTIONS_ZEROCOPY) != 0 ? "zero_copy" : "copy";
        }
    }

    static void set_busy_poll(int fd, af_xdp_options const& options) {
        if (options.busy_poll_us == 0) {
            return;
        }
        int const prefer = 1;
        int const us = static_cast<int>(options.busy_poll_us);
        int const budget = static_cast<int>(options.busy_poll_budget);
        bool ok = ::setsockopt(fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &prefer, sizeof(prefer)) == 0 &&
                  ::setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) == 0;
        if (ok && budget > 0) {
            ok = ::setsockopt(fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget)) == 0;
        }
        if (!ok) {
            fail(errno, "busy-poll options (SO_PREFER_BUSY_POLL, SO_BUSY_POLL, "
                        "SO_BUSY_POLL_BUDGET)" +
                            privileges_hint(errno));
        }
    }

    void log_startup(std::vector<std::vector<unsigned>> const& line_queues) {
        for (auto const& itf : interfaces_) {
            SPDLOG_LOGGER_INFO(
                logger(), "af_xdp: interface {}: XDP program in {} mode ({} asked), {} RX queue(s)",
                itf->name, (itf->attach_flags & XDP_FLAGS_DRV_MODE) != 0 ? "native" : "generic",
                to_string(itf->mode), itf->queues);
        }
        for (std::size_t i = 0; i < lines_.size(); ++i) {
            line_state const& line = *lines_[i]->line;
            if (lines_[i]->kernel_only) {
                SPDLOG_LOGGER_INFO(logger(),
                                   "af_xdp: feed '{}' line {}: {} has no interface: read through "
                                   "its UDP socket",
                                   line.feed.name, line.index,
                                   line.socket.local_endpoint().to_string());
                continue;
            }
            std::string queues;
            for (unsigned q : line_queues[i]) {
                queues += (queues.empty() ? "" : ",") + std::to_string(q);
            }
            SPDLOG_LOGGER_INFO(logger(),
                               "af_xdp: feed '{}' line {}: {} on {} queue(s) {}, bind {} ({} "
                               "asked), {}-byte frames; timestamps: user-space, when the frame "
                               "leaves the RX ring (no kernel stamp)",
                               line.feed.name, line.index, line.socket.local_endpoint().to_string(),
                               line.options.interface, queues, bound_mode_,
                               to_string(line.feed.af_xdp.bind), frame_size_);
        }
    }

    void teardown() noexcept {
        for (auto& p : ports_) {
            if (p->xsk != nullptr) {
                xsk_socket__delete(p->xsk);
                p->xsk = nullptr;
            }
        }
        if (umem_ != nullptr) {
            (void)xsk_umem__delete(umem_);
            umem_ = nullptr;
        }
        for (auto& itf : interfaces_) {
            if (itf->attached) {
                LIBBPF_OPTS(bpf_xdp_attach_opts, detach, .old_prog_fd = itf->program_fd);
                (void)bpf_xdp_detach(itf->index, itf->attach_flags, &detach);
                itf->attached = false;
            }
            if (itf->object != nullptr) {
                bpf_object__close(itf->object);
                itf->object = nullptr;
            }
        }
    }

    // ---- the driver
    // ------------------------------------------------------------------------------

    void resume() noexcept {
        if (reactor_ != nullptr) {
            reactor_->schedule();
        }
        wake();
    }

    void refill(port& p) noexcept {
        std::uint32_t const budget = static_cast<std::uint32_t>(fill_size_) - p.held;
        std::uint32_t const n = std::min(
            {xsk_prod_nb_free(&p.fill, budget), budget, static_cast<std::uint32_t>(free_.size())});
        if (n == 0) {
            return;
        }
        std::uint32_t index = 0;
        if (xsk_ring_prod__reserve(&p.fill, n, &index) != n) {
            return;
        }
        for (std::uint32_t i = 0; i < n; ++i) {
            *xsk_ring_prod__fill_addr(&p.fill, index + i) =
                static_cast<std::uint64_t>(free_.back()) * frame_size_;
            free_.pop_back();
        }
        xsk_ring_prod__submit(&p.fill, n);
        p.held += n;
    }

    // The frames the line's parser handed back, onto the free stack.
    void take_returns(xdp_line& xl) noexcept {
        std::uint32_t index = 0;
        while (xl.line->pool.returns().pop(index)) {
            free_.push_back(index); // never reallocates: reserved for every frame
            --xl.out;
        }
    }

    // Whether the line may take one more frame (its pool's count bounds the frames it holds).
    bool frame_room(xdp_line& xl) noexcept {
        if (xl.out < xl.line->pool.count()) {
            return true;
        }
        take_returns(xl);
        return xl.out < xl.line->pool.count();
    }

    // One step: returned frames back to the fill rings, then every RX ring reaped. True if a
    // frame moved.
    bool step() noexcept {
        bool moved = false;
        if (++steps_ % events_every == 0) {
            (void)sleep(std::chrono::nanoseconds(0)); // the readiness set and the UDP sockets
        }
        for (auto& xl : lines_) {
            std::size_t const before = xl->out;
            take_returns(*xl);
            moved = moved || xl->out != before;
        }
        for (auto& p : ports_) {
            refill(*p);
            if (xsk_ring_prod__needs_wakeup(&p->fill)) {
                (void)::recvfrom(p->fd, nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
            }
            bool const was_blocked = p->blocked;
            p->blocked = false;
            moved = reap(*p) || moved;
            if (p->blocked != was_blocked) {
                // Backpressure: a blocked port's RX ring stays readable, so epoll would return
                // at once until the parser makes room (and resume() wakes the driver).
                watch_port(*p, !p->blocked);
            }
        }
        for (auto& xl : lines_) {
            if (xl->kernel.take()) { // acquire: pairs with the release store in sleep()
                moved = read_kernel_socket(*xl) || moved;
            }
            if (xl->delivered) {
                xl->delivered = false;
                xl->line->feed.parser.schedule();
            }
        }
        return moved;
    }

    void watch_port(port& p, bool watched) noexcept {
        epoll_event event{};
        event.events = watched ? std::uint32_t{EPOLLIN} : 0U;
        event.data.ptr = &p;
        if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_MOD, p.fd, &event) != 0 && !error_logged_) {
            error_logged_ = true;
            SPDLOG_LOGGER_ERROR(logger(), "af_xdp: epoll_ctl on {} queue {}: {}", p.interface,
                                p.queue, std::strerror(errno));
        }
    }

    // Backpressure: whether the line takes one more packet (room in its queue, a frame within
    // its pool's count); when not, the line asks to be resumed and looks again, so that no
    // resume is lost (pause protocol, feed_state.hpp). A request that the second look makes
    // needless is left standing, not withdrawn: a port blocked on this line earlier may still
    // wait for the resume it brings (a needless one costs one step).
    bool has_room(xdp_line& xl) noexcept {
        line_state& line = *xl.line;
        auto const fits = [&] {
            return line.ready.size() < line.ready.capacity() && frame_room(xl);
        };
        if (fits()) {
            return true;
        }
        line.request_resume();
        return fits();
    }

    // Room for a batch from the line's UDP socket.
    std::uint32_t room(xdp_line& xl) noexcept {
        line_state& line = *xl.line;
        if (line.feed.on_full == full_policy::drop) {
            return receive_batch;
        }
        if (!has_room(xl)) {
            return 0;
        }
        return static_cast<std::uint32_t>(std::min({line.ready.capacity() - line.ready.size(),
                                                    line.pool.count() - xl.out, receive_batch}));
    }

    // Hands the packet (in frame pk.buffer) to the line; under full_policy::drop a line without
    // a frame to spare counts it dropped. True if queued: the parser owns the frame.
    bool hand_over(xdp_line& xl, packet const& pk) noexcept {
        if (deliver(*xl.line, pk, !frame_room(xl)) != delivery::queued) {
            return false;
        }
        ++xl.out;
        xl.delivered = true;
        return true;
    }

    // The port's line for `to`, as the kernel would pick it: a line with that address before
    // one bound to any address. The last line hit first.
    static xdp_line* route(port& p, frame_destination const& to) noexcept {
        xdp_line* const last = p.routes[p.last];
        if (last->match.port == to.port &&
            (last->match.address == to.address || (last->match.address == 0 && !last->shadowed))) {
            return last;
        }
        std::size_t any = p.routes.size();
        for (std::size_t i = 0; i < p.routes.size(); ++i) {
            frame_destination const& match = p.routes[i]->match;
            if (match.port != to.port) {
                continue;
            }
            if (match.address == to.address) {
                p.last = i;
                return p.routes[i];
            }
            if (match.address == 0) {
                any = i;
            }
        }
        if (any == p.routes.size()) {
            return nullptr;
        }
        p.last = any;
        return p.routes[any];
    }

    // Up to a batch from the port's RX ring into its lines' queues. A frame whose line is full
    // (backpressure) stays in the ring with those behind it, and the port is marked blocked.
    bool reap(port& p) noexcept {
        std::uint32_t first = 0;
        std::uint32_t const n = xsk_ring_cons__peek(&p.rx, receive_batch, &first);
        if (n == 0) {
            return false;
        }
        std::uint64_t const now = realtime_clock::now_ns();
        std::byte* const area = area_.get();
        std::uint32_t taken = 0;
        for (; taken < n; ++taken) {
            xdp_desc const* desc = xsk_ring_cons__rx_desc(&p.rx, first + taken);
            auto const frame = static_cast<std::uint32_t>(desc->addr / frame_size_);
            packet pk;
            frame_destination to;
            if (!strip_headers(area + desc->addr, desc->len, buffer_size_, pk, to)) {
                p.routes.front()->line->malformed.add(1);
                free_.push_back(frame);
                continue;
            }
            xdp_line* const xl = route(p, to);
            if (xl == nullptr) { // the program redirects only the routes' destinations
                if (p.strays++ == 0) {
                    SPDLOG_LOGGER_WARN(logger(),
                                       "af_xdp: {} queue {}: a frame for no line "
                                       "(dropped; counted once per port in this log)",
                                       p.interface, p.queue);
                }
                free_.push_back(frame);
                continue;
            }
            line_state& line = *xl->line;
            if (line.feed.on_full == full_policy::backpressure && !has_room(*xl)) {
                p.blocked = true;
                break;
            }
            pk.buffer = frame;
            pk.user_rx_ns = now;
            pk.kernel_rx_ns = line.options.timestamps != timestamping::off ? now : 0;
            pk.line = line.index;
            if (!hand_over(*xl, pk)) {
                free_.push_back(frame); // dropped under full_policy::drop (counted)
            }
        }
        p.rx.cached_cons -= n - taken; // those stay in the ring
        if (taken != 0) {
            xsk_ring_cons__release(&p.rx, taken);
            p.held -= taken;
        }
        return taken != 0;
    }

    // The line's UDP socket, with recvmmsg into free frames (the payload where a frame's would
    // be). Marks `kernel` again unless the socket answered EAGAIN.
    bool read_kernel_socket(xdp_line& xl) noexcept {
        line_state& line = *xl.line;
        std::uint32_t const limit =
            std::min<std::uint32_t>(room(xl), static_cast<std::uint32_t>(free_.size()));
        if (limit == 0) {
            // Read once there is room: the parser resumes the line (has_room). Marked only (not
            // again(), which would re-run a reactor that finds no room). relaxed: the driver's
            // own mark, read by its own next step.
            xl.kernel.ready.store(true, std::memory_order_relaxed);
            return false;
        }
        std::array<mmsghdr, receive_batch> messages{};
        std::array<iovec, receive_batch> vectors{};
        std::array<sockaddr_in6, receive_batch> names{};
        std::array<std::uint32_t, receive_batch> frames{};
        std::size_t const payload_offset = kernel_headroom + frame_header_room;
        for (std::uint32_t i = 0; i < limit; ++i) {
            frames[i] = free_[free_.size() - 1 - i];
            vectors[i] = {area_.get() + std::size_t{frames[i]} * frame_size_ + payload_offset,
                          buffer_size_};
            messages[i].msg_hdr.msg_iov = &vectors[i];
            messages[i].msg_hdr.msg_iovlen = 1;
            messages[i].msg_hdr.msg_name = &names[i];
            messages[i].msg_hdr.msg_namelen = sizeof(names[i]);
        }
        int const n = ::recvmmsg(line.socket.native_handle(), messages.data(), limit,
                                 MSG_DONTWAIT | MSG_TRUNC, nullptr);
        if (n <= 0) {
            if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                xl.kernel.again(); // an error the socket reported (it is consumed): read on
            }
            return false;
        }
        xl.kernel.again(); // up to EAGAIN: more may wait, and no new edge comes for it
        if (xl.through_kernel == 0) {
            SPDLOG_LOGGER_WARN(logger(),
                               "af_xdp: feed '{}' line {}: datagrams arrive through the kernel's "
                               "stack too (sent before start, IP fragments, or an RX queue "
                               "without an AF_XDP socket: see `queues`)",
                               line.feed.name, line.index);
        }
        xl.through_kernel += static_cast<std::uint64_t>(n);
        // The n frames leave the free stack (frames[k] is its k-th from the top); the ones not
        // queued go back.
        free_.resize(free_.size() - static_cast<std::size_t>(n));
        std::uint64_t const now = realtime_clock::now_ns();
        for (int i = 0; i < n; ++i) {
            auto const k = static_cast<std::size_t>(i);
            packet p;
            p.data = static_cast<std::byte const*>(vectors[k].iov_base);
            p.truncated = messages[k].msg_len > line.pool.buffer_size();
            p.size = p.truncated ? static_cast<std::uint32_t>(line.pool.buffer_size())
                                 : messages[k].msg_len;
            p.buffer = frames[k];
            p.user_rx_ns = now;
            p.kernel_rx_ns = line.options.timestamps != timestamping::off ? now : 0;
            p.line = line.index;
            store_source(p, &names[k], messages[k].msg_hdr.msg_namelen);
            if (!hand_over(xl, p)) {
                free_.push_back(frames[k]);
            }
        }
        return true;
    }

    bool rings_empty() noexcept {
        for (auto& p : ports_) {
            std::uint32_t first = 0;
            if (xsk_ring_cons__peek(&p->rx, 1, &first) != 0) {
                p->rx.cached_cons -= 1; // only looked
                return false;
            }
        }
        return true;
    }

    // Sleeps until an RX ring has frames, wake() is called or `timeout` passes; dispatches the
    // readiness set. True if something woke it.
    bool sleep(std::chrono::nanoseconds timeout) noexcept {
        std::array<epoll_event, 16> events{};
        auto const ms = std::chrono::ceil<std::chrono::milliseconds>(timeout).count();
        int const n = ::epoll_wait(epoll_fd_.get(), events.data(), static_cast<int>(events.size()),
                                   static_cast<int>(ms));
        for (int i = 0; i < n; ++i) {
            void* const tag = events[static_cast<std::size_t>(i)].data.ptr;
            if (tag == &wake_) {
                wake_.drain();
            } else if (tag == readiness_) {
                (void)readiness_->dispatch();
            } else {
                for (auto& xl : lines_) {
                    if (tag == &xl->line->socket) {
                        // release: pairs with the acquire exchange in take() (step()).
                        xl->kernel.ready.store(true, std::memory_order_release);
                    }
                }
            }
        }
        return n > 0;
    }

    void run_thread() {
        for (;;) {
            bool const moved = step();
            (void)timers_->fire_due();
            // acquire: pairs with the release store in stop().
            if (stop_requested_.load(std::memory_order_acquire)) {
                // Everything received goes into the queues (as far as they take it).
                auto const deadline = std::chrono::steady_clock::now() + stop_deadline;
                while ((step() || !rings_empty()) && std::chrono::steady_clock::now() < deadline) {
                }
                return;
            }
            if (moved) {
                continue;
            }
            (void)timers_->begin_sleep(); // the only sleeper in thread mode
            auto const bound = timers_->sleep_bound(idle_sleep);
            (void)sleep(bound);
            timers_->end_sleep();
        }
    }

    unique_fd epoll_fd_;
    event_fd wake_;
    std::vector<std::unique_ptr<xdp_line>> lines_;
    std::vector<std::unique_ptr<interface_state>> interfaces_;
    std::vector<std::unique_ptr<port>> ports_;
    std::unique_ptr<std::byte, mmap_deleter> area_{};
    xsk_umem* umem_ = nullptr;
    std::size_t frame_size_ = 2048;
    std::size_t buffer_size_ = 0;     // payload bytes per packet (every feed's buffer_size)
    std::vector<std::uint32_t> free_; // driver only: frames on no ring
    std::size_t fill_size_ = 0;       // frames each port's fill and RX rings hold at most
    bool error_logged_ = false;       // driver only
    std::string bound_mode_;
    readiness_set* readiness_ = nullptr;
    work_contract* reactor_ = nullptr;
    timer_queue* timers_ = nullptr;
    std::thread thread_;
    enum class launch : std::uint8_t { pending, run, abandon };
    std::atomic<launch> launch_{launch::pending}; // thread mode: set once pinned (start())
    std::atomic<bool> stop_requested_{false};
    std::uint64_t steps_ = 0; // driver only
    bool finished_ = false;   // reactor contract only
    std::chrono::steady_clock::time_point stop_deadline_{};
};

} // namespace

std::unique_ptr<receive_backend> make_af_xdp_backend(blocking_work_contract_group& group) {
    return std::make_unique<af_xdp_backend>(group);
}

bool probe_af_xdp(std::string& why_not) {
    unique_fd const probe(::socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0));
    if (!probe.is_open()) {
        int const error = errno;
        why_not = error == EAFNOSUPPORT ? "the kernel has no AF_XDP sockets (CONFIG_XDP_SOCKETS)"
                                        : std::string("cannot open an AF_XDP socket: ") +
                                              std::strerror(error) + privileges_hint(error);
        return false;
    }
    return true;
}

} // namespace signet::net::detail
