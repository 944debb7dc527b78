// Device helpers every kernel cuda-core generates starts with: the crate's f16 and bf16
// types, converted with one rounding from float and double.
struct cuda_core_f16 {
    unsigned short bits;
    cuda_core_f16() = default;
    __device__ cuda_core_f16(float f) { asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(f)); }
    __device__ cuda_core_f16(double d) { asm("cvt.rn.f16.f64 %0, %1;" : "=h"(bits) : "d"(d)); }
    __device__ cuda_core_f16(int v) : cuda_core_f16((float)v) {}
    __device__ operator float() const { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(bits)); return f; }
};
struct cuda_core_bf16 {
    unsigned short bits;
    cuda_core_bf16() = default;
    __device__ cuda_core_bf16(float f) {
        unsigned u = __float_as_uint(f);
        if ((u & 0x7fffffffu) > 0x7f800000u) bits = (unsigned short)((u >> 16) | 0x40u);
        else bits = (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
    }
    // Once rounded: to float toward zero with the lost bits kept as a sticky last bit (round
    // to odd), then to nearest even, which is the double's nearest bf16.
    __device__ cuda_core_bf16(double d) {
        float f = __double2float_rz(d);
        if ((double)f != d) f = __uint_as_float(__float_as_uint(f) | 1u);
        *this = cuda_core_bf16(f);
    }
    __device__ cuda_core_bf16(int v) : cuda_core_bf16((float)v) {}
    __device__ operator float() const { return __uint_as_float(((unsigned)bits) << 16); }
};
