// md_top: the live view of a receiver's books from another process, through its shared-memory
// segment (config `[publish] shm = "NAME"`; signet/receiver/shm_reader.hpp). It maps the segment
// read-only: it can neither slow nor corrupt the receiver, and when the receiver restarts it
// opens the new segment.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <signet/receiver/shm_reader.hpp>

namespace {

namespace shm = signet::receiver::shm;

volatile std::sig_atomic_t stop_requested = 0;

char const* state_name(std::uint8_t s) {
    static char const* const names[] = {"unknown", "pre_open", "open",      "paused",
                                        "halted",  "closed",   "quote_only"};
    return s < std::size(names) ? names[s] : "?";
}

char const* book_name(std::uint32_t s) {
    static char const* const names[] = {"none", "complete", "recovering", "stale"};
    return s < std::size(names) ? names[s] : "?";
}

std::string side(shm::level const* levels, std::uint8_t count, std::int8_t exponent) {
    if (count == 0) {
        return "-";
    }
    char text[64];
    std::snprintf(text, sizeof text, "%llu @ %.*f", static_cast<unsigned long long>(levels[0].size),
                  std::max(0, -exponent),
                  static_cast<double>(levels[0].price) * std::pow(10.0, exponent));
    return text;
}

struct row {
    std::string feed;
    shm::instrument_slot slot;
};

/// One frame: every feed's header line, then the `rows` instruments updated most.
std::string frame(shm::reader& r, std::size_t rows) {
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "md_top: /dev/shm segment, generation %llu, %s\n",
                  static_cast<unsigned long long>(r.generation()), r.closed() ? "closed" : "live");
    out += line;
    std::vector<row> all;
    for (std::size_t f = 0; f < r.feeds(); ++f) {
        shm::feed_header const& h = r.feed(f);
        std::snprintf(line, sizeof line, "feed %.*s: book %s, %llu events\n",
                      static_cast<int>(r.feed_name(f).size()), r.feed_name(f).data(),
                      book_name(shm::atomic(h.book_state).load(std::memory_order_relaxed)),
                      static_cast<unsigned long long>(
                          shm::atomic(h.written).load(std::memory_order_acquire)));
        out += line;
        row x{std::string(r.feed_name(f)), {}};
        for (std::uint32_t id = 0; id < r.instruments(f); ++id) {
            if (r.read_instrument(f, id, x.slot) && x.slot.defined != 0) {
                all.push_back(x);
            }
        }
    }
    std::stable_sort(all.begin(), all.end(),
                     [](row const& a, row const& b) { return a.slot.updates > b.slot.updates; });
    std::snprintf(line, sizeof line, "%-10s %-10s %-10s %-26s %-26s %7s %9s\n", "feed", "symbol",
                  "status", "bid", "ask", "levels", "updates");
    out += line;
    for (std::size_t i = 0; i < std::min(rows, all.size()); ++i) {
        shm::instrument_slot const& s = all[i].slot;
        std::string const levels =
            std::to_string(s.bid_levels) + "x" + std::to_string(s.ask_levels);
        std::snprintf(line, sizeof line, "%-10.10s %-10.20s %-10s %-26s %-26s %7s %9llu%s\n",
                      all[i].feed.c_str(), s.symbol.data(), state_name(s.trading_state),
                      side(s.bids.data(), s.bid_levels, s.price_exponent).c_str(),
                      side(s.asks.data(), s.ask_levels, s.price_exponent).c_str(), levels.c_str(),
                      static_cast<unsigned long long>(s.updates), s.stale != 0 ? " stale" : "");
        out += line;
    }
    return out;
}

} // namespace

int main(int argc, char** argv) {
    CLI::App cli{
        "md_top: a receiver's books, live, from its shared-memory segment ([publish] shm)"};
    std::string name;
    double interval_s = 1.0;
    std::size_t rows = 20;
    bool once = false;
    cli.add_option("--shm", name, "the segment's name ([publish] shm)")->required();
    cli.add_option("--interval", interval_s, "seconds between frames")
        ->check(CLI::Range(0.05, 3600.0));
    cli.add_option("--rows", rows, "instruments shown (the most updated first)")
        ->check(CLI::Range(1, 100000));
    cli.add_flag("--once", once, "print one frame and exit (no screen control)");
    CLI11_PARSE(cli, argc, argv);
    std::signal(SIGINT, [](int) { stop_requested = 1; });
    std::signal(SIGTERM, [](int) { stop_requested = 1; });

    bool const terminal = !once && ::isatty(STDOUT_FILENO) != 0;
    std::unique_ptr<shm::reader> reader;
    while (stop_requested == 0) {
        if (!reader || reader->replaced()) { // first frame, or a restarted receiver
            try {
                reader = std::make_unique<shm::reader>(name);
            } catch (std::exception const& e) {
                if (once) {
                    std::fprintf(stderr, "md_top: %s\n", e.what());
                    return 1;
                }
                reader.reset();
                std::fprintf(stderr, "md_top: %s; trying again\n", e.what());
            }
        }
        if (reader) {
            std::string const text = frame(*reader, rows);
            std::fputs(terminal ? ("\x1b[H\x1b[2J" + text).c_str() : text.c_str(), stdout);
            std::fflush(stdout);
        }
        if (once) {
            return 0;
        }
        std::this_thread::sleep_for(std::chrono::duration<double>(interval_s)); // the frame rate
    }
    return 0;
}
