#include "common.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <string>
#include <system_error>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <signet/md/big_endian.hpp>
#include <signet/md/nasdaq/moldudp64.hpp>
#include <signet/publisher/nasdaq/itch_generator.hpp>

#include "network_path.hpp"

namespace signet::bench {

// ---- workload --------------------------------------------------------------------------------

packet_templates::packet_templates(std::size_t payload, std::size_t packets) {
    if (packets == 0) {
        throw std::invalid_argument("packet_templates: need at least one packet");
    }
    std::size_t const limit = std::max<std::size_t>(payload, 72);
    signet::publisher::nasdaq::itch_generator generator(
        signet::publisher::nasdaq::itch_generator_options{.seed = 42,
                                                          .symbols = 64,
                                                          .messages = 0,
                                                          .target_live_orders = 256,
                                                          .max_live_orders = 2048,
                                                          .start_time = 34'200'000'000'000});
    std::vector<std::byte> buffer(limit);
    md::nasdaq::moldudp64_packer packer(
        buffer, "SIGNETBNCH", 1,
        md::nasdaq::moldudp64_packer_options{.max_payload = limit, .max_messages = 0xFFFE});
    std::array<std::byte, md::nasdaq::itch50::max_message_length> message{};
    std::size_t total_messages = 0;
    auto emit = [&](std::span<std::byte const> p, std::uint16_t count) {
        offsets_.push_back(bytes_.size());
        sizes_.push_back(static_cast<std::uint32_t>(p.size()));
        counts_.push_back(count);
        bytes_.insert(bytes_.end(), p.begin(), p.end());
        max_size_ = std::max(max_size_, p.size());
        total_messages += count;
    };
    while (offsets_.size() < packets) {
        std::size_t const n = generator.next(message);
        std::span<std::byte const> const m(message.data(), n);
        if (!packer.append(m)) {
            std::uint16_t const count = packer.message_count();
            emit(packer.finish(), count);
            if (!packer.append(m)) {
                throw std::logic_error("packet_templates: a message does not fit an empty packet");
            }
        }
    }
    mean_size_ = static_cast<double>(bytes_.size()) / static_cast<double>(offsets_.size());
    mean_messages_ = static_cast<double>(total_messages) / static_cast<double>(offsets_.size());
}

std::size_t produce_packet(packet_templates const& templates, feed_cursor& cursor,
                           std::byte* out) noexcept {
    std::span<std::byte const> const t = templates.packet(cursor.next);
    std::memcpy(out, t.data(), t.size());
    md::store_be64(out + sequence_offset, cursor.sequence);
    std::uint16_t const count = templates.messages(cursor.next);
    cursor.sequence += count;
    cursor.messages += count;
    ++cursor.packets;
    if (++cursor.next == templates.size()) {
        cursor.next = 0;
    }
    return t.size();
}

void stamp_packet(std::byte* packet, std::uint64_t ns) noexcept {
    md::store_be48(packet + timestamp_offset, ns & timestamp_mask);
}

// ---- sink ------------------------------------------------------------------------------------

feed_sink::feed_sink(sink_timing timing, std::atomic<bool> const* recording)
    : handler_(md::nasdaq::itch_feed_handler_options{
          .session = {.first_sequence = 1},
          .book = md::nasdaq::itch_order_book_options{.max_orders = 4096, .level_reserve = 32}})
    , timing_(timing)
    , recording_(recording) {}

void feed_sink::on_packet(std::span<std::byte const> packet) noexcept {
    handler_.on_datagram(packet);
    // relaxed load + store: calls for one feed never overlap and each design orders them
    // (contract, strand, ticket lock); the controlling thread only takes snapshots.
    std::uint64_t const n = parsed_.load(std::memory_order_relaxed) + 1;
    parsed_.store(n, std::memory_order_relaxed);
    if (timing_ == sink_timing::none) {
        return;
    }
    std::uint64_t const now = monotonic_ns();
    if (timing_ == sink_timing::drain) {
        if (n == 1) {
            first_ns_.store(now, std::memory_order_relaxed); // relaxed: as parsed_
        }
        last_ns_.store(now, std::memory_order_relaxed); // relaxed: as parsed_
        return;
    }
    // relaxed: the flag only selects the measured window; a packet at its edge may fall either way.
    if (recording_ != nullptr && recording_->load(std::memory_order_relaxed) &&
        packet.size() >= timestamp_offset + 6) {
        std::uint64_t const sent = md::load_be48(packet.data() + timestamp_offset);
        std::uint64_t const latency = (now - sent) & timestamp_mask;
        latency_.record(latency);
        if (samples_.size() < samples_.capacity()) {
            samples_.emplace_back(sent, latency); // within the reserved capacity: no allocation
        }
    }
}

void feed_sink::keep_samples(std::size_t capacity) {
    samples_.clear();
    samples_.reserve(capacity);
}

// ---- threads, CPU time, sockets --------------------------------------------------------------

std::uint64_t monotonic_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

int cpu_at(std::vector<int> const& cpus, std::size_t i) noexcept {
    return cpus.empty() ? -1 : cpus[i % cpus.size()];
}

std::vector<pid_t> thread_ids() {
    std::vector<pid_t> ids;
    DIR* dir = ::opendir("/proc/self/task");
    if (dir == nullptr) {
        return ids;
    }
    while (dirent const* entry = ::readdir(dir)) {
        if (entry->d_name[0] >= '0' && entry->d_name[0] <= '9') {
            ids.push_back(static_cast<pid_t>(std::stol(entry->d_name)));
        }
    }
    ::closedir(dir);
    std::sort(ids.begin(), ids.end());
    return ids;
}

std::uint64_t thread_cpu_ns(pid_t tid) noexcept {
    // The kernel's per-thread CPU clock id (what glibc's pthread_getcpuclockid builds):
    // (~tid << 3) | CPUCLOCK_PERTHREAD_MASK (4) | CPUCLOCK_SCHED (2).
    auto const id = static_cast<clockid_t>((~static_cast<unsigned>(tid) << 3) | 6U);
    timespec ts{};
    if (clock_gettime(id, &ts) != 0) {
        return 0; // the thread exited
    }
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ULL +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::vector<pid_t> threads_except(std::vector<pid_t> const& except) {
    std::vector<pid_t> const now = thread_ids();
    std::vector<pid_t> out;
    std::set_difference(now.begin(), now.end(), except.begin(), except.end(),
                        std::back_inserter(out));
    return out;
}

std::uint64_t cpu_of(std::vector<pid_t> const& threads) noexcept {
    std::uint64_t sum = 0;
    for (pid_t t : threads) {
        sum += thread_cpu_ns(t);
    }
    return sum;
}

pid_t current_tid() noexcept {
    return static_cast<pid_t>(::syscall(SYS_gettid));
}

std::uint64_t thread_switches(pid_t tid) {
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/status");
    std::string line;
    std::uint64_t total = 0;
    while (std::getline(in, line)) {
        if (line.find("ctxt_switches:") != std::string::npos) {
            total += std::stoull(line.substr(line.find(':') + 1));
        }
    }
    return total;
}

net::unique_fd open_udp_socket(std::size_t receive_buffer) {
    net::unique_fd socket(::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    int const fd = socket.get();
    if (!socket.is_open()) {
        throw std::system_error(errno, std::generic_category(), "socket");
    }
    int const size = static_cast<int>(std::min<std::size_t>(receive_buffer, 1u << 30));
    if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr = current_path().receiver;
    address.sin_port = 0;
    if (::bind(fd, reinterpret_cast<sockaddr const*>(&address), sizeof(address)) != 0) {
        throw std::system_error(errno, std::generic_category(), "bind (the path's address)");
    }
    return socket;
}

std::uint16_t local_port(int fd) {
    sockaddr_in address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        throw std::system_error(errno, std::generic_category(), "getsockname");
    }
    return ntohs(address.sin_port);
}

cpu_ticks read_cpu_ticks() {
    cpu_ticks t;
    {
        std::ifstream in("/proc/stat");
        std::string label;
        in >> label; // "cpu": the sum over all CPUs
        std::uint64_t value = 0;
        for (int field = 0; field < 8 && in >> value; ++field) {
            if (field == 7) {
                t.steal = value;
            } else if (field != 1 && field != 3 && field != 4) { // nice (niced builds), idle,
                t.machine += value;                              // iowait
            }
        }
    }
    std::ifstream in("/proc/self/stat");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
    std::istringstream rest(text.substr(text.rfind(')') + 2));
    std::string field;
    for (int i = 3; i <= 15 && rest >> field; ++i) {
        if (i == 14 || i == 15) {
            t.process += std::stoull(field);
        }
    }
    return t;
}

double other_cpus(cpu_ticks const& a, cpu_ticks const& b, double seconds) {
    if (seconds <= 0) {
        return 0;
    }
    double const machine = static_cast<double>(b.machine - a.machine);
    double const process = static_cast<double>(b.process - a.process);
    double const ticks_per_second = static_cast<double>(::sysconf(_SC_CLK_TCK));
    return std::max(0.0, (machine - process) / ticks_per_second / seconds);
}

double steal_ms(cpu_ticks const& a, cpu_ticks const& b) {
    return static_cast<double>(b.steal - a.steal) * 1000.0 /
           static_cast<double>(::sysconf(_SC_CLK_TCK));
}

double coefficient_of_variation(std::vector<double> const& values) {
    if (values.size() < 2) {
        return 0;
    }
    double sum = 0;
    for (double v : values) {
        sum += v;
    }
    double const mean = sum / static_cast<double>(values.size());
    if (mean == 0) {
        return 0;
    }
    double squares = 0;
    for (double v : values) {
        squares += (v - mean) * (v - mean);
    }
    return std::sqrt(squares / static_cast<double>(values.size() - 1)) / mean;
}

} // namespace signet::bench
