// The CUDA device model for tirc's emitted CUDA C compiled as C++ on the CPU (g++), for tests.
// Each thread of a block is a coroutine (ucontext, one stack each) in one OS thread; they switch
// at __syncthreads, __syncwarp and warp shuffles; blocks run one after another, the threads of
// even blocks first to last and of odd blocks last to first. A barrier that
// not every thread it waits for reaches is reported (tirc_emu::fail), never waited on forever.
#pragma once

#include <ucontext.h>
#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static
#define __constant__ static
#define __align__(n) __attribute__((aligned(n)))

// -- built-in vector structs and the launch geometry -------------------------------------------

#define TIRC_VECTOR2(name, T, align)                                                          \
    struct alignas(align) name {                                                            \
        T x, y;                                                                             \
    };                                                                                      \
    inline name make_##name(T x, T y) { return name{x, y}; }
#define TIRC_VECTOR4(name, T, align)                                                          \
    struct alignas(align) name {                                                            \
        T x, y, z, w;                                                                       \
    };                                                                                      \
    inline name make_##name(T x, T y, T z, T w) { return name{x, y, z, w}; }
#define TIRC_VECTOR3(name, T)                                                                 \
    struct name {                                                                           \
        T x, y, z;                                                                          \
    };                                                                                      \
    inline name make_##name(T x, T y, T z) { return name{x, y, z}; }

TIRC_VECTOR2(char2, signed char, 2)
TIRC_VECTOR4(char4, signed char, 4)
TIRC_VECTOR2(uchar2, unsigned char, 2)
TIRC_VECTOR4(uchar4, unsigned char, 4)
TIRC_VECTOR2(short2, short, 4)
TIRC_VECTOR4(short4, short, 8)
TIRC_VECTOR2(ushort2, unsigned short, 4)
TIRC_VECTOR4(ushort4, unsigned short, 8)
TIRC_VECTOR2(int2, int, 8)
TIRC_VECTOR4(int4, int, 16)
TIRC_VECTOR2(uint2, unsigned int, 8)
TIRC_VECTOR4(uint4, unsigned int, 16)
TIRC_VECTOR2(float2, float, 8)
TIRC_VECTOR4(float4, float, 16)
TIRC_VECTOR2(longlong2, long long, 16)
TIRC_VECTOR2(ulonglong2, unsigned long long, 16)
TIRC_VECTOR2(double2, double, 16)
TIRC_VECTOR3(int3, int)
TIRC_VECTOR3(float3, float)

struct uint3 {
    unsigned int x, y, z;
};
struct dim3 {
    unsigned int x, y, z;
    constexpr dim3(unsigned int x_ = 1, unsigned int y_ = 1, unsigned int z_ = 1)
        : x(x_), y(y_), z(z_) {}
};
inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return uint3{x, y, z}; }

// the running thread's: the scheduler sets them before it switches to a thread
inline uint3 threadIdx;
inline uint3 blockIdx;
inline dim3 blockDim;
inline dim3 gridDim;
constexpr int warpSize = 32;

// -- 16-bit floats: storage with IEEE round-to-nearest-even conversions ------------------------

struct __half;
struct __nv_bfloat16;

namespace tirc_emu {
inline unsigned short float_to_half_bits(float f) {
    _Float16 h = (_Float16)f;  // round to nearest even (F16C or libgcc's soft-float)
    unsigned short bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}
inline float half_bits_to_float(unsigned short bits) {
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return (float)h;
}
inline unsigned short float_to_bf16_bits(float f) {
    unsigned int u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return (unsigned short)(u >> 16);
}
inline float bf16_bits_to_float(unsigned short bits) {
    unsigned int u = (unsigned int)bits << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace tirc_emu

// A 16-bit float converts to and from every arithmetic type through float (one rounding from
// float or double: a double is rounded to float first only where that is exact enough, so
// doubles go straight through _Float16's own conversion); arithmetic computes in float and
// rounds each result, as the GPU's half instructions do.
#define TIRC_FLOAT16(name, to_bits, from_bits)                                                 \
    struct name {                                                                             \
        unsigned short bits_;                                                                 \
        name() = default;                                                                     \
        name(float f) : bits_(to_bits(f)) {}                                                  \
        name(double d) : bits_(from_double(d)) {}                                             \
        template <typename T, typename = std::enable_if_t<std::is_integral_v<T>>>            \
        name(T v) : bits_(to_bits((float)v)) {}                                               \
        operator float() const { return from_bits(bits_); }                                  \
        static unsigned short from_double(double d);                                          \
        static name raw(unsigned short b) {                                                   \
            name h;                                                                           \
            h.bits_ = b;                                                                      \
            return h;                                                                         \
        }                                                                                     \
        name& operator+=(name o) { return *this = name(float(*this) + float(o)); }           \
        name& operator-=(name o) { return *this = name(float(*this) - float(o)); }           \
        name& operator*=(name o) { return *this = name(float(*this) * float(o)); }           \
        name& operator/=(name o) { return *this = name(float(*this) / float(o)); }           \
    };                                                                                        \
    inline name operator+(name a, name b) { return name(float(a) + float(b)); }              \
    inline name operator-(name a, name b) { return name(float(a) - float(b)); }              \
    inline name operator*(name a, name b) { return name(float(a) * float(b)); }              \
    inline name operator/(name a, name b) { return name(float(a) / float(b)); }              \
    inline name operator-(name a) { return name::raw(a.bits_ ^ 0x8000); }                    \
    inline bool operator==(name a, name b) { return float(a) == float(b); }                  \
    inline bool operator!=(name a, name b) { return float(a) != float(b); }                  \
    inline bool operator<(name a, name b) { return float(a) < float(b); }                    \
    inline bool operator<=(name a, name b) { return float(a) <= float(b); }                  \
    inline bool operator>(name a, name b) { return float(a) > float(b); }                    \
    inline bool operator>=(name a, name b) { return float(a) >= float(b); }

TIRC_FLOAT16(__half, tirc_emu::float_to_half_bits, tirc_emu::half_bits_to_float)
TIRC_FLOAT16(__nv_bfloat16, tirc_emu::float_to_bf16_bits, tirc_emu::bf16_bits_to_float)

inline unsigned short __half::from_double(double d) {
    _Float16 h = (_Float16)d;  // one rounding, double to half
    unsigned short bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}
inline unsigned short __nv_bfloat16::from_double(double d) {
    // round to odd to float, then to nearest even: one correct rounding to bfloat16
    float f = (float)d;
    if (std::isfinite(d) && (double)f != d) {
        unsigned int u;
        std::memcpy(&u, &f, 4);
        if ((double)f > d ? f > 0 : f < 0) u -= 1;  // toward zero
        u |= 1u;                                  // sticky
        std::memcpy(&f, &u, 4);
    }
    return tirc_emu::float_to_bf16_bits(f);
}

typedef __half half;
typedef __nv_bfloat16 nv_bfloat16;
struct alignas(4) __half2 {
    __half x, y;
};
typedef __half2 half2;
struct alignas(4) __nv_bfloat162 {
    __nv_bfloat16 x, y;
};
typedef __nv_bfloat162 nv_bfloat162;

inline __half __float2half(float f) { return __half(f); }
inline __half __float2half_rn(float f) { return __half(f); }
inline float __half2float(__half h) { return float(h); }
inline __half __double2half(double d) { return __half(d); }
inline __nv_bfloat16 __float2bfloat16(float f) { return __nv_bfloat16(f); }
inline __nv_bfloat16 __float2bfloat16_rn(float f) { return __nv_bfloat16(f); }
inline float __bfloat162float(__nv_bfloat16 h) { return float(h); }
inline __half2 __halves2half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 make_half2(__half a, __half b) { return __half2{a, b}; }
inline __half2 __float2half2_rn(float f) { return __half2{__half(f), __half(f)}; }
inline __half2 __floats2half2_rn(float a, float b) { return __half2{__half(a), __half(b)}; }
inline __nv_bfloat162 __floats2bfloat162_rn(float a, float b) {
    return __nv_bfloat162{__nv_bfloat16(a), __nv_bfloat16(b)};
}
inline __nv_bfloat162 make_bfloat162(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __nv_bfloat162{a, b};
}
inline __half __low2half(__half2 v) { return v.x; }
inline __half __high2half(__half2 v) { return v.y; }
inline float2 __half22float2(__half2 v) { return float2{float(v.x), float(v.y)}; }
inline __half2 __float22half2_rn(float2 v) { return __half2{__half(v.x), __half(v.y)}; }
inline __half __hadd(__half a, __half b) { return a + b; }
inline __half __hsub(__half a, __half b) { return a - b; }
inline __half __hmul(__half a, __half b) { return a * b; }
inline __half __hdiv(__half a, __half b) { return a / b; }
inline __half __hneg(__half a) { return -a; }
inline __half __hfma(__half a, __half b, __half c) {
    return __half((double)float(a) * (double)float(b) + (double)float(c));
}
inline __half __hmax(__half a, __half b) { return __half(std::fmax(float(a), float(b))); }
inline __half __hmin(__half a, __half b) { return __half(std::fmin(float(a), float(b))); }
inline __nv_bfloat16 __hmax(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __nv_bfloat16(std::fmax(float(a), float(b)));
}
inline __nv_bfloat16 __hmin(__nv_bfloat16 a, __nv_bfloat16 b) {
    return __nv_bfloat16(std::fmin(float(a), float(b)));
}
inline __half2 __hadd2(__half2 a, __half2 b) { return __half2{a.x + b.x, a.y + b.y}; }
inline __half2 __hmul2(__half2 a, __half2 b) { return __half2{a.x * b.x, a.y * b.y}; }
inline __half2 __hfma2(__half2 a, __half2 b, __half2 c) {
    return __half2{__hfma(a.x, b.x, c.x), __hfma(a.y, b.y, c.y)};
}
inline bool __hisnan(__half a) { return std::isnan(float(a)); }
inline bool __hisinf(__half a) { return std::isinf(float(a)); }
inline __half hexp(__half a) { return __half(std::exp(float(a))); }
inline __half hlog(__half a) { return __half(std::log(float(a))); }
inline __half hsqrt(__half a) { return __half(std::sqrt(float(a))); }
inline __half hrsqrt(__half a) { return __half(1.0f / std::sqrt(float(a))); }
inline unsigned short __half_as_ushort(__half h) { return h.bits_; }
inline __half __ushort_as_half(unsigned short b) { return __half::raw(b); }
inline short __half_as_short(__half h) { return (short)h.bits_; }
inline __half __short_as_half(short b) { return __half::raw((unsigned short)b); }
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits_; }
inline __nv_bfloat16 __ushort_as_bfloat16(unsigned short b) { return __nv_bfloat16::raw(b); }

// -- math: CUDA's overloads (max and min of floats are fmax and fmin: NaN loses) ---------------

#define TIRC_MINMAX(T)                                                                       \
    inline T max(T a, T b) { return a > b ? a : b; }                                         \
    inline T min(T a, T b) { return a < b ? a : b; }
TIRC_MINMAX(int)
TIRC_MINMAX(unsigned int)
TIRC_MINMAX(long)
TIRC_MINMAX(unsigned long)
TIRC_MINMAX(long long)
TIRC_MINMAX(unsigned long long)
inline float max(float a, float b) { return std::fmax(a, b); }
inline float min(float a, float b) { return std::fmin(a, b); }
inline double max(double a, double b) { return std::fmax(a, b); }
inline double min(double a, double b) { return std::fmin(a, b); }
inline double max(float a, double b) { return std::fmax((double)a, b); }
inline double max(double a, float b) { return std::fmax(a, (double)b); }
inline double min(float a, double b) { return std::fmin((double)a, b); }
inline double min(double a, float b) { return std::fmin(a, (double)b); }
inline unsigned int max(int a, unsigned int b) { return max((unsigned int)a, b); }
inline unsigned int max(unsigned int a, int b) { return max(a, (unsigned int)b); }
inline unsigned int min(int a, unsigned int b) { return min((unsigned int)a, b); }
inline unsigned int min(unsigned int a, int b) { return min(a, (unsigned int)b); }
inline long long max(int a, long long b) { return max((long long)a, b); }
inline long long max(long long a, int b) { return max(a, (long long)b); }
inline long long min(int a, long long b) { return min((long long)a, b); }
inline long long min(long long a, int b) { return min(a, (long long)b); }

using std::abs;
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline float exp10f(float x) { return std::pow(10.0f, x); }
inline double exp10(double x) { return std::pow(10.0, x); }
inline float __expf(float x) { return std::exp(x); }
inline float __logf(float x) { return std::log(x); }
inline float __fdividef(float a, float b) { return a / b; }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }
inline float __int_as_float(int i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline int __float_as_int(float f) {
    int i;
    std::memcpy(&i, &f, 4);
    return i;
}
inline float __uint_as_float(unsigned int i) {
    float f;
    std::memcpy(&f, &i, 4);
    return f;
}
inline unsigned int __float_as_uint(float f) {
    unsigned int i;
    std::memcpy(&i, &f, 4);
    return i;
}
inline double __longlong_as_double(long long i) {
    double d;
    std::memcpy(&d, &i, 8);
    return d;
}
inline long long __double_as_longlong(double d) {
    long long i;
    std::memcpy(&i, &d, 8);
    return i;
}
inline int __popc(unsigned int x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned int)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned int __brev(unsigned int x) {
    unsigned int r = 0;
    for (int i = 0; i < 32; ++i) r |= ((x >> i) & 1u) << (31 - i);
    return r;
}
inline int __mul24(int a, int b) { return a * b; }
inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
inline int __dp4a(int a, int b, int c) {
    for (int i = 0; i < 4; ++i) c += (signed char)(a >> (8 * i)) * (signed char)(b >> (8 * i));
    return c;
}
inline unsigned int __dp4a(unsigned int a, unsigned int b, unsigned int c) {
    for (int i = 0; i < 4; ++i)
        c += (unsigned char)(a >> (8 * i)) * (unsigned char)(b >> (8 * i));
    return c;
}

// -- the scheduler -----------------------------------------------------------------------------

namespace tirc_emu {

constexpr size_t STACK_BYTES = 256 * 1024;
constexpr int MAX_THREADS = 1024;

enum class State { ready, block_barrier, warp_sync, done };

struct Thread {
    ucontext_t context;
    char* stack = nullptr;
    State state = State::done;
    uint3 index{0, 0, 0};
    unsigned sync_mask = 0;  // the mask of the warp sync it waits in
};

struct WarpGroup {  // the lanes of one warp that sync together (one mask), and their exchange
    unsigned mask = 0;
    unsigned arrived = 0;
    unsigned long long generation = 0;
    unsigned long long values[2][32][2];  // a lane's value (up to 16 bytes), by parity
    unsigned ballot = 0;
};

struct Warp {
    std::vector<WarpGroup> groups;
    unsigned exited = 0;  // lanes that returned
};

struct Block {
    std::vector<Thread> threads;
    std::vector<Warp> warps;
    int count = 0;
    int barrier_arrived = 0;
    int current = -1;
    ucontext_t scheduler;
    char* dynamic_shared = nullptr;
    void (*body)(void*) = nullptr;
    void* closure = nullptr;
    bool failed = false;
};

inline Block block;
inline char error[4096];
inline size_t dynamic_shared_bytes = 0;

inline unsigned lane_of(int t) { return (unsigned)t % 32u; }

[[noreturn]] inline void abort_launch() {
    block.failed = true;
    if (block.current >= 0) swapcontext(&block.threads[block.current].context, &block.scheduler);
    std::abort();  // not reached: a failed launch never resumes a thread
}

// Records a failure of the launch (in `error`) and stops it.
[[noreturn]] inline void fail(const char* format, ...) {
    va_list args;
    va_start(args, format);
    int written = 0;
    if (block.current >= 0) {
        uint3 b = blockIdx, t = block.threads[block.current].index;
        written = std::snprintf(error, sizeof error, "block (%u, %u, %u) thread (%u, %u, %u): ",
                                b.x, b.y, b.z, t.x, t.y, t.z);
    }
    std::vsnprintf(error + written, sizeof error - written, format, args);
    va_end(args);
    abort_launch();
}

inline void yield_to_scheduler() {
    Thread& self = block.threads[block.current];
    swapcontext(&self.context, &block.scheduler);
    if (block.failed) abort_launch();
}

inline void syncthreads() {
    Thread& self = block.threads[block.current];
    if (++block.barrier_arrived == block.count) {
        block.barrier_arrived = 0;
        for (Thread& t : block.threads)
            if (t.state == State::block_barrier) t.state = State::ready;
        return;
    }
    self.state = State::block_barrier;
    yield_to_scheduler();
}

inline Warp& warp_of(int t) { return block.warps[t / 32]; }

// the lanes that exist in thread t's warp
inline unsigned warp_lanes(int t) {
    int first = t / 32 * 32;
    int n = std::min(32, block.count - first);
    return n == 32 ? 0xffffffffu : ((1u << n) - 1u);
}

// Waits until every lane of `mask` in this warp has arrived with the same mask; `value` (up to
// 16 bytes) is what this lane gives. Returns the group, whose values[parity] hold every lane's.
inline WarpGroup& warp_sync(unsigned mask, const void* value, size_t bytes, bool predicate,
                            int* parity) {
    int t = block.current;
    unsigned lane = lane_of(t);
    Warp& warp = warp_of(t);
    if (!(mask >> lane & 1u)) fail("a warp sync with mask %#x, which leaves out its own lane %u", mask, lane);
    if (mask & ~warp_lanes(t))
        fail("a warp sync with mask %#x names lanes the block does not have", mask);
    if (mask & warp.exited)
        fail("a warp sync with mask %#x waits for lanes that have returned (%#x)", mask,
             mask & warp.exited);
    WarpGroup* group = nullptr;
    for (WarpGroup& g : warp.groups) {
        if (g.mask == mask) group = &g;
        else if (g.arrived && (g.mask & mask))
            fail("a warp sync with mask %#x while lanes %#x wait in one with mask %#x", mask,
                 g.arrived, g.mask);
    }
    if (group == nullptr) {
        warp.groups.emplace_back();
        group = &warp.groups.back();
        group->mask = mask;
    }
    int p = (int)(group->generation & 1u);
    *parity = p;
    std::memset(group->values[p][lane], 0, 16);
    if (bytes) std::memcpy(group->values[p][lane], value, bytes);
    if (group->arrived == 0) group->ballot = 0;
    if (predicate) group->ballot |= 1u << lane;
    group->arrived |= 1u << lane;
    if (group->arrived == mask) {
        group->arrived = 0;
        group->generation += 1;
        int first = t / 32 * 32;
        for (int l = 0; l < 32; ++l)
            if ((mask >> l & 1u) && block.threads[first + l].state == State::warp_sync)
                block.threads[first + l].state = State::ready;
        // the group may move in the vector when another is added; find it again by mask
        for (WarpGroup& g : warp.groups)
            if (g.mask == mask) return g;
    }
    block.threads[t].state = State::warp_sync;
    block.threads[t].sync_mask = mask;
    yield_to_scheduler();
    for (WarpGroup& g : warp.groups)
        if (g.mask == mask) return g;
    fail("internal: a warp group disappeared");
}

template <typename T>
inline T exchange(unsigned mask, T value, int source_lane) {
    static_assert(sizeof(T) <= 16, "a shuffled value of more than 16 bytes");
    int parity;
    WarpGroup& group = warp_sync(mask, &value, sizeof(T), false, &parity);
    if (!(group.mask >> source_lane & 1u)) return value;  // undefined on the GPU: keep our own
    T result;
    std::memcpy(&result, group.values[parity][source_lane], sizeof(T));
    return result;
}

inline void entry(void) {
    Block& b = block;
    b.body(b.closure);
    Thread& self = b.threads[b.current];
    self.state = State::done;
    warp_of(b.current).exited |= 1u << lane_of(b.current);
    swapcontext(&self.context, &b.scheduler);
}

inline const char* state_name(State s) {
    switch (s) {
        case State::block_barrier: return "__syncthreads";
        case State::warp_sync: return "a warp sync (__syncwarp or a shuffle)";
        case State::done: return "returned";
        default: return "running";
    }
}

inline char* allocate_stack() {
    void* p = mmap(nullptr, STACK_BYTES + 4096, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        std::snprintf(error, sizeof error, "cannot map a thread stack");
        return nullptr;
    }
    mprotect(p, 4096, PROT_NONE);  // an overflow faults instead of overwriting
    return (char*)p + 4096;
}

// Runs the whole grid; 0, or 1 with `error` saying why.
inline int run_grid(dim3 grid, dim3 block_dim, size_t dynamic_bytes, void (*body)(void*),
                    void* closure) {
    error[0] = 0;
    int count = (int)(block_dim.x * block_dim.y * block_dim.z);
    if (count < 1 || count > MAX_THREADS) {
        std::snprintf(error, sizeof error, "%d threads a block", count);
        return 1;
    }
    static std::vector<char*> stacks;
    while ((int)stacks.size() < count) {
        char* s = allocate_stack();
        if (s == nullptr) return 1;
        stacks.push_back(s);
    }
    static char* dynamic = nullptr;
    static size_t dynamic_capacity = 0;
    if (dynamic_bytes > dynamic_capacity) {
        std::free(dynamic);
        dynamic = (char*)std::aligned_alloc(1024, (dynamic_bytes + 1023) / 1024 * 1024);
        dynamic_capacity = dynamic_bytes;
    }
    gridDim = grid;
    blockDim = block_dim;
    block.threads.assign(count, Thread{});
    block.warps.assign((count + 31) / 32, Warp{});
    block.count = count;
    block.body = body;
    block.closure = closure;
    block.dynamic_shared = dynamic;
    block.failed = false;
    dynamic_shared_bytes = dynamic_bytes;
    for (unsigned bz = 0; bz < grid.z; ++bz)
        for (unsigned by = 0; by < grid.y; ++by)
            for (unsigned bx = 0; bx < grid.x; ++bx) {
                blockIdx = uint3{bx, by, bz};
                block.barrier_arrived = 0;
                for (Warp& w : block.warps) {
                    w.groups.clear();
                    w.exited = 0;
                }
                if (dynamic_bytes) std::memset(dynamic, 0xff, dynamic_bytes);  // garbage: NaNs
                for (int t = 0; t < count; ++t) {
                    Thread& th = block.threads[t];
                    th.index = uint3{(unsigned)t % block_dim.x,
                                     (unsigned)t / block_dim.x % block_dim.y,
                                     (unsigned)t / (block_dim.x * block_dim.y)};
                    th.state = State::ready;
                    th.stack = stacks[t];
                    getcontext(&th.context);
                    th.context.uc_stack.ss_sp = th.stack;
                    th.context.uc_stack.ss_size = STACK_BYTES;
                    th.context.uc_link = nullptr;
                    makecontext(&th.context, entry, 0);
                }
                int live = count;
                // odd blocks run their threads last to first: a race that the order decides
                // computes differently in one of the two
                bool reverse = (bx + grid.x * (by + grid.y * bz)) % 2 == 1;
                while (live > 0) {
                    bool ran = false;
                    for (int i = 0; i < count; ++i) {
                        int t = reverse ? count - 1 - i : i;
                        Thread& th = block.threads[t];
                        if (th.state != State::ready) continue;
                        ran = true;
                        block.current = t;
                        threadIdx = th.index;
                        swapcontext(&block.scheduler, &th.context);
                        block.current = -1;
                        if (block.failed) return 1;
                        if (th.state == State::done) live--;
                    }
                    if (live > 0 && !ran) {
                        block.current = -1;
                        int written = std::snprintf(
                            error, sizeof error,
                            "block (%u, %u, %u): deadlock, a barrier not every thread reaches: ",
                            bx, by, bz);
                        const State states[] = {State::block_barrier, State::warp_sync,
                                                State::done};
                        for (State s : states) {
                            int n = 0, first = -1;
                            for (int u = 0; u < count; ++u)
                                if (block.threads[u].state == s) {
                                    if (first < 0) first = u;
                                    n++;
                                }
                            if (n && written < (int)sizeof error)
                                written += std::snprintf(
                                    error + written, sizeof error - written,
                                    "%d threads %s%s (the first: %d); ", n,
                                    s == State::done ? "" : "wait in ", state_name(s), first);
                        }
                        return 1;
                    }
                }
            }
    return 0;
}

template <typename F, typename... A, size_t... I>
void call_with(F* f, void** params, std::index_sequence<I...>) {
    f(*static_cast<std::remove_cv_t<std::remove_reference_t<A>>*>(params[I])...);
}

template <typename... A>
struct Kernel {
    void (*f)(A...);
    void** params;
    static void body(void* self) {
        Kernel* k = static_cast<Kernel*>(self);
        call_with<void(A...), A...>(k->f, k->params, std::index_sequence_for<A...>{});
    }
};

// Launches kernel `f` on a grid; `params` as cuLaunchKernel's kernelParams. 0, or 1 with the
// reason in `message` (of `size` bytes).
template <typename... A>
int launch(void (*f)(A...), const unsigned* geometry, size_t dynamic_bytes, void** params,
           char* message, size_t size) {
    Kernel<A...> k{f, params};
    int status = run_grid(dim3(geometry[0], geometry[1], geometry[2]),
                          dim3(geometry[3], geometry[4], geometry[5]), dynamic_bytes,
                          &Kernel<A...>::body, &k);
    std::snprintf(message, size, "%s", error);
    return status;
}

// The byte size of each parameter of a kernel; returns their count.
template <typename... A>
int parameter_bytes(void (*)(A...), size_t* out, int n) {
    size_t sizes[] = {sizeof(A)..., 0};
    for (int i = 0; i < n && i < (int)sizeof...(A); ++i) out[i] = sizes[i];
    return (int)sizeof...(A);
}

inline unsigned char* dynamic_shared() { return (unsigned char*)block.dynamic_shared; }

}  // namespace tirc_emu

// -- what kernels call -------------------------------------------------------------------------

inline void __syncthreads() { tirc_emu::syncthreads(); }
inline void __syncwarp(unsigned mask = 0xffffffffu) {
    int parity;
    tirc_emu::warp_sync(mask & tirc_emu::warp_lanes(tirc_emu::block.current), nullptr, 0, false,
                        &parity);
}
inline unsigned __activemask() {
    int t = tirc_emu::block.current;
    return tirc_emu::warp_lanes(t) & ~tirc_emu::warp_of(t).exited;
}
inline unsigned __ballot_sync(unsigned mask, int predicate) {
    int parity;
    return tirc_emu::warp_sync(mask, nullptr, 0, predicate != 0, &parity).ballot;
}
inline int __any_sync(unsigned mask, int predicate) { return __ballot_sync(mask, predicate) != 0; }
inline int __all_sync(unsigned mask, int predicate) {
    return __ballot_sync(mask, predicate) == mask;
}

// width: segments of `width` lanes, each shuffling within itself (CUDA's rules)
template <typename T>
T __shfl_sync(unsigned mask, T value, int source, int width = 32) {
    int lane = (int)tirc_emu::lane_of(tirc_emu::block.current);
    int base = lane & ~(width - 1);
    return tirc_emu::exchange(mask, value, base + (source & (width - 1)));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T value, unsigned delta, int width = 32) {
    int lane = (int)tirc_emu::lane_of(tirc_emu::block.current);
    int base = lane & ~(width - 1);
    int source = lane - (int)delta;
    return tirc_emu::exchange(mask, value, source < base ? lane : source);
}
template <typename T>
T __shfl_down_sync(unsigned mask, T value, unsigned delta, int width = 32) {
    int lane = (int)tirc_emu::lane_of(tirc_emu::block.current);
    int base = lane & ~(width - 1);
    int source = lane + (int)delta;
    return tirc_emu::exchange(mask, value, source >= base + width ? lane : source);
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T value, int lane_mask, int width = 32) {
    int lane = (int)tirc_emu::lane_of(tirc_emu::block.current);
    int base = lane & ~(width - 1);
    int source = lane ^ lane_mask;
    return tirc_emu::exchange(mask, value, source >= base + width ? lane : source);
}

[[noreturn]] inline void __trap() { tirc_emu::fail("__trap()"); }

// atomics: threads never run at once, so a plain read-modify-write is atomic
template <typename T, typename V>
T atomicAdd(T* address, V value) {
    T old = *address;
    *address = old + (T)value;
    return old;
}
template <typename T, typename V>
T atomicSub(T* address, V value) {
    T old = *address;
    *address = old - (T)value;
    return old;
}
template <typename T, typename V>
T atomicMax(T* address, V value) {
    T old = *address;
    *address = old > (T)value ? old : (T)value;
    return old;
}
template <typename T, typename V>
T atomicMin(T* address, V value) {
    T old = *address;
    *address = old < (T)value ? old : (T)value;
    return old;
}
template <typename T, typename V>
T atomicExch(T* address, V value) {
    T old = *address;
    *address = (T)value;
    return old;
}
template <typename T>
T atomicCAS(T* address, T compare, T value) {
    T old = *address;
    if (old == compare) *address = value;
    return old;
}
template <typename T, typename V>
T atomicAnd(T* address, V value) {
    T old = *address;
    *address = old & (T)value;
    return old;
}
template <typename T, typename V>
T atomicOr(T* address, V value) {
    T old = *address;
    *address = old | (T)value;
    return old;
}
inline void __threadfence() {}
inline void __threadfence_block() {}

// -- wmma: each thread holds a whole tile (the warp's shared fragment, copied per lane) -------
// Right for programs that touch fragments only through these calls, as tirc's do; a program
// reading fragment elements (frag.x[i]) by lane would need the GPU's per-lane layout.

namespace nvcuda {
namespace wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K>
struct shape;
template <int M, int N, int K>
struct shape<matrix_a, M, N, K> {
    static constexpr int rows = M, cols = K;
};
template <int M, int N, int K>
struct shape<matrix_b, M, N, K> {
    static constexpr int rows = K, cols = N;
};
template <int M, int N, int K>
struct shape<accumulator, M, N, K> {
    static constexpr int rows = M, cols = N;
};

template <typename Use, int M, int N, int K, typename T, typename Layout = void>
struct fragment {
    static constexpr int rows = shape<Use, M, N, K>::rows, cols = shape<Use, M, N, K>::cols;
    static constexpr int num_elements = rows * cols;
    T x[rows * cols];  // row-major, whatever the layout in memory
};

template <typename Use, int M, int N, int K, typename T, typename L, typename V>
inline void fill_fragment(fragment<Use, M, N, K, T, L>& f, const V& value) {
    for (int i = 0; i < f.num_elements; ++i) f.x[i] = (T)value;
}

template <typename F, typename P>
inline void load_tile(F& f, const P* p, unsigned ldm, bool row_major) {
    for (int r = 0; r < F::rows; ++r)
        for (int c = 0; c < F::cols; ++c)
            f.x[r * F::cols + c] = p[row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r];
}
template <typename Use, int M, int N, int K, typename T, typename P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, row_major>& f, const P* p, unsigned ldm) {
    load_tile(f, p, ldm, true);
}
template <typename Use, int M, int N, int K, typename T, typename P>
inline void load_matrix_sync(fragment<Use, M, N, K, T, col_major>& f, const P* p, unsigned ldm) {
    load_tile(f, p, ldm, false);
}
template <int M, int N, int K, typename T, typename P>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T, void>& f, const P* p,
                             unsigned ldm, layout_t layout) {
    load_tile(f, p, ldm, layout == mem_row_major);
}
template <int M, int N, int K, typename T, typename P>
inline void store_matrix_sync(P* p, const fragment<accumulator, M, N, K, T, void>& f,
                              unsigned ldm, layout_t layout) {
    for (int r = 0; r < M; ++r)
        for (int c = 0; c < N; ++c)
            p[layout == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r] =
                f.x[r * N + c];
}
// products exact, sums in float (or double for double tiles), rounded once into D's type
template <int M, int N, int K, typename TD, typename TA, typename LA, typename TB, typename LB,
          typename TC>
inline void mma_sync(fragment<accumulator, M, N, K, TD, void>& d,
                     const fragment<matrix_a, M, N, K, TA, LA>& a,
                     const fragment<matrix_b, M, N, K, TB, LB>& b,
                     const fragment<accumulator, M, N, K, TC, void>& c) {
    using Sum = std::conditional_t<std::is_same_v<TC, double>, double,
                                   std::conditional_t<std::is_integral_v<TC>, long long, float>>;
    TD result[M * N];
    for (int r = 0; r < M; ++r)
        for (int col = 0; col < N; ++col) {
            Sum sum = (Sum)c.x[r * N + col];
            for (int k = 0; k < K; ++k)
                sum += (Sum)a.x[r * K + k] * (Sum)b.x[k * N + col];
            result[r * N + col] = (TD)sum;
        }
    for (int i = 0; i < M * N; ++i) d.x[i] = result[i];
    __syncwarp();  // a warp-wide instruction: its lanes meet here
}
}  // namespace wmma
}  // namespace nvcuda
