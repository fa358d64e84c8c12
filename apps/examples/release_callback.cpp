// Release: from the handle, a token or this_contract; or by destroying the handle. The release
// callback runs exactly once, on a worker, after the last run of the work.
#include <cstdio>
#include <string>
#include <vector>

#include <signet/core.hpp>

int main() {
    signet::work_contract_group group(64);
    std::vector<std::string> log;
    {
        auto session = group.create_contract([&] { log.emplace_back("work"); },
                                             [&] { log.emplace_back("release"); });
        session.schedule();
        group.execute_next_contract();
    }                              // the handle goes out of scope: release is requested
    group.execute_next_contract(); // ... and runs here
    for (auto const& entry : log) {
        std::printf("%s\n", entry.c_str());
    }
    return log == std::vector<std::string>{"work", "release"} ? 0 : 1;
}
