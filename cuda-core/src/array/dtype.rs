//! [`DType`] and [`Element`]: the element types arrays and generated kernels know, and the
//! type promotion rules of expressions ([`DType::promote`]).
//!
//! # Promotion
//! Two array operands of types `a` and `b` combine in `a.promote(b)`, NumPy 2's table for the
//! types there are (PyTorch's for `bfloat16`):
//!
//! | operands | result |
//! |---|---|
//! | the same type | that type |
//! | `bool` and any `t` | `t` |
//! | two signed or two unsigned integers | the wider |
//! | unsigned `u` and wider signed `s` | `s` |
//! | unsigned `u` and signed of at most its width | the signed type twice `u`'s width (`u64`: `f64`) |
//! | an integer and a float `f` | `f` if it holds the integer exactly (`f16`/`bf16`: 8-bit integers; `f32`: up to 16-bit), else the next float that does (`f32` for 16-bit with `f16`/`bf16`, `f64` beyond) |
//! | `f16` and `bf16` | `f32` |
//! | two floats | the wider |
//!
//! Scalars are weak, as in NumPy 2 (NEP 50): a Rust float scalar takes the array's type if that
//! is a float or complex (`2.0 * &x` with `x: f32` is `f32`), else `f64`; a complex scalar
//! (`Complex<f32>` or `Complex<f64>`) gives the complex type of the array's precision
//! ([`DType::with_complex_scalar`]); an integer scalar takes the
//! array's type (`bool` arrays: `i64`). See [`DType::with_float_scalar`] and
//! [`DType::with_int_scalar`]. An integer scalar must fit the integer type it takes (`&x + 300`
//! with `x: u8`, or `&x - (-1)`, is an [`InvalidValue`](crate::Error::InvalidValue) error when
//! the expression is evaluated, as NumPy 2 raises `OverflowError`).
//!
//! Math functions (`sqrt`, `exp`, ...) give [`DType::float_result`]: the smallest float that
//! holds the operand's values (`u8` gives `f16`). `square`, `reciprocal`, `pow`,
//! `floor_divide`, `remainder` and `fmod` of `bool` give `i8` ([`DType::arithmetic_result`]), and
//! `bool - bool`, `-bool` and `sign` of `bool` are errors, as NumPy raises `TypeError` there. True division `/` gives
//! [`DType::quotient_result`]: floats keep their type, `bool` and every integer type give `f64`.
//!
//! Comparisons compare in the promoted type, except a `u64` with a signed integer, which is
//! compared exactly, as NumPy 2.4 does (the promoted type there, `f64`, would round values
//! beyond 2^53). An integer scalar beyond the integer type it takes is compared exactly too
//! (`u8 < 300` is true), where arithmetic with it is an error.

use cuda_driver::DeviceCopy;

/// An element type, with its CUDA C++ name and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DType {
    /// `bool` (one byte, 0 or 1), Rust [`Bool`].
    Bool,
    /// `signed char`
    I8,
    /// `short`
    I16,
    /// `int`
    I32,
    /// `long long`
    I64,
    /// `unsigned char`
    U8,
    /// `unsigned short`
    U16,
    /// `unsigned int`
    U32,
    /// `unsigned long long`
    U64,
    /// IEEE half precision, Rust `half::f16` (CUDA C++ `cuda_core_f16`, which converts to and
    /// from `float`).
    F16,
    /// bfloat16, Rust `half::bf16` (CUDA C++ `cuda_core_bf16`, which converts to and from
    /// `float`).
    BF16,
    /// `float`
    F32,
    /// `double`
    F64,
    /// Single-precision complex, Rust `num_complex::Complex<f32>` (NumPy's `complex64`; CUDA C++
    /// `cuda_core_c64`, two `float`s, real part first).
    C64,
    /// Double-precision complex, Rust `num_complex::Complex<f64>` (NumPy's `complex128`; CUDA
    /// C++ `cuda_core_c128`, two `double`s).
    C128,
}

impl DType {
    /// Every type, in declaration order.
    pub const ALL: [DType; 15] = [
        DType::Bool,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
        DType::C64,
        DType::C128,
    ];

    /// The CUDA C++ spelling used in generated code.
    pub const fn c_name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "signed char",
            DType::I16 => "short",
            DType::I32 => "int",
            DType::I64 => "long long",
            DType::U8 => "unsigned char",
            DType::U16 => "unsigned short",
            DType::U32 => "unsigned int",
            DType::U64 => "unsigned long long",
            DType::F16 => "cuda_core_f16",
            DType::BF16 => "cuda_core_bf16",
            DType::F32 => "float",
            DType::F64 => "double",
            DType::C64 => "cuda_core_c64",
            DType::C128 => "cuda_core_c128",
        }
    }

    /// The NumPy name (`float32`, `int64`, `bool`, ...; `bfloat16` as in PyTorch and ml_dtypes).
    pub const fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::I8 => "int8",
            DType::I16 => "int16",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::U8 => "uint8",
            DType::U16 => "uint16",
            DType::U32 => "uint32",
            DType::U64 => "uint64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }

    /// The C++ type arithmetic on values of this type is done in (`float` for the 16-bit floats).
    pub const fn compute_c_name(self) -> &'static str {
        match self {
            DType::F16 | DType::BF16 => "float",
            other => other.c_name(),
        }
    }

    /// Size in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::Bool | DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }

    /// Whether it is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// Whether it is a complex type.
    pub const fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }

    /// The real type of a complex type's parts (`f32` for `c64`, `f64` for `c128`); other types
    /// are their own real type. NumPy's `abs`, `real`, `imag` and `var` of complex give it.
    pub const fn real_type(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            other => other,
        }
    }

    /// The type NumPy's `angle` gives: the real type of [`float_result`](Self::float_result)
    /// (`c64` gives `f32`, `i32` gives `f64`).
    pub fn angle_result(self) -> DType {
        self.float_result().real_type()
    }

    /// The complex type that holds every value of this type, as NumPy promotes it with complex
    /// (`bool`, 8- and 16-bit integers, `f16`, `bf16` and `f32` give `c64`; wider ones `c128`).
    pub const fn complex_of(self) -> DType {
        match self {
            DType::Bool | DType::I8 | DType::I16 | DType::U8 | DType::U16 => DType::C64,
            DType::F16 | DType::BF16 | DType::F32 | DType::C64 => DType::C64,
            _ => DType::C128,
        }
    }

    /// Whether it is a signed integer type.
    pub const fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// Whether it is an unsigned integer type.
    pub const fn is_unsigned_int(self) -> bool {
        matches!(self, DType::U8 | DType::U16 | DType::U32 | DType::U64)
    }

    /// Whether it is an integer type (not `bool`).
    pub const fn is_int(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    fn signed_of_size(bytes: usize) -> DType {
        match bytes {
            1 => DType::I8,
            2 => DType::I16,
            4 => DType::I32,
            8 => DType::I64,
            _ => DType::F64,
        }
    }

    /// The type two array operands combine in (the module's promotion table).
    pub fn promote(self, other: DType) -> DType {
        use DType::*;
        if self == other {
            return self;
        }
        let (a, b) = (self, other);
        match (a, b) {
            (Bool, t) | (t, Bool) => t,
            // The complex type holding both: the wider of the two complex types each gives.
            _ if a.is_complex() || b.is_complex() => match (a.complex_of(), b.complex_of()) {
                (C64, C64) => C64,
                _ => C128,
            },
            _ if a.is_float() && b.is_float() => match (a, b) {
                (F16, BF16) | (BF16, F16) => F32,
                _ => {
                    if a.size() >= b.size() {
                        a
                    } else {
                        b
                    }
                }
            },
            _ if a.is_float() || b.is_float() => {
                let (float, int) = if a.is_float() { (a, b) } else { (b, a) };
                // The smallest float holding every value of `int`, then the wider of the two.
                let needed = match int.size() {
                    1 => F16,
                    2 => F32,
                    _ => F64,
                };
                match (float, needed) {
                    (BF16, F16) => BF16,
                    (f, F16) => f,
                    (F64, _) => F64,
                    (_, needed) => needed,
                }
            }
            _ if a.is_signed_int() == b.is_signed_int() => {
                if a.size() >= b.size() {
                    a
                } else {
                    b
                }
            }
            _ => {
                let (signed, unsigned) = if a.is_signed_int() { (a, b) } else { (b, a) };
                if unsigned.size() < signed.size() {
                    signed
                } else {
                    DType::signed_of_size(unsigned.size() * 2)
                }
            }
        }
    }

    /// The type of an array of this type combined with a float scalar (NEP 50: weak scalar).
    pub fn with_float_scalar(self) -> DType {
        if self.is_float() || self.is_complex() {
            self
        } else {
            DType::F64
        }
    }

    /// The type of an array of this type combined with a complex scalar (NEP 50: weak scalar):
    /// complex types keep theirs, `f16`, `bf16` and `f32` give `c64`, the others `c128`.
    pub fn with_complex_scalar(self) -> DType {
        match self {
            DType::C64 | DType::C128 => self,
            DType::F16 | DType::BF16 | DType::F32 => DType::C64,
            _ => DType::C128,
        }
    }

    /// The type of an array of this type combined with an integer scalar (NEP 50: weak scalar).
    pub fn with_int_scalar(self) -> DType {
        match self {
            DType::Bool => DType::I64,
            other => other,
        }
    }

    /// The float type math functions (`sqrt`, `exp`, ...; not `/`) of this type give, as
    /// in NumPy: floats keep their type; `bool` and 8-bit integers give `f16`, 16-bit `f32`,
    /// wider `f64`.
    pub fn float_result(self) -> DType {
        if self.is_float() || self.is_complex() {
            return self;
        }
        match self.size() {
            1 => DType::F16,
            2 => DType::F32,
            _ => DType::F64,
        }
    }

    /// The type true division (`/`) gives, as in NumPy: floats keep their type; `bool` and every
    /// integer type give `f64` (`u8 / u8` is `f64`, unlike [`float_result`](Self::float_result)).
    pub fn quotient_result(self) -> DType {
        match self.is_float() || self.is_complex() {
            true => self,
            false => DType::F64,
        }
    }

    /// The type of `square`, `reciprocal`, `pow`, `floor_divide`, `remainder` and `fmod`, as in
    /// NumPy: `bool` has no form of them there, so `bool` operands give `i8` (NumPy's smallest
    /// integer loop); every other type keeps its type.
    pub fn arithmetic_result(self) -> DType {
        match self {
            DType::Bool => DType::I8,
            other => other,
        }
    }

    /// The decimal digits NumPy's `finfo(dtype).precision` gives a float type (`f16` 3, `bf16`
    /// 2, `f32` 6, `f64` 15); `None` for the others.
    pub(crate) const fn decimal_precision(self) -> Option<u32> {
        match self {
            DType::F16 => Some(3),
            DType::BF16 => Some(2),
            DType::F32 => Some(6),
            DType::F64 | DType::C128 => Some(15),
            DType::C64 => Some(6),
            _ => None,
        }
    }

    /// The range of an integer type (`bool`: 0 to 1), `None` for floats.
    pub(crate) fn int_range(self) -> Option<(i128, i128)> {
        let bits = 8 * self.size() as u32;
        match self {
            DType::Bool => Some((0, 1)),
            d if d.is_signed_int() => Some((-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)),
            d if d.is_unsigned_int() => Some((0, (1i128 << bits) - 1)),
            _ => None,
        }
    }

    /// The type a C++ type name in a parameter list denotes (`float`, `unsigned int`,
    /// `int32_t`, `half`, ...), with runs of spaces ignored; `None` for anything else.
    pub fn from_c_name(name: &str) -> Option<DType> {
        let words: Vec<&str> = name.split_whitespace().collect();
        let dtype = match words.join(" ").as_str() {
            "bool" => DType::Bool,
            "signed char" | "int8_t" => DType::I8,
            "short" | "int16_t" => DType::I16,
            "int" | "int32_t" => DType::I32,
            "long long" | "int64_t" => DType::I64,
            "unsigned char" | "uint8_t" => DType::U8,
            "unsigned short" | "uint16_t" => DType::U16,
            "unsigned int" | "unsigned" | "uint32_t" => DType::U32,
            "unsigned long long" | "uint64_t" | "size_t" => DType::U64,
            "cuda_core_f16" | "half" | "__half" => DType::F16,
            "cuda_core_bf16" | "bfloat16" | "__nv_bfloat16" => DType::BF16,
            "float" => DType::F32,
            "double" => DType::F64,
            "cuda_core_c64" | "cuComplex" | "cuFloatComplex" => DType::C64,
            "cuda_core_c128" | "cuDoubleComplex" => DType::C128,
            _ => return None,
        };
        Some(dtype)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A boolean element: one byte, `0` or `1` when written by generated code (Rust's `bool` may
/// not hold other bytes, which device memory can, so arrays of truth values hold `Bool`).
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Bool(pub u8);

impl Bool {
    /// `Bool(1)`.
    pub const TRUE: Bool = Bool(1);
    /// `Bool(0)`.
    pub const FALSE: Bool = Bool(0);

    /// Whether the byte is not zero.
    pub const fn get(self) -> bool {
        self.0 != 0
    }
}

impl From<bool> for Bool {
    fn from(value: bool) -> Self {
        Bool(value as u8)
    }
}

impl From<Bool> for bool {
    fn from(value: Bool) -> Self {
        value.get()
    }
}

impl PartialEq<bool> for Bool {
    fn eq(&self, other: &bool) -> bool {
        self.get() == *other
    }
}

impl std::fmt::Debug for Bool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.get(), f)
    }
}

impl std::fmt::Display for Bool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get() { "True" } else { "False" })
    }
}

/// `value` rounded to nearest (ties to even) to a binary format of `fraction` fraction bits and
/// `exponent` exponent bits (IEEE layout, as `u16` bits), straight from the `f64`: rounding
/// through `f32` first would round twice (`1 + 2^-11 + 2^-40` would become `1` in `f16`).
/// `half`'s own `from_f64` goes through `f32` or drops the low 32 bits, so it is not used.
fn round_f64_to_bits(value: f64, fraction: u32, exponent: u32) -> u16 {
    let bits = value.to_bits();
    let sign = ((bits >> 63) as u16) << 15;
    let biased = ((bits >> 52) & 0x7ff) as i64;
    let mantissa = bits & ((1u64 << 52) - 1);
    let max_biased = (1u64 << exponent) - 1;
    let infinity = (max_biased << fraction) as u16;
    if biased == 0x7ff {
        return match mantissa {
            0 => sign | infinity,
            // A quiet NaN keeping the payload's top bits.
            m => sign | infinity | (1 << (fraction - 1)) as u16 | (m >> (52 - fraction)) as u16,
        };
    }
    if biased == 0 {
        // f64 subnormals are far below the smallest f16 and bf16 subnormals.
        return sign;
    }
    let significand = mantissa | (1u64 << 52);
    let bias = (1i64 << (exponent - 1)) - 1;
    let target = biased - 1023 + bias;
    // Bits to drop: the extra fraction bits, and more below the smallest normal.
    let shift = 52 - fraction as i64 + (1 - target).max(0);
    if shift > 60 {
        return sign;
    }
    let kept = significand >> shift;
    let rest = significand & ((1u64 << shift) - 1);
    let half = 1u64 << (shift - 1);
    let rounded = match rest.cmp(&half) {
        std::cmp::Ordering::Greater => kept + 1,
        std::cmp::Ordering::Equal => kept + (kept & 1),
        std::cmp::Ordering::Less => kept,
    };
    // Normal: the exponent field plus the significand (its carry bumps the exponent);
    // subnormal: the significand alone (a carry makes the smallest normal).
    let magnitude = match target >= 1 {
        true => (((target - 1) as u64) << fraction) + rounded,
        false => rounded,
    };
    match magnitude >= max_biased << fraction {
        true => sign | infinity,
        false => sign | magnitude as u16,
    }
}

/// `value` rounded once to `f16` (nearest, ties to even).
pub(crate) fn f16_from_f64(value: f64) -> half::f16 {
    half::f16::from_bits(round_f64_to_bits(value, 10, 5))
}

/// `value` rounded once to `bf16` (nearest, ties to even).
pub(crate) fn bf16_from_f64(value: f64) -> half::bf16 {
    half::bf16::from_bits(round_f64_to_bits(value, 7, 8))
}

/// The exact value of an integer element (`None` for floats and `Bool`), read through its own
/// type rather than `f64`.
pub(crate) fn int_value<T: Element>(value: T) -> Option<i128> {
    fn read<T, U: Copy + Into<i128>>(value: &T) -> i128 {
        assert_eq!(std::mem::size_of::<T>(), std::mem::size_of::<U>());
        // SAFETY: `T` is the integer type `U` (its `DTYPE` says so, sizes checked above), and
        // every bit pattern is a valid integer.
        unsafe { std::ptr::read_unaligned((value as *const T).cast::<U>()) }.into()
    }
    Some(match T::DTYPE {
        DType::I8 => read::<T, i8>(&value),
        DType::I16 => read::<T, i16>(&value),
        DType::I32 => read::<T, i32>(&value),
        DType::I64 => read::<T, i64>(&value),
        DType::U8 => read::<T, u8>(&value),
        DType::U16 => read::<T, u16>(&value),
        DType::U32 => read::<T, u32>(&value),
        DType::U64 => read::<T, u64>(&value),
        _ => return None,
    })
}

// SAFETY: `repr(transparent)` over `u8`; every byte is a valid `Bool`.
unsafe impl DeviceCopy for Bool {}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is one of the [`DType`]s. Sealed: the mapping decides how generated
/// kernels read the memory, so only this crate's exact matches implement it.
pub trait Element: DeviceCopy + Send + Sync + sealed::Sealed {
    /// The element type.
    const DTYPE: DType;
    /// The value as an `f64` (exact for every type but the 64-bit integers beyond 2^53; the real
    /// part of a complex value, as NumPy's cast of complex to real keeps).
    fn to_f64(self) -> f64;
    /// The value nearest `value` (saturating for integers; `!= 0` for `Bool`; a complex value
    /// with imaginary part zero).
    fn from_f64(value: f64) -> Self;
    /// The imaginary part as an `f64` (zero for the real types).
    fn imaginary_f64(self) -> f64 {
        0.0
    }
    /// What [`sum`](crate::DeviceArray::sum) and [`prod`](crate::DeviceArray::prod) give, as in
    /// NumPy: `i64` for `Bool` and signed integers, `u64` for unsigned ones, the type itself for
    /// floats and complex.
    type Sum: Element;
    /// What [`mean`](crate::DeviceArray::mean) gives, as in NumPy: `f64` for `Bool` and
    /// integers, the type itself for floats and complex.
    type Mean: Element;
    /// What [`var`](crate::DeviceArray::var) and [`std`](crate::DeviceArray::std) give, as in
    /// NumPy: [`Mean`](Self::Mean) for real types, the part type (`f32`, `f64`) for complex.
    type Var: Element;
}

macro_rules! element {
    ($($ty:ty => $dtype:ident, $sum:ty, $mean:ty);*) => {
        $(
            impl sealed::Sealed for $ty {}
            impl Element for $ty {
                const DTYPE: DType = DType::$dtype;
                type Sum = $sum;
                type Mean = $mean;
                type Var = $mean;
                fn to_f64(self) -> f64 {
                    self as f64
                }
                fn from_f64(value: f64) -> Self {
                    value as $ty
                }
            }
        )*
    };
}

element!(
    i8 => I8, i64, f64;
    i16 => I16, i64, f64;
    i32 => I32, i64, f64;
    i64 => I64, i64, f64;
    u8 => U8, u64, f64;
    u16 => U16, u64, f64;
    u32 => U32, u64, f64;
    u64 => U64, u64, f64;
    f32 => F32, f32, f32;
    f64 => F64, f64, f64
);

macro_rules! half_element {
    ($($ty:ty => $dtype:ident, $from_f64:ident),*) => {
        $(
            impl sealed::Sealed for $ty {}
            impl Element for $ty {
                const DTYPE: DType = DType::$dtype;
                type Sum = $ty;
                type Mean = $ty;
                type Var = $ty;
                fn to_f64(self) -> f64 {
                    self.to_f64()
                }
                fn from_f64(value: f64) -> Self {
                    $from_f64(value)
                }
            }
        )*
    };
}

half_element!(half::f16 => F16, f16_from_f64, half::bf16 => BF16, bf16_from_f64);

macro_rules! complex_element {
    ($($part:ty => $dtype:ident),*) => {
        $(
            impl sealed::Sealed for num_complex::Complex<$part> {}
            impl Element for num_complex::Complex<$part> {
                const DTYPE: DType = DType::$dtype;
                type Sum = Self;
                type Mean = Self;
                type Var = $part;
                fn to_f64(self) -> f64 {
                    self.re as f64
                }
                fn from_f64(value: f64) -> Self {
                    num_complex::Complex::new(value as $part, 0.0)
                }
                fn imaginary_f64(self) -> f64 {
                    self.im as f64
                }
            }
        )*
    };
}

complex_element!(f32 => C64, f64 => C128);

impl sealed::Sealed for Bool {}
impl Element for Bool {
    const DTYPE: DType = DType::Bool;
    type Sum = i64;
    type Mean = f64;
    type Var = f64;
    fn to_f64(self) -> f64 {
        self.0.min(1) as f64
    }
    fn from_f64(value: f64) -> Self {
        Bool((value != 0.0) as u8)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::{BF16, F16, F32, F64, I16, I32, I64, I8, U16, U32, U64, U8};

    #[test]
    fn names_round_trip_and_sizes_match_rust() {
        for dtype in DType::ALL {
            assert_eq!(DType::from_c_name(dtype.c_name()), Some(dtype));
        }
        assert_eq!(DType::from_c_name("unsigned   long long"), Some(U64));
        assert_eq!(DType::from_c_name("T"), None);
        assert_eq!(
            DType::from_c_name("long"),
            None,
            "long is 32 or 64 bits depending on the platform"
        );
        assert_eq!(f64::DTYPE.size(), std::mem::size_of::<f64>());
        assert_eq!(u16::DTYPE.size(), std::mem::size_of::<u16>());
        assert_eq!(half::bf16::DTYPE.size(), std::mem::size_of::<half::bf16>());
        assert_eq!(Bool::DTYPE.size(), std::mem::size_of::<Bool>());
        assert_eq!(i8::DTYPE, I8);
    }

    #[test]
    fn promotion_follows_numpy() {
        let cases = [
            (DType::Bool, I8, I8),
            (DType::Bool, F16, F16),
            (I8, I16, I16),
            (U8, U32, U32),
            (U8, I8, I16),
            (U8, I16, I16),
            (U16, I16, I32),
            (U32, I32, I64),
            (U32, I64, I64),
            (U64, I64, F64),
            (U64, I8, F64),
            (I8, F16, F16),
            (U8, BF16, BF16),
            (I16, F16, F32),
            (I16, F32, F32),
            (I32, F32, F64),
            (U64, F32, F64),
            (I64, F16, F64),
            (F16, BF16, F32),
            (F16, F32, F32),
            (BF16, F64, F64),
            (F32, F64, F64),
        ];
        for (a, b, expected) in cases {
            assert_eq!(a.promote(b), expected, "{a} with {b}");
            assert_eq!(b.promote(a), expected, "{b} with {a} (symmetric)");
        }
        for t in DType::ALL {
            assert_eq!(t.promote(t), t);
        }
    }

    #[test]
    fn scalars_are_weak_and_math_gives_floats() {
        assert_eq!(F32.with_float_scalar(), F32);
        assert_eq!(F16.with_float_scalar(), F16);
        assert_eq!(I32.with_float_scalar(), F64);
        assert_eq!(U8.with_int_scalar(), U8);
        assert_eq!(DType::Bool.with_int_scalar(), I64);
        assert_eq!(DType::Bool.with_float_scalar(), F64);
        // NumPy 2: `x * 1j` is complex64 for float16 and float32 arrays, complex128 otherwise.
        assert_eq!(F16.with_complex_scalar(), DType::C64);
        assert_eq!(F32.with_complex_scalar(), DType::C64);
        assert_eq!(F64.with_complex_scalar(), DType::C128);
        assert_eq!(I8.with_complex_scalar(), DType::C128);
        assert_eq!(DType::Bool.with_complex_scalar(), DType::C128);
        assert_eq!(DType::C64.with_complex_scalar(), DType::C64);
        assert_eq!(DType::C64.with_float_scalar(), DType::C64);
        assert_eq!(DType::C128.with_int_scalar(), DType::C128);
        assert_eq!(I8.float_result(), F16);
        assert_eq!(U16.float_result(), F32);
        assert_eq!(I64.float_result(), F64);
        assert_eq!(BF16.float_result(), BF16);
    }

    #[test]
    fn arithmetic_without_a_bool_form_gives_i8_for_bool() {
        assert_eq!(DType::Bool.arithmetic_result(), I8);
        for dtype in DType::ALL.into_iter().filter(|&d| d != DType::Bool) {
            assert_eq!(dtype.arithmetic_result(), dtype);
        }
    }

    #[test]
    fn true_division_of_integers_and_bool_gives_f64() {
        for dtype in DType::ALL {
            let expected = if dtype.is_float() || dtype.is_complex() {
                dtype
            } else {
                F64
            };
            assert_eq!(dtype.quotient_result(), expected, "{dtype}");
        }
        assert_eq!(U8.float_result(), F16, "math functions keep NumPy's smallest float");
    }

    #[test]
    fn f64_rounds_once_to_f16_and_bf16() {
        let f16_bits = |v: f64| f16_from_f64(v).to_bits();
        let bf16_bits = |v: f64| bf16_from_f64(v).to_bits();
        let p = |e: i32| 2f64.powi(e);
        // Just above the tie between 1 and its successor: through f32 it becomes the tie.
        assert_eq!(f16_bits(1.0 + p(-11) + p(-40)), 0x3c01);
        assert_eq!(f16_bits(1.0 + p(-11)), 0x3c00, "a tie goes to even");
        assert_eq!(f16_bits(1.0 + 3.0 * p(-11)), 0x3c02, "a tie goes to even");
        assert_eq!(f16_bits(-(1.0 + p(-11) + p(-40))), 0xbc01);
        assert_eq!(f16_bits(65504.0), 0x7bff);
        assert_eq!(f16_bits(65519.99), 0x7bff);
        assert_eq!(f16_bits(65520.0), 0x7c00, "rounds to infinity");
        assert_eq!(f16_bits(1e300), 0x7c00);
        assert_eq!(f16_bits(f64::NEG_INFINITY), 0xfc00);
        assert!(f16_from_f64(f64::NAN).is_nan());
        assert_eq!(f16_bits(p(-24)), 0x0001, "the smallest subnormal");
        assert_eq!(f16_bits(p(-25)), 0x0000, "half of it ties to even zero");
        assert_eq!(f16_bits(p(-25) + p(-60)), 0x0001);
        assert_eq!(f16_bits(p(-14) - p(-26)), 0x0400, "rounds up to the smallest normal");
        assert_eq!(f16_bits(-0.0), 0x8000);
        assert_eq!(f16_bits(f64::from_bits(1)), 0x0000, "an f64 subnormal");
        assert_eq!(bf16_bits(1.0 + p(-8) + p(-40)), 0x3f81);
        assert_eq!(bf16_bits(1.0 + p(-8)), 0x3f80);
        assert_eq!(bf16_bits(3.5e38), 0x7f80);
        assert!(bf16_from_f64(f64::NAN).is_nan());
        assert_eq!(
            half::f16::from_f64(1.0 + p(-11) + p(-40)).to_bits(),
            f16_bits(1.0 + p(-11) + p(-40)) - 1,
            "half's own conversion rounds twice, which is why it is not used"
        );
        // Every f32 value is one rounding from f16 and bf16, as `half` does from f32.
        let mut bits = 0u32;
        while let Some(next) = bits.checked_add(65_537) {
            let x = f32::from_bits(bits);
            if !x.is_nan() {
                assert_eq!(f16_bits(x as f64), half::f16::from_f32(x).to_bits(), "{x:e}");
                assert_eq!(bf16_bits(x as f64), half::bf16::from_f32(x).to_bits(), "{x:e}");
            }
            bits = next;
        }
    }

    #[test]
    fn integers_read_exactly_and_ranges_match_the_types() {
        assert_eq!(int_value(u64::MAX), Some(u64::MAX as i128));
        assert_eq!(int_value(i64::MIN), Some(i64::MIN as i128));
        assert_eq!(int_value(-3i8), Some(-3));
        assert_eq!(int_value(1.5f64), None);
        assert_eq!(U8.int_range(), Some((0, 255)));
        assert_eq!(I16.int_range(), Some((-32768, 32767)));
        assert_eq!(U64.int_range(), Some((0, u64::MAX as i128)));
        assert_eq!(I64.int_range(), Some((i64::MIN as i128, i64::MAX as i128)));
        assert_eq!(F32.int_range(), None);
    }

    #[test]
    fn complex_elements_convert_through_their_parts() {
        let z = num_complex::Complex::new(1.5f32, -2.0);
        assert_eq!((z.to_f64(), z.imaginary_f64()), (1.5, -2.0));
        assert_eq!(
            num_complex::Complex::<f64>::from_f64(3.0),
            num_complex::Complex::new(3.0, 0.0)
        );
        assert_eq!(2.5f32.imaginary_f64(), 0.0);
        assert_eq!(
            num_complex::Complex::<f32>::DTYPE.size(),
            std::mem::size_of::<num_complex::Complex<f32>>()
        );
        assert_eq!(num_complex::Complex::<f64>::DTYPE.size(), 16);
        assert_eq!(
            (DType::C64.real_type(), DType::C128.real_type(), F32.real_type()),
            (F32, F64, F32)
        );
        assert_eq!(
            (DType::C64.angle_result(), I32.angle_result(), U8.angle_result()),
            (F32, F64, F16)
        );
        assert_eq!(DType::C64.name(), "complex64");
    }

    #[test]
    fn bool_converts_and_prints_like_numpy() {
        assert_eq!(Bool::from(true), Bool::TRUE);
        assert!(bool::from(Bool(7)), "any nonzero byte is true");
        assert_eq!(Bool::TRUE.to_string(), "True");
        assert_eq!(Bool::from_f64(0.0), Bool::FALSE);
        assert_eq!(half::f16::from_f64(1.5).to_f64(), 1.5);
    }
}
