#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <gtest/gtest.h>

#include <signet/core/spsc_fixed_queue.hpp>

namespace {

using signet::spsc_fixed_queue;

// Counts every constructor and destructor call, so tests can check that the queue destroys
// exactly what it constructed (rigtorp TestType, folly DtorChecker).
struct Tracked {
    static inline int constructed = 0;
    static inline int destroyed = 0;
    static inline int moves = 0;
    static inline int copies = 0;

    static void reset() { constructed = destroyed = moves = copies = 0; }
    static int alive() { return constructed - destroyed; }

    explicit Tracked(int v) noexcept
        : value(v) {
        ++constructed;
    }
    Tracked(Tracked const& other) noexcept
        : value(other.value) {
        ++constructed;
        ++copies;
    }
    Tracked(Tracked&& other) noexcept
        : value(other.value) {
        other.value = -1;
        ++constructed;
        ++moves;
    }
    Tracked& operator=(Tracked const& other) noexcept {
        value = other.value;
        ++copies;
        return *this;
    }
    Tracked& operator=(Tracked&& other) noexcept {
        value = other.value;
        other.value = -1;
        ++moves;
        return *this;
    }
    ~Tracked() { ++destroyed; }

    int value;
};

// Constructors and assignments that may throw; the destructor does not.
struct MayThrow {
    explicit MayThrow(int v) noexcept(false)
        : value(v) {
        if (v < 0) {
            throw std::runtime_error("negative");
        }
    }
    // Written out: GCC treats "noexcept(false) = default" as noexcept for these members.
    MayThrow(MayThrow const& other) noexcept(false)
        : value(other.value) {}
    MayThrow(MayThrow&& other) noexcept(false)
        : value(other.value) {}
    MayThrow& operator=(MayThrow const& other) noexcept(false) {
        value = other.value;
        return *this;
    }
    MayThrow& operator=(MayThrow&& other) noexcept(false) {
        value = other.value;
        return *this;
    }
    ~MayThrow() = default;

    int value;
};

struct ThrowingDestructor {
    ~ThrowingDestructor() noexcept(false) {}
};

struct alignas(64) Aligned64 {
    int value;
};

struct alignas(256) Aligned256 {
    int value;
};

template <typename T>
concept queue_instantiable = requires {
    typename spsc_fixed_queue<T>;
};

// noexcept follows T (rigtorp SPSCQueue test).
template <typename T>
using queue_ref = spsc_fixed_queue<T>&;

static_assert(noexcept(std::declval<queue_ref<int>>().push(std::declval<int const&>())));
static_assert(noexcept(std::declval<queue_ref<int>>().push(1)));
static_assert(noexcept(std::declval<queue_ref<int>>().emplace(1)));
static_assert(noexcept(std::declval<queue_ref<int>>().pop(std::declval<int&>())));
static_assert(noexcept(std::declval<queue_ref<int>>().pop()));
static_assert(noexcept(std::declval<queue_ref<int>>().front()));
static_assert(noexcept(std::declval<queue_ref<int>>().pop_front()));
static_assert(noexcept(std::declval<spsc_fixed_queue<int> const&>().size()));
static_assert(noexcept(std::declval<spsc_fixed_queue<int> const&>().empty()));
static_assert(noexcept(std::declval<queue_ref<Tracked>>().push(std::declval<Tracked const&>())));
static_assert(noexcept(std::declval<queue_ref<Tracked>>().push(Tracked(1))));
static_assert(noexcept(std::declval<queue_ref<Tracked>>().pop()));

static_assert(!noexcept(std::declval<queue_ref<MayThrow>>().push(std::declval<MayThrow const&>())));
static_assert(!noexcept(std::declval<queue_ref<MayThrow>>().push(MayThrow(1))));
static_assert(!noexcept(std::declval<queue_ref<MayThrow>>().emplace(1)));
static_assert(!noexcept(std::declval<queue_ref<MayThrow>>().pop(std::declval<MayThrow&>())));
static_assert(!noexcept(std::declval<queue_ref<MayThrow>>().pop()));
static_assert(noexcept(std::declval<queue_ref<MayThrow>>().front()));
static_assert(noexcept(std::declval<queue_ref<MayThrow>>().pop_front()));
// emplace() is noexcept per constructor: a nothrow constructor of a type whose copy may throw.
static_assert(noexcept(std::declval<queue_ref<std::string>>().emplace()));
static_assert(!noexcept(std::declval<queue_ref<std::string>>().emplace("text")));

// Element requirements and the fixed API shape.
static_assert(queue_instantiable<int>);
static_assert(queue_instantiable<std::unique_ptr<int>>);
static_assert(!queue_instantiable<ThrowingDestructor>);
static_assert(!queue_instantiable<int const>);
static_assert(!queue_instantiable<int&>);
static_assert(!queue_instantiable<int[4]>);
static_assert(!std::is_copy_constructible_v<spsc_fixed_queue<int>>);
static_assert(!std::is_copy_assignable_v<spsc_fixed_queue<int>>);
static_assert(!std::is_move_constructible_v<spsc_fixed_queue<int>>);
static_assert(!std::is_move_assignable_v<spsc_fixed_queue<int>>);
static_assert(!std::is_convertible_v<std::size_t, spsc_fixed_queue<int>>);

TEST(SpscFixedQueue, ReportsCapacityAndSize) {
    for (std::size_t capacity :
         {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1000}}) {
        spsc_fixed_queue<int> queue(capacity);
        EXPECT_EQ(queue.capacity(), capacity);
        EXPECT_EQ(queue.size(), 0U);
        EXPECT_TRUE(queue.empty());
        for (std::size_t i = 0; i < capacity; ++i) {
            ASSERT_TRUE(queue.push(static_cast<int>(i)));
            EXPECT_EQ(queue.size(), i + 1);
            EXPECT_FALSE(queue.empty());
        }
        EXPECT_EQ(queue.capacity(), capacity);
    }
}

TEST(SpscFixedQueue, PushFailsWhenFull) {
    spsc_fixed_queue<int> queue(3);
    EXPECT_TRUE(queue.push(1));
    EXPECT_TRUE(queue.push(2));
    EXPECT_TRUE(queue.push(3));
    EXPECT_FALSE(queue.push(4));
    EXPECT_FALSE(queue.emplace(5));
    int const copied = 6;
    EXPECT_FALSE(queue.push(copied));
    EXPECT_EQ(queue.size(), 3U);

    // A failed push leaves the queue intact; one pop makes room for exactly one more.
    int out = 0;
    ASSERT_TRUE(queue.pop(out));
    EXPECT_EQ(out, 1);
    EXPECT_TRUE(queue.push(7));
    EXPECT_FALSE(queue.push(8));
    for (int expected : {2, 3, 7}) {
        ASSERT_TRUE(queue.pop(out));
        EXPECT_EQ(out, expected);
    }
}

TEST(SpscFixedQueue, FailedPushDoesNotConsumeArgument) {
    spsc_fixed_queue<std::unique_ptr<int>> queue(1);
    ASSERT_TRUE(queue.push(std::make_unique<int>(1)));
    auto kept = std::make_unique<int>(2);
    EXPECT_FALSE(queue.push(std::move(kept)));
    ASSERT_NE(kept, nullptr);
    EXPECT_EQ(*kept, 2);
}

TEST(SpscFixedQueue, PopFailsWhenEmpty) {
    spsc_fixed_queue<int> queue(2);
    int out = 42;
    EXPECT_FALSE(queue.pop(out));
    EXPECT_EQ(out, 42);
    EXPECT_EQ(queue.pop(), std::nullopt);
    EXPECT_EQ(queue.front(), nullptr);

    ASSERT_TRUE(queue.push(1));
    ASSERT_TRUE(queue.pop(out));
    EXPECT_EQ(out, 1);
    EXPECT_FALSE(queue.pop(out));
    EXPECT_EQ(queue.pop(), std::nullopt);
    EXPECT_EQ(queue.front(), nullptr);
    EXPECT_TRUE(queue.empty());
}

TEST(SpscFixedQueue, KeepsFifoOrderAcrossWrapAround) {
    // Capacities 1..5 with fill levels that drift, so the indices wrap many times at
    // every offset.
    for (std::size_t capacity = 1; capacity <= 5; ++capacity) {
        spsc_fixed_queue<int> queue(capacity);
        int next_push = 0;
        int next_pop = 0;
        for (int round = 0; round < 500; ++round) {
            auto const burst = static_cast<std::size_t>(round) % capacity + 1;
            for (std::size_t i = 0; i < burst && queue.push(next_push); ++i) {
                ++next_push;
            }
            auto const drain = static_cast<std::size_t>(round * 7) % capacity + 1;
            int out = -1;
            for (std::size_t i = 0; i < drain && queue.pop(out); ++i) {
                ASSERT_EQ(out, next_pop) << "capacity " << capacity << ", round " << round;
                ++next_pop;
            }
            ASSERT_EQ(queue.size(), static_cast<std::size_t>(next_push - next_pop));
            ASSERT_LE(queue.size(), capacity);
        }
        int out = -1;
        while (queue.pop(out)) {
            ASSERT_EQ(out, next_pop++);
        }
        EXPECT_EQ(next_pop, next_push);
        EXPECT_GT(next_push, 500 * static_cast<int>(capacity) / 2);
    }
}

TEST(SpscFixedQueue, EmplaceConstructsInPlace) {
    spsc_fixed_queue<std::pair<int, std::string>> queue(2);
    EXPECT_TRUE(queue.emplace(1, "one"));
    EXPECT_TRUE(queue.emplace(2, std::string(3, 'x')));
    EXPECT_FALSE(queue.emplace(3, "three"));

    auto first = queue.pop();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->first, 1);
    EXPECT_EQ(first->second, "one");
    auto second = queue.pop();
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(second->first, 2);
    EXPECT_EQ(second->second, "xxx");

    Tracked::reset();
    {
        spsc_fixed_queue<Tracked> tracked(1);
        ASSERT_TRUE(tracked.emplace(5));
        EXPECT_EQ(Tracked::constructed, 1);
        EXPECT_EQ(Tracked::moves, 0);
        EXPECT_EQ(Tracked::copies, 0);
    }
    EXPECT_EQ(Tracked::destroyed, 1);
}

TEST(SpscFixedQueue, FrontAndPopFrontAreZeroCopy) {
    Tracked::reset();
    {
        spsc_fixed_queue<Tracked> queue(2);
        ASSERT_TRUE(queue.emplace(10));
        ASSERT_TRUE(queue.emplace(11));

        Tracked* first = queue.front();
        ASSERT_NE(first, nullptr);
        EXPECT_EQ(first->value, 10);
        EXPECT_EQ(queue.front(), first) << "front() must not advance";
        first->value = 100; // in-place access to the queued element
        EXPECT_EQ(queue.front()->value, 100);
        queue.pop_front();
        EXPECT_EQ(Tracked::destroyed, 1);
        EXPECT_EQ(queue.size(), 1U);

        Tracked* second = queue.front();
        ASSERT_NE(second, nullptr);
        EXPECT_NE(second, first);
        EXPECT_EQ(second->value, 11);
        queue.pop_front();
        EXPECT_EQ(queue.front(), nullptr);
        EXPECT_TRUE(queue.empty());
    }
    EXPECT_EQ(Tracked::constructed, 2);
    EXPECT_EQ(Tracked::destroyed, 2);
    EXPECT_EQ(Tracked::copies, 0);
    EXPECT_EQ(Tracked::moves, 0);
}

TEST(SpscFixedQueue, OptionalPopMovesElementOut) {
    spsc_fixed_queue<std::string> queue(2);
    ASSERT_TRUE(queue.push(std::string(64, 'a')));
    std::string const copied(32, 'b');
    ASSERT_TRUE(queue.push(copied));
    EXPECT_EQ(copied, std::string(32, 'b'));

    std::optional<std::string> first = queue.pop();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(*first, std::string(64, 'a'));
    std::optional<std::string> second = queue.pop();
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(*second, std::string(32, 'b'));
    EXPECT_FALSE(queue.pop().has_value());
}

TEST(SpscFixedQueue, HoldsMoveOnlyElements) {
    spsc_fixed_queue<std::unique_ptr<int>> queue(3);
    for (int round = 0; round < 10; ++round) {
        ASSERT_TRUE(queue.push(std::make_unique<int>(round)));
        ASSERT_TRUE(queue.emplace(new int(round + 100)));
        std::unique_ptr<int> out;
        ASSERT_TRUE(queue.pop(out));
        ASSERT_NE(out, nullptr);
        EXPECT_EQ(*out, round);
        std::optional<std::unique_ptr<int>> popped = queue.pop();
        ASSERT_TRUE(popped.has_value());
        ASSERT_NE(*popped, nullptr);
        EXPECT_EQ(**popped, round + 100);
    }
    // Left inside: freed by the queue's destructor (ASan's leak check would report otherwise).
    ASSERT_TRUE(queue.push(std::make_unique<int>(7)));
    ASSERT_TRUE(queue.push(std::make_unique<int>(8)));
}

TEST(SpscFixedQueue, ConstructionsMatchDestructionsAcrossWrapAround) {
    Tracked::reset();
    {
        spsc_fixed_queue<Tracked> queue(4);
        int next = 0;
        for (int round = 0; round < 100; ++round) {
            ASSERT_TRUE(queue.emplace(next++));
            Tracked const copy(next++);
            ASSERT_TRUE(queue.push(copy));
            ASSERT_TRUE(queue.push(Tracked(next++)));
            // Three pushes, then three pops by the three pop flavours.
            Tracked out(-1);
            ASSERT_TRUE(queue.pop(out));
            EXPECT_EQ(out.value, next - 3);
            auto popped = queue.pop();
            ASSERT_TRUE(popped.has_value());
            EXPECT_EQ(popped->value, next - 2);
            ASSERT_NE(queue.front(), nullptr);
            EXPECT_EQ(queue.front()->value, next - 1);
            queue.pop_front();
            ASSERT_TRUE(queue.empty());
        }
        // The queue is empty and the loop's locals are gone: nothing may still be alive.
        EXPECT_EQ(Tracked::alive(), 0);
        EXPECT_GT(Tracked::constructed, 300);
    }
    EXPECT_EQ(Tracked::constructed, Tracked::destroyed);
}

TEST(SpscFixedQueue, DestructorDestroysRemainingElements) {
    Tracked::reset();
    {
        spsc_fixed_queue<Tracked> queue(5);
        // Move the indices off zero first so the leftovers straddle the wrap point.
        for (int i = 0; i < 13; ++i) {
            ASSERT_TRUE(queue.emplace(i));
            ASSERT_TRUE(queue.pop().has_value());
        }
        for (int i = 0; i < 4; ++i) {
            ASSERT_TRUE(queue.emplace(i));
        }
        EXPECT_EQ(Tracked::alive(), 4);
    }
    EXPECT_EQ(Tracked::alive(), 0);
    EXPECT_EQ(Tracked::constructed, Tracked::destroyed);

    Tracked::reset();
    {
        spsc_fixed_queue<Tracked> full(3);
        for (int i = 0; i < 3; ++i) {
            ASSERT_TRUE(full.emplace(i));
        }
        EXPECT_FALSE(full.emplace(3));
        EXPECT_EQ(Tracked::alive(), 3);
    }
    EXPECT_EQ(Tracked::constructed, 3);
    EXPECT_EQ(Tracked::destroyed, 3);
}

TEST(SpscFixedQueue, ThrowingConstructorLeavesQueueUnchanged) {
    spsc_fixed_queue<MayThrow> queue(2);
    ASSERT_TRUE(queue.emplace(1));
    EXPECT_THROW(static_cast<void>(queue.emplace(-1)), std::runtime_error);
    EXPECT_EQ(queue.size(), 1U);
    ASSERT_TRUE(queue.emplace(2));
    EXPECT_EQ(queue.size(), 2U);
    auto first = queue.pop();
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->value, 1);
    auto second = queue.pop();
    ASSERT_TRUE(second.has_value());
    EXPECT_EQ(second->value, 2);
}

TEST(SpscFixedQueue, PopFrontOnEmptyQueueAsserts) {
#ifdef NDEBUG
    GTEST_SKIP() << "pop_front()'s precondition is an assert; this build defines NDEBUG";
#else
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    spsc_fixed_queue<int> queue(1);
    EXPECT_DEATH(queue.pop_front(), "after front\\(\\) has returned a non-nullptr");
    ASSERT_TRUE(queue.push(1));
    queue.pop_front();
    EXPECT_DEATH(queue.pop_front(), "after front\\(\\) has returned a non-nullptr");
#endif
}

TEST(SpscFixedQueue, InvalidCapacityThrows) {
    auto const make = [](std::size_t capacity) {
        spsc_fixed_queue<int> queue(capacity);
    };
    constexpr auto max = std::numeric_limits<std::size_t>::max();
    EXPECT_THROW(make(0), std::invalid_argument);
    EXPECT_THROW(make(max), std::invalid_argument);     // capacity + 1 would wrap to 0
    EXPECT_THROW(make(max / 2), std::invalid_argument); // more bytes than the allocator can give
    EXPECT_THROW(make(max / sizeof(int)), std::invalid_argument);
    EXPECT_NO_THROW(make(1));
}

template <typename T>
void expect_aligned_slots() {
    spsc_fixed_queue<T> queue(3);
    // Walk every slot of the ring, twice.
    for (int i = 0; i < 8; ++i) {
        ASSERT_TRUE(queue.push(T{i}));
        T* element = queue.front();
        ASSERT_NE(element, nullptr);
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(element) % alignof(T), 0U)
            << "slot " << i << " of an alignas(" << alignof(T) << ") type";
        EXPECT_EQ(element->value, i);
        queue.pop_front();
    }
}

TEST(SpscFixedQueue, OverAlignedElementsAreAligned) {
    static_assert(alignof(Aligned64) == 64);
    static_assert(alignof(Aligned256) == 256);
    expect_aligned_slots<Aligned64>();
    expect_aligned_slots<Aligned256>();
}

TEST(SpscFixedQueue, IndicesLiveOnSeparateCacheLines) {
    EXPECT_EQ(alignof(spsc_fixed_queue<int>), signet::destructive_interference_size);
    EXPECT_EQ(sizeof(spsc_fixed_queue<int>), 3 * signet::destructive_interference_size);
    auto queue = std::make_unique<spsc_fixed_queue<int>>(4);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(queue.get()) % signet::destructive_interference_size,
              0U);
}

} // namespace
