// The kernels every benchmark implementation compiles (with NVRTC) and
// launches: C++, Rust (cuda-sys, cuda-driver, cuda-core), CuPy and cuda.core.
// Keep this the only copy: the Rust benches embed it, the C++ and Python ones
// read it from the bundle.

extern "C" __global__ void empty() {}

extern "C" __global__ void axpy(float a, const float* x, float* y, unsigned long long n) {
    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    if (i < n) {
        y[i] = a * x[i] + y[i];
    }
}
