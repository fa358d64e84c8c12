// The af_xdp backend in a build without libxdp, libbpf or a BPF compiler (net/CMakeLists.txt):
// it reports itself unavailable, with what to install.
#include <stdexcept>
#include <string>
#include <system_error>

#include "backends.hpp"

namespace signet::net::detail {

namespace {
constexpr char const* missing =
    "this build has no AF_XDP support: install libxdp-dev, libbpf-dev and clang "
    "(scripts/install-deps) and rebuild";
} // namespace

std::unique_ptr<receive_backend> make_af_xdp_backend(blocking_work_contract_group&) {
    throw std::system_error(std::make_error_code(std::errc::function_not_supported), missing);
}

bool probe_af_xdp(std::string& why_not) {
    why_not = missing;
    return false;
}

} // namespace signet::net::detail
