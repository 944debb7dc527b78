//! [`CodeKind`]: the forms device code takes (PTX, CUBIN, fatbin, LTO-IR).

use std::fmt;

/// What kind of code an [`ObjectCode`](crate::ObjectCode) holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodeKind {
    /// PTX text.
    Ptx,
    /// A CUBIN: an ELF image with SASS for one architecture.
    Cubin,
    /// A fat binary: several CUBINs and/or PTX.
    Fatbin,
    /// LTO-IR, only usable as [`Linker`](crate::Linker) input.
    LtoIr,
}

impl CodeKind {
    /// The usual file extension (`ptx`, `cubin`, `fatbin`, `ltoir`).
    pub fn extension(self) -> &'static str {
        match self {
            CodeKind::Ptx => "ptx",
            CodeKind::Cubin => "cubin",
            CodeKind::Fatbin => "fatbin",
            CodeKind::LtoIr => "ltoir",
        }
    }

    pub(crate) fn tag(self) -> u8 {
        match self {
            CodeKind::Ptx => 1,
            CodeKind::Cubin => 2,
            CodeKind::Fatbin => 3,
            CodeKind::LtoIr => 4,
        }
    }

    pub(crate) fn from_tag(tag: u8) -> Option<Self> {
        Some(match tag {
            1 => CodeKind::Ptx,
            2 => CodeKind::Cubin,
            3 => CodeKind::Fatbin,
            4 => CodeKind::LtoIr,
            _ => return None,
        })
    }
}

impl fmt::Display for CodeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CodeKind::Ptx => "PTX",
            CodeKind::Cubin => "CUBIN",
            CodeKind::Fatbin => "fatbin",
            CodeKind::LtoIr => "LTO-IR",
        })
    }
}
