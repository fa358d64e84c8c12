#pragma once

#include <cstdint>
#include <memory>
#include <utility>

#include <signet/core/work_contract_token.hpp>

namespace signet {

template <typename Group>
class worker_pool;

/// A move-only handle to a contract in a work_contract_group. Destroying or move-assigning over a
/// handle releases its contract. Handles may outlive their group: they then turn invalid and
/// every call is a harmless no-op returning false.
///
/// Thread safety: schedule() may be called from any thread, concurrently with anything else on
/// the contract (including its run). release(), moves and destruction of one handle object must
/// not race with each other (as for any object).
class work_contract {
public:
    work_contract() noexcept = default;
    work_contract(work_contract&& other) noexcept
        : group_(std::move(other.group_))
        , slot_(other.slot_)
        , generation_(other.generation_) {}
    work_contract& operator=(work_contract&& other) noexcept {
        if (this != &other) {
            release();
            group_ = std::move(other.group_);
            slot_ = other.slot_;
            generation_ = other.generation_;
        }
        return *this;
    }
    work_contract(work_contract const&) = delete;
    work_contract& operator=(work_contract const&) = delete;
    ~work_contract() { release(); }

    /// Any thread; lock-free, allocation-free. Asks for one run; coalesces with pending ones.
    /// False if the handle is invalid, released or stale.
    bool schedule() noexcept { return group_ != nullptr && group_->schedule(slot_, generation_); }

    /// True the first time: the work never runs again and the release callback runs once, later,
    /// on a worker thread. False if already released (by anyone), invalid or the group is gone.
    bool release() noexcept {
        if (group_ == nullptr) {
            return false;
        }
        bool const released = group_->release(slot_, generation_);
        group_.reset(); // the handle is done with the group either way
        return released;
    }

    /// False once release was requested (through any path) or the group is gone.
    [[nodiscard]] bool is_valid() const noexcept {
        return group_ != nullptr && group_->is_current(slot_, generation_);
    }
    explicit operator bool() const noexcept { return is_valid(); }

    /// The contract's id (slot and generation); invalid_contract_id for a default handle.
    [[nodiscard]] contract_id get_id() const noexcept {
        return slot_ == detail::no_slot ? invalid_contract_id
                                        : detail::make_contract_id(slot_, generation_);
    }

    /// Internal: made by the groups.
    work_contract(std::shared_ptr<detail::group_state> group, std::uint32_t slot,
                  std::uint64_t generation) noexcept
        : group_(std::move(group))
        , slot_(slot)
        , generation_(generation) {}

private:
    template <typename Group>
    friend class worker_pool;
    // worker_pool::submit: a one-shot contract releases itself, so its handle lets go without
    // releasing.
    void detach() noexcept { group_.reset(); }

    std::shared_ptr<detail::group_state> group_;
    std::uint32_t slot_ = detail::no_slot;
    std::uint64_t generation_ = 0;
};

} // namespace signet
