//! [`DType`] and [`Element`]: the element types arrays and generated kernels know.

use cuda_driver::DeviceCopy;

/// An element type, with its CUDA C++ name and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DType {
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
    /// `float`
    F32,
    /// `double`
    F64,
}

impl DType {
    /// Every type, in declaration order.
    pub const ALL: [DType; 10] = [
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::U8,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F32,
        DType::F64,
    ];

    /// The CUDA C++ spelling used in generated code.
    pub const fn c_name(self) -> &'static str {
        match self {
            DType::I8 => "signed char",
            DType::I16 => "short",
            DType::I32 => "int",
            DType::I64 => "long long",
            DType::U8 => "unsigned char",
            DType::U16 => "unsigned short",
            DType::U32 => "unsigned int",
            DType::U64 => "unsigned long long",
            DType::F32 => "float",
            DType::F64 => "double",
        }
    }

    /// Size in bytes.
    pub const fn size(self) -> usize {
        match self {
            DType::I8 | DType::U8 => 1,
            DType::I16 | DType::U16 => 2,
            DType::I32 | DType::U32 | DType::F32 => 4,
            DType::I64 | DType::U64 | DType::F64 => 8,
        }
    }

    /// Whether it is a floating-point type.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Whether it is a signed integer type.
    pub const fn is_signed_int(self) -> bool {
        matches!(self, DType::I8 | DType::I16 | DType::I32 | DType::I64)
    }

    /// The type a C++ type name in a parameter list denotes (`float`, `unsigned int`,
    /// `int32_t`, ...), with runs of spaces ignored; `None` for anything else.
    pub fn from_c_name(name: &str) -> Option<DType> {
        let words: Vec<&str> = name.split_whitespace().collect();
        let dtype = match words.join(" ").as_str() {
            "signed char" | "int8_t" => DType::I8,
            "short" | "int16_t" => DType::I16,
            "int" | "int32_t" => DType::I32,
            "long long" | "int64_t" => DType::I64,
            "unsigned char" | "uint8_t" => DType::U8,
            "unsigned short" | "uint16_t" => DType::U16,
            "unsigned int" | "unsigned" | "uint32_t" => DType::U32,
            "unsigned long long" | "uint64_t" | "size_t" => DType::U64,
            "float" => DType::F32,
            "double" => DType::F64,
            _ => return None,
        };
        Some(dtype)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.c_name())
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A Rust type that is one of the [`DType`]s. Sealed: the mapping decides how generated
/// kernels read the memory, so only this crate's exact matches implement it.
pub trait Element: DeviceCopy + sealed::Sealed {
    /// The element type.
    const DTYPE: DType;
}

macro_rules! element {
    ($($ty:ty => $dtype:ident),*) => {
        $(
            impl sealed::Sealed for $ty {}
            impl Element for $ty {
                const DTYPE: DType = DType::$dtype;
            }
        )*
    };
}

element!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64, f32 => F32, f64 => F64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_sizes_match_rust() {
        for dtype in DType::ALL {
            assert_eq!(DType::from_c_name(dtype.c_name()), Some(dtype));
        }
        assert_eq!(DType::from_c_name("unsigned   long long"), Some(DType::U64));
        assert_eq!(DType::from_c_name("T"), None);
        assert_eq!(
            DType::from_c_name("long"),
            None,
            "long is 32 or 64 bits depending on the platform"
        );
        assert_eq!(f64::DTYPE.size(), std::mem::size_of::<f64>());
        assert_eq!(u16::DTYPE.size(), std::mem::size_of::<u16>());
        assert_eq!(i8::DTYPE, DType::I8);
    }
}
