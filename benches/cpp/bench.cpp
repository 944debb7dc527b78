// The C++ floor: raw driver API and NVRTC, measured with the same method and
// the same kernel source as the Rust and Python benchmarks.
//
// Build (run.sh does this on the GPU machine):
//   g++ -O2 -std=c++17 -I/usr/local/cuda/include bench.cpp -o bench-cpp
//       -L/usr/local/cuda/lib64 -lnvrtc -L/usr/local/nvidia/lib64 -L/usr/local/cuda/lib64/stubs -lcuda
// Run: bench-cpp path/to/bench.cu [launch|other]   (one part only: the launch rows, or the rest)
// Prints one `ROW {json}` line per figure (see benches/src/lib.rs).

#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Keep in step with benches/src/lib.rs.
constexpr int kLaunchBatch = 256;
constexpr int kLaunchWarmup = 20;
constexpr int kLaunchBatches = 200;
constexpr unsigned long long kAxpyN = 1ull << 16;
constexpr unsigned kAxpyBlock = 256;
constexpr size_t kBandwidthElems = size_t(1) << 28;
constexpr int kBandwidthReps = 20;
constexpr double kBandwidthWarmupMs = 300.0;  // as BANDWIDTH_WARMUP_MS in benches/src/lib.rs
constexpr int kNvrtcReps = 10;

struct Failure {
    std::string what;
};

void check(CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) {
        const char* name = nullptr;
        cuGetErrorName(r, &name);
        throw Failure{std::string(what) + ": " + (name ? name : "unknown") + " (" + std::to_string(int(r)) + ")"};
    }
}

void check_nvrtc(nvrtcResult r, const char* what) {
    if (r != NVRTC_SUCCESS) throw Failure{std::string(what) + ": " + nvrtcGetErrorString(r)};
}

std::string json(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\t': out += "\\t"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

void emit(const std::string& bench, const std::string& cas, const std::string& impl, const std::string& unit,
          double value, bool ok, const std::string& status, const std::string& detail) {
    std::ostringstream v;
    if (ok && std::isfinite(value)) {
        v.precision(9);
        v << value;
    } else {
        v << "null";
    }
    std::printf("ROW {\"bench\":%s,\"case\":%s,\"impl\":%s,\"value\":%s,\"unit\":%s,\"status\":%s,\"detail\":%s}\n",
                json(bench).c_str(), json(cas).c_str(), json(impl).c_str(), v.str().c_str(), json(unit).c_str(),
                json(ok ? "ok" : status).c_str(), json(detail).c_str());
    std::fflush(stdout);
}

struct Stats {
    double median, p10, p90;
    size_t samples;
    int per_sample;
    std::string detail() const {
        char buf[160];
        std::snprintf(buf, sizeof buf, "median of %zu samples of %d op(s); p10 %.4f, p90 %.4f", samples, per_sample,
                      p10, p90);
        return buf;
    }
};

Stats summarise(std::vector<double> samples, int per_sample) {
    std::sort(samples.begin(), samples.end());
    auto at = [&](double q) { return samples[size_t(std::lround((samples.size() - 1) * q))]; };
    return Stats{at(0.5), at(0.1), at(0.9), samples.size(), per_sample};
}

// Times `batches` batches of `per_batch` calls of `body` (microseconds per call), after `warmup` batches;
// `sync` runs before every batch, outside the timed part.
template <class Sync, class Body>
Stats time_batches(int warmup, int batches, int per_batch, Sync sync, Body body) {
    std::vector<double> samples;
    for (int b = 0; b < warmup + batches; ++b) {
        sync();
        auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < per_batch; ++i) body();
        auto end = std::chrono::steady_clock::now();
        if (b >= warmup) samples.push_back(std::chrono::duration<double, std::micro>(end - start).count() / per_batch);
    }
    sync();
    return summarise(samples, per_batch);
}

template <class F>
void row(const std::string& bench, const std::string& cas, const std::string& impl, const std::string& unit, F f) {
    try {
        Stats s = f();
        emit(bench, cas, impl, unit, s.median, true, "ok", s.detail());
    } catch (const Failure& e) {
        emit(bench, cas, impl, unit, 0, false, "failed: " + e.what, "");
    }
}

std::vector<char> compile(const std::string& source, const std::string& arch) {
    nvrtcProgram program;
    check_nvrtc(nvrtcCreateProgram(&program, source.c_str(), "bench.cu", 0, nullptr, nullptr), "nvrtcCreateProgram");
    std::string option = "--gpu-architecture=" + arch;
    const char* options[] = {option.c_str()};
    nvrtcResult compiled = nvrtcCompileProgram(program, 1, options);
    if (compiled != NVRTC_SUCCESS) {
        size_t size = 0;
        nvrtcGetProgramLogSize(program, &size);
        std::string log(size, '\0');
        nvrtcGetProgramLog(program, &log[0]);
        nvrtcDestroyProgram(&program);
        throw Failure{"NVRTC compile failed: " + log};
    }
    size_t size = 0;
    check_nvrtc(nvrtcGetCUBINSize(program, &size), "nvrtcGetCUBINSize");
    std::vector<char> cubin(size);
    check_nvrtc(nvrtcGetCUBIN(program, cubin.data()), "nvrtcGetCUBIN");
    nvrtcDestroyProgram(&program);
    return cubin;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string part = argc == 3 ? argv[2] : "all";
    if (argc < 2 || argc > 3 || (part != "all" && part != "launch" && part != "other")) {
        std::fprintf(stderr, "usage: %s KERNELS.cu [launch|other]\n", argv[0]);
        return 2;
    }
    const bool launch_part = part != "other", other_part = part != "launch";
    std::ifstream file(argv[1]);
    if (!file) {
        std::fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    std::stringstream text;
    text << file.rdbuf();
    const std::string source = text.str();

    const std::string launch_impl = "C++ cuLaunchKernel";
    const std::string sync_impl = "C++ cuMemAlloc+cuMemFree";
    const std::string async_impl = "C++ cuMemAllocAsync+cuMemFreeAsync";
    const std::string copy_impl = "C++ cuMemcpyDtoDAsync";
    const std::pair<const char*, size_t> sizes[] = {{"1 KiB", 1 << 10}, {"1 MiB", 1 << 20}, {"256 MiB", 256 << 20}};

    CUdevice device;
    CUcontext context;
    CUstream stream;
    int major = 0, minor = 0;
    try {
        check(cuInit(0), "cuInit");
        check(cuDeviceGet(&device, 0), "cuDeviceGet");
        check(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device), "attribute");
        check(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device), "attribute");
        check(cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
        check(cuCtxSetCurrent(context), "cuCtxSetCurrent");
        check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        char name[256] = {0};
        int version = 0;
        cuDeviceGetName(name, sizeof name - 1, device);
        cuDriverGetVersion(&version);
        std::printf("device: %s (sm_%d%d), driver CUDA %d.%d\n", name, major, minor, version / 1000,
                    version % 1000 / 10);
    } catch (const Failure& e) {
        std::printf("no GPU: %s\n", e.what.c_str());
        if (launch_part)
            for (const char* c : {"empty", "axpy"})
                emit("launch", c, launch_impl, "us/launch", 0, false, "not available: " + e.what, "");
        return 0;
    }
    const std::string arch = "sm_" + std::to_string(major) + std::to_string(minor);
    auto sync = [&] { check(cuStreamSynchronize(stream), "cuStreamSynchronize"); };

    if (other_part) row("nvrtc", "cold compile", "C++ NVRTC", "ms", [&] {
        compile(source, arch);  // warm-up: loads NVRTC's builtins
        std::vector<double> samples;
        for (int i = 0; i < kNvrtcReps; ++i) {
            auto start = std::chrono::steady_clock::now();
            compile(source, arch);
            samples.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
        }
        return summarise(samples, 1);
    });

    CUmodule module = nullptr;
    CUfunction empty = nullptr, axpy = nullptr;
    try {
        std::vector<char> cubin = compile(source, arch);
        check(cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
        check(cuModuleGetFunction(&empty, module, "empty"), "cuModuleGetFunction empty");
        check(cuModuleGetFunction(&axpy, module, "axpy"), "cuModuleGetFunction axpy");
    } catch (const Failure& e) {
        if (launch_part)
            for (const char* c : {"empty", "axpy"})
                emit("launch", c, launch_impl, "us/launch", 0, false, "failed: " + e.what, "");
    }
    if (module && launch_part) {
        row("launch", "empty", launch_impl, "us/launch", [&] {
            return time_batches(kLaunchWarmup, kLaunchBatches, kLaunchBatch, sync, [&] {
                check(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "cuLaunchKernel");
            });
        });
        row("launch", "axpy", launch_impl, "us/launch", [&] {
            const size_t n = kAxpyN, bytes = n * sizeof(float);
            std::vector<float> hx(n), hy(n), out(n);
            for (size_t i = 0; i < n; ++i) {
                hx[i] = float(i % 7) * 0.5f;
                hy[i] = float(i % 13);
            }
            CUdeviceptr x = 0, y = 0;
            check(cuMemAlloc(&x, bytes), "cuMemAlloc");
            check(cuMemAlloc(&y, bytes), "cuMemAlloc");
            check(cuMemcpyHtoD(x, hx.data(), bytes), "cuMemcpyHtoD");
            check(cuMemcpyHtoD(y, hy.data(), bytes), "cuMemcpyHtoD");
            float a = 2.0f;
            unsigned long long len = kAxpyN;
            void* params[] = {&a, &x, &y, &len};
            unsigned grid = unsigned((kAxpyN + kAxpyBlock - 1) / kAxpyBlock);
            check(cuLaunchKernel(axpy, grid, 1, 1, kAxpyBlock, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
            sync();
            check(cuMemcpyDtoH(out.data(), y, bytes), "cuMemcpyDtoH");
            for (size_t i = 0; i < n; ++i)
                if (out[i] != 2.0f * hx[i] + hy[i]) throw Failure{"axpy is wrong at " + std::to_string(i)};
            Stats s = time_batches(kLaunchWarmup, kLaunchBatches, kLaunchBatch, sync, [&] {
                check(cuLaunchKernel(axpy, grid, 1, 1, kAxpyBlock, 1, 1, 0, stream, params, nullptr), "cuLaunchKernel");
            });
            cuMemFree(x);
            cuMemFree(y);
            return s;
        });
    }

    if (!other_part) {
        if (module) cuModuleUnload(module);
        cuStreamDestroy(stream);
        cuDevicePrimaryCtxRelease(device);
        return 0;
    }
    for (const auto& size : sizes) {
        const char* label = size.first;
        const size_t bytes = size.second;
        const int batch = bytes >= (64u << 20) ? 8 : 64;
        row("alloc", label, sync_impl, "us/pair", [&] {
            return time_batches(3, 50, batch, sync, [&] {
                CUdeviceptr p;
                check(cuMemAlloc(&p, bytes), "cuMemAlloc");
                check(cuMemFree(p), "cuMemFree");
            });
        });
    }
    CUmemoryPool pool;
    bool pool_ok = cuDeviceGetDefaultMemPool(&pool, device) == CUDA_SUCCESS;
    if (pool_ok) {
        cuuint64_t threshold = UINT64_MAX;  // keep freed memory in the pool across synchronisations
        pool_ok = cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold) == CUDA_SUCCESS;
    }
    for (const auto& size : sizes) {
        const char* label = size.first;
        const size_t bytes = size.second;
        const int batch = (bytes >= (64u << 20) ? 8 : 64) * 4;
        row("alloc", label, async_impl, "us/pair", [&] {
            if (!pool_ok) throw Failure{"the default memory pool is not available"};
            return time_batches(3, 100, batch, sync, [&] {
                CUdeviceptr p;
                check(cuMemAllocAsync(&p, bytes, stream), "cuMemAllocAsync");
                check(cuMemFreeAsync(p, stream), "cuMemFreeAsync");
            });
        });
    }

    try {
        const size_t bytes = kBandwidthElems * sizeof(float);
        CUdeviceptr x = 0, y = 0;
        CUevent start, end;
        check(cuMemAlloc(&x, bytes), "cuMemAlloc");
        check(cuMemAlloc(&y, bytes), "cuMemAlloc");
        float one_and_half = 1.5f, quarter = 0.25f;
        unsigned bits_x, bits_y;
        std::memcpy(&bits_x, &one_and_half, 4);
        std::memcpy(&bits_y, &quarter, 4);
        check(cuMemsetD32(x, bits_x, kBandwidthElems), "cuMemsetD32");
        check(cuMemsetD32(y, bits_y, kBandwidthElems), "cuMemsetD32");
        check(cuEventCreate(&start, 0), "cuEventCreate");
        check(cuEventCreate(&end, 0), "cuEventCreate");
        std::vector<double> ms;
        // The same warm-up as the Rust rows' (benches/src/lib.rs `bandwidth_samples`): at least
        // 3 copies and kBandwidthWarmupMs of them, so every row is timed at settled clocks.
        const auto warmup_start = std::chrono::steady_clock::now();
        for (int rep = 0;; ++rep) {
            float t = 0;
            check(cuEventRecord(start, stream), "cuEventRecord");
            check(cuMemcpyDtoDAsync(y, x, bytes, stream), "cuMemcpyDtoDAsync");
            check(cuEventRecord(end, stream), "cuEventRecord");
            check(cuEventSynchronize(end), "cuEventSynchronize");
            check(cuEventElapsedTime(&t, start, end), "cuEventElapsedTime");
            const double warm_ms =
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - warmup_start).count();
            if (ms.empty() && (rep < 3 || warm_ms < kBandwidthWarmupMs)) continue;
            ms.push_back(t);
            if (ms.size() == static_cast<size_t>(kBandwidthReps)) break;
        }
        float tail = 0;
        check(cuMemcpyDtoH(&tail, y + bytes - 4, 4), "cuMemcpyDtoH");
        if (tail != 1.5f) throw Failure{"the copy did not reach the end of the buffer"};
        Stats s = summarise(ms, 1);
        auto gbps = [&](double m) { return 2.0 * bytes / (m * 1e-3) / 1e9; };
        char detail[200];
        std::snprintf(detail, sizeof detail,
                      "2^28 f32, read+written bytes over the median of %zu event-timed copies (%.3f ms); p10..p90 "
                      "%.0f..%.0f GB/s",
                      s.samples, s.median, gbps(s.p90), gbps(s.p10));
        emit("bandwidth", "D2D copy", copy_impl, "GB/s", gbps(s.median), true, "ok", detail);
        cuEventDestroy(start);
        cuEventDestroy(end);
        cuMemFree(x);
        cuMemFree(y);
    } catch (const Failure& e) {
        emit("bandwidth", "D2D copy", copy_impl, "GB/s", 0, false, "failed: " + e.what, "");
    }

    if (module) cuModuleUnload(module);
    cuStreamDestroy(stream);
    cuDevicePrimaryCtxRelease(device);
    return 0;
}
