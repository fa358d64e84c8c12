#include <stdexcept>
#include <string>
#include <system_error>

#include <pthread.h>
#include <sched.h>

#include <signet/core/cpu_affinity.hpp>

namespace signet {

namespace {

void pin(pthread_t handle, int cpu, char const* what) {
    if (cpu < 0) {
        return;
    }
    if (!valid_cpu_id(cpu)) {
        throw std::invalid_argument(std::string(what) + ": CPU id " + std::to_string(cpu) +
                                    " is out of range");
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(static_cast<std::size_t>(cpu), &set);
    if (int const rc = pthread_setaffinity_np(handle, sizeof(set), &set); rc != 0) {
        throw std::system_error(rc, std::generic_category(),
                                std::string("cannot pin the ") + what + " to CPU " +
                                    std::to_string(cpu));
    }
}

} // namespace

bool valid_cpu_id(int cpu) noexcept {
    return cpu >= 0 && cpu < CPU_SETSIZE;
}

void pin_thread(std::thread& thread, int cpu, char const* what) {
    pin(thread.native_handle(), cpu, what);
}

void pin_this_thread(int cpu, char const* what) {
    pin(pthread_self(), cpu, what);
}

} // namespace signet
