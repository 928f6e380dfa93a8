// Reference timing of C++ std::rotate for benchmarks/cpu_bench.py.
//
// Usage: std_rotate <u8|f64> <n_elements> <repeats> <flush_mib> <shift> [<shift> ...]
// For each shift (numpy.roll convention: elements move toward larger indices)
// prints "<shift> <median seconds>" for
//     std::rotate(v.begin(), v.begin() + (n - shift), v.end())
// on a std::vector of n elements filled with non-zero pseudo-random values.
// Before each timed run flush_mib MiB are written to evict the vector from cache
// (the same protocol cpu_bench.py uses for its own contenders).
// Build: g++ -O3 -o std_rotate std_rotate.cpp
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

template <typename T>
static int run(std::size_t n, int repeats, std::size_t flush_mib, int argc, char** argv) {
    std::vector<T> v(n);
    std::vector<unsigned char> flush(flush_mib << 20);
    std::uint64_t state = 0x9E3779B97F4A7C15ull;
    for (std::size_t i = 0; i < n; ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        v[i] = static_cast<T>((state >> 33) % 250 + 1);  // never zero
    }
    for (int a = 5; a < argc; ++a) {
        std::size_t shift = std::strtoull(argv[a], nullptr, 10);
        std::vector<double> seconds;
        for (int r = -1; r < repeats; ++r) {  // r == -1: warm-up
            for (auto& byte : flush) byte += 1;
            auto t0 = std::chrono::steady_clock::now();
            std::rotate(v.begin(), v.begin() + (n - shift), v.end());
            auto t1 = std::chrono::steady_clock::now();
            if (r >= 0) seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
        }
        std::sort(seconds.begin(), seconds.end());
        // Print a value derived from the data so the rotation cannot be optimised away.
        std::printf("%zu %.9f %d\n", shift, seconds[seconds.size() / 2],
                    static_cast<int>(v[n / 2]) + static_cast<int>(flush.empty() ? 0 : flush[0]));
    }
    return 0;
}

int main(int argc, char** argv) {
    if (argc < 6) {
        std::fprintf(stderr, "usage: %s <u8|f64> <n> <repeats> <flush_mib> <shift>...\n", argv[0]);
        return 2;
    }
    std::size_t n = std::strtoull(argv[2], nullptr, 10);
    int repeats = std::atoi(argv[3]);
    std::size_t flush_mib = std::strtoull(argv[4], nullptr, 10);
    if (std::strcmp(argv[1], "u8") == 0) return run<std::uint8_t>(n, repeats, flush_mib, argc, argv);
    if (std::strcmp(argv[1], "f64") == 0) return run<double>(n, repeats, flush_mib, argc, argv);
    std::fprintf(stderr, "unknown type %s\n", argv[1]);
    return 2;
}
