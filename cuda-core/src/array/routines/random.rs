//! Random arrays from a counter-based generator (Philox4x32-10): `rand`, `randn`, `uniform`
//! and `randint`, like `cupy.random`.
//!
//! ```no_run
//! use cuda_core::{random, Device};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = random::rand::<f32>(&stream, 1 << 20, 42)?;
//! let mut generator = random::Generator::new(7);
//! let noise = generator.randn::<f64>(&stream, [256, 256])?;
//! let dice = generator.randint::<i32>(&stream, 100, 1, 7)?;
//! # Ok(())
//! # }
//! ```
//!
//! Element `i` of a call is a function of the seed, the generator's position and `i` alone:
//! Philox block `offset + i / k` (its 128 bits give `k` elements: 4 of a 32-bit or smaller
//! float, 2 of `f64` or of an integer) keyed by the seed, so values do not depend on the launch
//! shape or the device and the same seed gives the same arrays on every run. [`philox4x32_10`]
//! is the block function, for checking values on the host. Each call moves its [`Generator`]
//! past the blocks it used, so successive calls give independent values.
//!
//! Mappings: uniform floats are `k / 2^b` for `b` random bits (23 for `f32`, 52 for `f64`, 11
//! for `f16`, 8 for `bf16`: every value is exact, so `1.0` is never drawn; for `f32` and `f64`
//! the top bits become the mantissa of a number in `[1, 2)`, less one); normals by the
//! Box-Muller transform of two uniforms; integers in `[low, high)` as the high 64 bits of a
//! 64-bit random value times the range (bias below `range / 2^64`).

use cuda_driver::Stream;

use crate::array::device_array::{DeviceArray, IntoShape};
use crate::array::dtype::{DType, Element};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::registry::{grid_for, kernel, KernelKey, LoadedTable};
use crate::array::kernels::ArgType;
use crate::error::{Error, Result};

/// Threads per block.
const BLOCK: u32 = 256;
/// Resident blocks per SM the grid is sized to.
const BLOCKS_PER_SM: u32 = 8;

/// Philox4x32's multipliers and Weyl key increments.
const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

/// The Philox4x32-10 block function: 128 random bits for a counter and a key (the device
/// generator's, on the host).
pub fn philox4x32_10(mut counter: [u32; 4], mut key: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            key[0] = key[0].wrapping_add(W0);
            key[1] = key[1].wrapping_add(W1);
        }
        let p0 = u64::from(M0) * u64::from(counter[0]);
        let p1 = u64::from(M1) * u64::from(counter[2]);
        counter = [
            (p1 >> 32) as u32 ^ counter[1] ^ key[0],
            p1 as u32,
            (p0 >> 32) as u32 ^ counter[3] ^ key[1],
            p0 as u32,
        ];
    }
    counter
}

const DEVICE_CODE: &str = r#"
// The round keys of a seed: the same for every block, so computed once per thread.
struct cc_keys { unsigned k0[10], k1[10]; };
__device__ __forceinline__ cc_keys cc_round_keys(const unsigned long long seed) {
    cc_keys k;
    #pragma unroll
    for (int r = 0; r < 10; ++r) { k.k0[r] = (unsigned)seed + r * 0x9E3779B9u; k.k1[r] = (unsigned)(seed >> 32) + r * 0xBB67AE85u; }
    return k;
}
__device__ __forceinline__ uint4 cc_philox(const unsigned long long block, const cc_keys &k) {
    uint4 c = make_uint4((unsigned)block, (unsigned)(block >> 32), 0u, 0u);
    #pragma unroll
    for (int r = 0; r < 10; ++r) {
        const unsigned hi0 = __umulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
        const unsigned hi1 = __umulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
        c = make_uint4(hi1 ^ c.y ^ k.k0[r], lo1, hi0 ^ c.w ^ k.k1[r], lo0);
    }
    return c;
}
// [0, 1) from the high 23 bits, through the bits of [1, 2) (no integer conversion).
__device__ __forceinline__ float cc_unit23(const unsigned u) { return __uint_as_float(0x3f800000u | (u >> 9)) - 1.0f; }
// [0, 1) from 52 bits (the first word's 32 and the second's high 20), the same way.
__device__ __forceinline__ double cc_unit52(const unsigned hi, const unsigned lo) {
    return __longlong_as_double(0x3ff0000000000000LL | ((long long)hi << 20) | (lo >> 12)) - 1.0;
}
"#;

/// A distribution of the generator's kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Distribution {
    /// `a + (b - a) * u`, `u` uniform in `[0, 1)` (`rand` is `a = 0, b = 1`).
    Uniform,
    /// `a + b * z`, `z` standard normal.
    Normal,
    /// `low + floor(u * range)` over 64 bits.
    Integer,
}

impl Distribution {
    /// Elements of `dtype` one Philox block gives.
    fn per_block(self, dtype: DType) -> u64 {
        match (self, dtype) {
            (Distribution::Integer, _) | (_, DType::F64) => 2,
            _ => 4,
        }
    }

    /// The C++ statements computing `_v[0.._K]` from the block `_r` (a `uint4`).
    fn body(self, dtype: DType) -> String {
        match (self, dtype) {
            (Distribution::Uniform, DType::F64) => "const double _u[2] = {cc_unit52(_r.x, _r.y), cc_unit52(_r.z, _r.w)};\n\
                 #pragma unroll\n                 for (int _j = 0; _j < 2; ++_j) _v[_j] = _type_out(a + (b - a) * _u[_j]);"
                .into(),
            (Distribution::Uniform, DType::F32) => "const unsigned _w[4] = {_r.x, _r.y, _r.z, _r.w};\n\
                 #pragma unroll\n                 for (int _j = 0; _j < 4; ++_j) _v[_j] = (float)a + ((float)b - (float)a) * cc_unit23(_w[_j]);"
                .into(),
            (Distribution::Uniform, half) => {
                let (shift, scale) = match half {
                    DType::F16 => (21, "4.8828125e-04f"),
                    _ => (24, "3.90625e-03f"),
                };
                format!(
                    "const unsigned _w[4] = {{_r.x, _r.y, _r.z, _r.w}};\n\
                     #pragma unroll\n                 for (int _j = 0; _j < 4; ++_j) _v[_j] = _type_out((float)a + ((float)b - (float)a) * ((float)(_w[_j] >> {shift}) * {scale}));"
                )
            }
            (Distribution::Normal, DType::F64) => "const double _u1 = 1.0 - cc_unit52(_r.x, _r.y), _u2 = cc_unit52(_r.z, _r.w);\n\
                 const double _m = sqrt(-2.0 * log(_u1));\n\
                 double _s, _c;\n\
                 sincospi(2.0 * _u2, &_s, &_c);\n\
                 _v[0] = a + b * _m * _c;\n\
                 _v[1] = a + b * _m * _s;"
                .into(),
            (Distribution::Normal, _) => "const float _u1[2] = {1.0f - cc_unit23(_r.x), 1.0f - cc_unit23(_r.z)};\n\
                 const float _u2[2] = {cc_unit23(_r.y), cc_unit23(_r.w)};\n\
                 #pragma unroll\n\
                 for (int _j = 0; _j < 2; ++_j) {\n\
                 \x20   const float _m = sqrtf(-2.0f * logf(_u1[_j]));\n\
                 \x20   float _s, _c;\n\
                 \x20   sincospif(2.0f * _u2[_j], &_s, &_c);\n\
                 \x20   _v[2 * _j] = _type_out((float)a + (float)b * _m * _c);\n\
                 \x20   _v[2 * _j + 1] = _type_out((float)a + (float)b * _m * _s);\n\
                 }"
                .into(),
            (Distribution::Integer, _) => "const unsigned long long _w[2] = {((unsigned long long)_r.x << 32) | _r.y, ((unsigned long long)_r.z << 32) | _r.w};\n\
                 #pragma unroll\n                 for (int _j = 0; _j < 2; ++_j) _v[_j] = (_type_out)(low + (long long)__umul64hi(_w[_j], range));"
                .into(),
        }
    }

    /// The generated kernel `cuda_core_random` writing `n` elements of `dtype`.
    fn source(self, dtype: DType) -> String {
        let k = self.per_block(dtype);
        format!(
            "// generated by cuda-core: random {self:?} {dtype}\n{}typedef {} _type_out;\n{DEVICE_CODE}\
             extern \"C\" __global__ void cuda_core_random(_type_out *__restrict__ out, const unsigned long long n, const unsigned long long seed, const unsigned long long offset, const double a, const double b, const long long low, const unsigned long long range) {{\n\
             \x20   const unsigned long long _blocks = (n + {k} - 1) / {k};\n\
             \x20   const unsigned long long _stride = (unsigned long long)gridDim.x * blockDim.x;\n\
             \x20   const cc_keys _keys = cc_round_keys(seed);\n\
             \x20   for (unsigned long long _i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; _i < _blocks; _i += _stride) {{\n\
             \x20       const uint4 _r = cc_philox(offset + _i, _keys);\n\
             \x20       _type_out _v[{k}];\n\
             \x20       {}\n\
             \x20       const unsigned long long _e = _i * {k};\n\
             \x20       if (_e + {k} <= n) {{\n\
             \x20           struct alignas(sizeof(_type_out) * {k}) _Pack {{ _type_out v[{k}]; }} _p;\n\
             \x20           #pragma unroll\n\
             \x20           for (int _j = 0; _j < {k}; ++_j) _p.v[_j] = _v[_j];\n\
             \x20           reinterpret_cast<_Pack *>(out)[_i] = _p;\n\
             \x20       }} else {{\n\
             \x20           // Constant indices (unrolled), so `_v` stays in registers.\n\
             \x20           #pragma unroll\n\
             \x20           for (int _j = 0; _j < {k}; ++_j) if (_e + _j < n) out[_e + _j] = _v[_j];\n\
             \x20       }}\n\
             \x20   }}\n\
             }}\n",
            crate::array::kernels::PRELUDE,
            dtype.c_name(),
            self.body(dtype).replace('\n', "\n        ")
        )
    }
}

/// A seeded stream of random arrays: each call draws from the Philox blocks after those of the
/// previous call (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generator {
    seed: u64,
    offset: u64,
}

impl Generator {
    /// A generator at the start of the sequence of `seed`.
    pub fn new(seed: u64) -> Self {
        Generator { seed, offset: 0 }
    }

    /// The seed.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The next Philox block the generator will use.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Uniform values in `[0, 1)` (`cupy.random.rand`); floating-point types only.
    pub fn rand<T: Element>(&mut self, stream: &Stream, shape: impl IntoShape) -> Result<DeviceArray<T>> {
        self.uniform(stream, shape, 0.0, 1.0)
    }

    /// Uniform values in `[low, high)` (`cupy.random.uniform`; rounding may give `high` when
    /// the type cannot hold the values between); floating-point types only.
    pub fn uniform<T: Element>(
        &mut self,
        stream: &Stream,
        shape: impl IntoShape,
        low: f64,
        high: f64,
    ) -> Result<DeviceArray<T>> {
        float_only::<T>("uniform")?;
        if !(low.is_finite() && high.is_finite() && low <= high) {
            return Err(Error::InvalidValue(format!(
                "uniform: the bounds [{low}, {high}) are not finite and ordered"
            )));
        }
        self.generate(stream, shape, Distribution::Uniform, (low, high), (0, 0))
    }

    /// Standard normal values (`cupy.random.randn`); floating-point types only.
    pub fn randn<T: Element>(&mut self, stream: &Stream, shape: impl IntoShape) -> Result<DeviceArray<T>> {
        self.normal(stream, shape, 0.0, 1.0)
    }

    /// Normal values of mean `mean` and standard deviation `std` (`cupy.random.normal`);
    /// floating-point types only.
    pub fn normal<T: Element>(
        &mut self,
        stream: &Stream,
        shape: impl IntoShape,
        mean: f64,
        std: f64,
    ) -> Result<DeviceArray<T>> {
        float_only::<T>("normal")?;
        if !(mean.is_finite() && std.is_finite() && std >= 0.0) {
            return Err(Error::InvalidValue(format!(
                "normal: mean {mean} and standard deviation {std} must be finite, the deviation not negative"
            )));
        }
        self.generate(stream, shape, Distribution::Normal, (mean, std), (0, 0))
    }

    /// Integers uniform in `[low, high)` (`cupy.random.randint`); integer types only, with both
    /// bounds in the type's range.
    pub fn randint<T: Element>(
        &mut self,
        stream: &Stream,
        shape: impl IntoShape,
        low: i64,
        high: i64,
    ) -> Result<DeviceArray<T>> {
        let (min, max) = int_range(T::DTYPE)
            .ok_or_else(|| Error::InvalidValue(format!("randint: {} is not an integer type", T::DTYPE)))?;
        if low >= high || i128::from(low) < min || i128::from(high) - 1 > max {
            return Err(Error::InvalidValue(format!(
                "randint: [{low}, {high}) is empty or outside the range of {}",
                T::DTYPE
            )));
        }
        let range = (i128::from(high) - i128::from(low)) as u64;
        self.generate(stream, shape, Distribution::Integer, (0.0, 0.0), (low, range))
    }

    fn generate<T: Element>(
        &mut self,
        stream: &Stream,
        shape: impl IntoShape,
        distribution: Distribution,
        (a, b): (f64, f64),
        (low, range): (i64, u64),
    ) -> Result<DeviceArray<T>> {
        let out = DeviceArray::<T>::empty(stream, shape)?;
        let per_block = distribution.per_block(T::DTYPE);
        let blocks = (out.len() as u64).div_ceil(per_block);
        let offset = self.offset;
        self.offset = offset
            .checked_add(blocks)
            .ok_or_else(|| Error::InvalidValue("random: the generator's sequence is used up (2^64 blocks)".into()))?;
        if out.is_empty() {
            return Ok(out);
        }
        let variant = distribution as u64;
        let loaded = kernel(KernelKey::Named("cuda_core_random"), || Ok(LoadedTable::default()))?.get_or_load(
            stream.context(),
            &[ArgType::Array(T::DTYPE)],
            variant,
            || Ok((distribution.source(T::DTYPE), vec!["cuda_core_random".to_string()])),
        )?;
        let grid = grid_for(blocks, BLOCK, loaded.sm_count, BLOCKS_PER_SM);
        let mut launch = Launch::on(stream);
        launch
            .value(*out.ptr_ref())
            .value(out.len() as u64)
            .value(self.seed)
            .value(offset)
            .value(a)
            .value(b)
            .value(low)
            .value(range);
        // SAFETY: the kernel takes exactly these eight parameters (the output's address, the
        // count, the seed, the offset, two doubles, a signed and an unsigned 64-bit integer);
        // it writes elements below `n` of the new C-contiguous array of `n` elements of the
        // compiled type, whole packs only where `k` elements fit (pool blocks start at
        // multiples of 512 bytes), and the array is ordered on `stream`, on which it was allocated.
        unsafe { launch.run(&loaded.functions[0], (grid, 1), (BLOCK, 1))? };
        Ok(out)
    }
}

fn float_only<T: Element>(what: &str) -> Result<()> {
    match T::DTYPE.is_float() {
        true => Ok(()),
        false => Err(Error::InvalidValue(format!(
            "{what}: {} is not a floating-point type (randint draws integers)",
            T::DTYPE
        ))),
    }
}

/// The least and greatest values of an integer type.
fn int_range(dtype: DType) -> Option<(i128, i128)> {
    let bits = dtype.size() as u32 * 8;
    match (dtype.is_signed_int(), dtype.is_unsigned_int()) {
        (true, _) => Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)),
        (_, true) => Some((0, (1i128 << bits) - 1)),
        _ => None,
    }
}

/// Uniform values in `[0, 1)` from a new [`Generator`] of `seed`.
pub fn rand<T: Element>(stream: &Stream, shape: impl IntoShape, seed: u64) -> Result<DeviceArray<T>> {
    Generator::new(seed).rand(stream, shape)
}

/// Standard normal values from a new [`Generator`] of `seed`.
pub fn randn<T: Element>(stream: &Stream, shape: impl IntoShape, seed: u64) -> Result<DeviceArray<T>> {
    Generator::new(seed).randn(stream, shape)
}

/// Uniform values in `[low, high)` from a new [`Generator`] of `seed`.
pub fn uniform<T: Element>(
    stream: &Stream,
    shape: impl IntoShape,
    low: f64,
    high: f64,
    seed: u64,
) -> Result<DeviceArray<T>> {
    Generator::new(seed).uniform(stream, shape, low, high)
}

/// Integers in `[low, high)` from a new [`Generator`] of `seed`.
pub fn randint<T: Element>(
    stream: &Stream,
    shape: impl IntoShape,
    low: i64,
    high: i64,
    seed: u64,
) -> Result<DeviceArray<T>> {
    Generator::new(seed).randint(stream, shape, low, high)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arch, CompileTarget, Program, ProgramOptions};

    #[test]
    fn philox_matches_the_published_known_answers() {
        assert_eq!(
            philox4x32_10([0; 4], [0; 2]),
            [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]
        );
        assert_eq!(
            philox4x32_10([u32::MAX; 4], [u32::MAX; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10(
                [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
                [0xa4093822, 0x299f31d0]
            ),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn every_distribution_compiles_for_its_types() {
        let options = ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        };
        let floats = [DType::F16, DType::BF16, DType::F32, DType::F64];
        let cases = floats
            .iter()
            .flat_map(|&d| [(Distribution::Uniform, d), (Distribution::Normal, d)])
            .chain([DType::I8, DType::U16, DType::I32, DType::U64].map(|d| (Distribution::Integer, d)));
        for (distribution, dtype) in cases {
            let source = distribution.source(dtype);
            if let Err(error) = Program::new(source.clone(), options.clone()).compile(CompileTarget::Ptx) {
                panic!("{distribution:?} of {dtype}: {error}\n{source}");
            }
        }
    }

    #[test]
    fn integer_ranges_and_block_sizes() {
        assert_eq!(int_range(DType::I8), Some((-128, 127)));
        assert_eq!(int_range(DType::U64), Some((0, u64::MAX as i128)));
        assert_eq!(int_range(DType::F32), None);
        assert_eq!(Distribution::Uniform.per_block(DType::F32), 4);
        assert_eq!(Distribution::Uniform.per_block(DType::F64), 2);
        assert_eq!(Distribution::Integer.per_block(DType::I8), 2);
    }
}
