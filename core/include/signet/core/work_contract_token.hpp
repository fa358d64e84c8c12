#pragma once

#include <cstdint>

namespace signet {

/// Identifies a contract: its slot in the group (low 32 bits) and the slot's generation (high
/// bits), so ids stay unique when a slot is reused.
using contract_id = std::uint64_t;
inline constexpr contract_id invalid_contract_id = ~contract_id{0};

/// Whether a new contract starts scheduled.
enum class initial_state { unscheduled, scheduled };

namespace detail {
class group_state;
} // namespace detail

/// Passed to work callables of the form void(work_contract_token&). Valid only while that work
/// runs (keep it no longer); it names the running contract. Stale tokens (their contract was
/// released and the slot reused) are ignored.
class work_contract_token {
public:
    /// Schedules the running contract again: it runs once more after this run returns.
    inline void schedule() noexcept;
    /// Requests release: the work never runs again; the release callback runs after this run.
    inline void release() noexcept;
    [[nodiscard]] inline contract_id get_id() const noexcept;

    work_contract_token(detail::group_state* group, std::uint32_t slot,
                        std::uint64_t generation) noexcept
        : group_(group)
        , slot_(slot)
        , generation_(generation) {}

private:
    friend class detail::group_state; // reuses one token for the runs of a batch

    detail::group_state* group_;
    std::uint32_t slot_;
    std::uint64_t generation_;
};

/// The contract whose work is running on this thread. Outside a work callable these do nothing
/// and get_id() returns invalid_contract_id.
namespace this_contract {
inline void schedule() noexcept;
inline void release() noexcept;
[[nodiscard]] inline contract_id get_id() noexcept;
} // namespace this_contract

} // namespace signet

#include <signet/core/detail/contract_group_state.hpp> // inline definitions of the above
