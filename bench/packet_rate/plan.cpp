// Expands the command line's lists into points; see plan.hpp for the order and the rules.

#include "plan.hpp"

namespace signet::bench {

namespace {

/// The backends `design` runs in `mode`, narrowed to --backend where the design has a choice.
std::vector<std::string> backends_of(std::string const& design, std::string const& mode,
                                     std::vector<std::string> const& wanted, bool veth) {
    std::vector<std::string> backends;
    if (design == "signet" || design == "signet_poller") {
        for (auto const& b : {"io_uring", "epoll", "asio", "af_xdp"}) {
            if ((wanted.empty() || contains(wanted, b)) &&
                (veth || std::string_view(b) != "af_xdp")) { // af_xdp needs the veth path
                backends.emplace_back(b);
            }
        }
    } else if (design == "raw") {
        for (auto const& b : {"io_uring", "recvmmsg"}) {
            if (wanted.empty() || contains(wanted, b)) {
                backends.emplace_back(b);
            }
        }
    } else {
        backends.emplace_back(design == "queue" ? "recvmmsg" : "asio");
    }
    if (mode == "memory") {
        backends = {"none"}; // no kernel, no backend
    }
    return backends;
}

} // namespace

std::vector<point_spec> plan_points(plan_options const& options) {
    std::vector<point_spec> points;
    for (auto const& mode : options.modes) {
        for (auto const& design : options.designs) {
            std::vector<std::string> mode_idles = options.idles;
            if (mode_idles.empty()) {
                mode_idles = latency_mode(mode) ? std::vector<std::string>{"spin", "block"}
                                                : std::vector<std::string>{"block"};
            }
            for (auto const& backend : backends_of(design, mode, options.backends, options.veth)) {
                for (auto f : options.feeds) {
                    for (auto w : options.workers) {
                        if (design == "raw" && w != options.workers.front()) {
                            continue; // one thread: a single point per feed count
                        }
                        for (auto payload : options.payloads) {
                            for (auto const& idle : mode_idles) {
                                point_spec s;
                                s.design = design;
                                s.backend = backend;
                                s.feeds = f;
                                s.workers = design == "raw" ? 1 : w;
                                s.rate = latency_mode(mode) && !options.rate_given ? 50'000
                                                                                   : options.rate;
                                if (mode == "drain" || mode == "memory") {
                                    s.rate = 0; // as fast as possible
                                }
                                s.payload = payload;
                                s.mode = mode;
                                s.idle = idle == "spin" ? idle_mode::spin : idle_mode::block;
                                if (design != "signet" && design != "signet_poller") {
                                    points.push_back(s); // no stage timing of their own
                                    continue;
                                }
                                for (auto const& stages : options.stages) {
                                    s.stages = stages;
                                    points.push_back(s);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    return points;
}

} // namespace signet::bench
