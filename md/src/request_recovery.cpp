#include <algorithm>
#include <stdexcept>

#include <signet/md/request_recovery.hpp>

namespace signet::md {

char const* to_string(recovery_state state) noexcept {
    switch (state) {
    case recovery_state::synchronized:
        return "synchronized";
    case recovery_state::recovering:
        return "recovering";
    case recovery_state::lost:
        return "lost";
    }
    return "?";
}

request_recovery::request_recovery(request_recovery_options const& options)
    : options_(options) {
    if (options.max_messages == 0) {
        throw std::invalid_argument("request_recovery: max_messages must be 1 to 65535");
    }
    if (options.max_in_flight == 0 || options.max_in_flight > max_chunks) {
        throw std::invalid_argument("request_recovery: max_in_flight must be 1 to 16");
    }
    if (options.max_tries == 0 || options.timeout_ns == 0) {
        throw std::invalid_argument("request_recovery: max_tries and timeout must be positive");
    }
}

bool request_recovery::want(std::uint64_t first, std::uint64_t end, std::uint64_t now) noexcept {
    if (end <= first || state_ == recovery_state::lost) {
        return false; // nothing to recover, or the open gap was just given up: release it
    }
    if (state_ == recovery_state::recovering) {
        if (first >= first_ && first < end_) {
            end_ = std::max(end_, end); // the same gap, perhaps seen wider
            return true;
        }
        give_up(now); // another gap while one is open: the owner moved past it
    }
    first_ = first;
    end_ = end;
    next_ = first;
    planned_ = first;
    since_ns_ = now;
    chunks_.fill({});
    ++stats_.gaps;
    set_state(recovery_state::recovering);
    return true;
}

void request_recovery::plan_chunks() noexcept {
    for (std::size_t i = 0; i < options_.max_in_flight && planned_ < end_; ++i) {
        chunk& c = chunks_[i];
        if (c.open) {
            continue;
        }
        auto const count = static_cast<std::uint16_t>(
            std::min<std::uint64_t>(end_ - planned_, options_.max_messages));
        c = {.first = planned_, .count = count, .sent_ns = 0, .tries = 0, .open = true};
        planned_ += count;
    }
}

std::uint64_t request_recovery::progress(std::uint64_t next, std::uint64_t now) noexcept {
    if (state_ == recovery_state::lost && next >= end_) {
        set_state(recovery_state::synchronized); // the owner moved past the lost gap
    }
    if (state_ != recovery_state::recovering || next <= next_) {
        return 0;
    }
    next_ = next;
    for (auto& c : chunks_) {
        if (c.open && c.first + c.count <= next) {
            c.open = false; // answered (or overtaken by the stream itself)
        }
    }
    if (next < end_) {
        return 0;
    }
    stats_.recovered_messages += end_ - first_;
    ++stats_.gaps_recovered;
    stats_.recovering_ns += now - since_ns_;
    set_state(recovery_state::synchronized);
    return now > since_ns_ ? now - since_ns_ : 1;
}

void request_recovery::abandon(std::uint64_t now) noexcept {
    if (state_ == recovery_state::recovering) {
        give_up(now);
    }
}

void request_recovery::give_up(std::uint64_t now) noexcept {
    std::uint64_t const got = std::clamp(next_, first_, end_) - first_;
    stats_.recovered_messages += got;
    stats_.lost_messages += (end_ - first_) - got;
    ++stats_.gaps_lost;
    stats_.recovering_ns += now > since_ns_ ? now - since_ns_ : 0;
    chunks_.fill({});
    set_state(recovery_state::lost);
}

std::uint64_t request_recovery::next_deadline() const noexcept {
    if (state_ != recovery_state::recovering) {
        return 0;
    }
    std::uint64_t deadline = 0;
    for (auto const& c : chunks_) {
        if (c.open && c.tries != 0) {
            std::uint64_t const due = c.sent_ns + options_.timeout_ns;
            deadline = deadline == 0 ? due : std::min(deadline, due);
        }
    }
    return deadline;
}

void request_recovery::set_state(recovery_state state) {
    if (state == state_) {
        return;
    }
    state_ = state;
    if (on_state_) {
        on_state_(state);
    }
}

} // namespace signet::md
