//! [`Arch`]: a GPU architecture to compile for (`sm_90`, `compute_90`), and
//! [`ParseArchError`], why a name or number is none.

use std::fmt;
use std::str::FromStr;

/// A GPU architecture to compile for.
///
/// `Sm(90)` is real code for compute capability 9.0 (`sm_90`, what a CUBIN
/// needs); `Compute(90)` is the virtual architecture `compute_90`, whose PTX
/// the driver can JIT-compile for 9.0 and any newer device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Arch {
    /// `sm_XY`: a real architecture, e.g. `Sm(90)` for `sm_90`.
    Sm(u32),
    /// `compute_XY`: a virtual architecture, e.g. `Compute(90)` for `compute_90`.
    Compute(u32),
}

impl Arch {
    /// The architecture of compute capability `major.minor` (`sm_XY`).
    pub fn from_compute_capability(major: u32, minor: u32) -> Self {
        Arch::Sm(major * 10 + minor)
    }

    /// The number, e.g. 90 for both `sm_90` and `compute_90`.
    pub fn number(self) -> u32 {
        match self {
            Arch::Sm(n) | Arch::Compute(n) => n,
        }
    }

    /// The compute capability as `(major, minor)`, e.g. `(9, 0)`.
    pub fn compute_capability(self) -> (u32, u32) {
        (self.number() / 10, self.number() % 10)
    }

    /// Whether this is a real (`sm_XY`) architecture.
    pub fn is_real(self) -> bool {
        matches!(self, Arch::Sm(_))
    }

    /// The architecture itself when its number is a compute capability (10 to 999).
    pub(crate) fn validate(self) -> Result<Self, ParseArchError> {
        if (10..=999).contains(&self.number()) {
            Ok(self)
        } else {
            Err(ParseArchError(format!(
                "architecture number {} is not a compute capability",
                self.number()
            )))
        }
    }
}

impl PartialEq<&str> for Arch {
    /// `Arch::Sm(90) == "sm_90"`.
    fn eq(&self, other: &&str) -> bool {
        other.parse::<Arch>().is_ok_and(|arch| arch == *self)
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Arch::Sm(n) => write!(f, "sm_{n}"),
            Arch::Compute(n) => write!(f, "compute_{n}"),
        }
    }
}

impl FromStr for Arch {
    type Err = ParseArchError;

    /// Parses `sm_90` or `compute_90`.
    fn from_str(text: &str) -> Result<Self, ParseArchError> {
        let invalid = || ParseArchError(format!("`{text}` is not an architecture like `sm_90` or `compute_90`"));
        let (make, digits): (fn(u32) -> Arch, &str) = if let Some(digits) = text.strip_prefix("sm_") {
            (Arch::Sm, digits)
        } else if let Some(digits) = text.strip_prefix("compute_") {
            (Arch::Compute, digits)
        } else {
            return Err(invalid());
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        make(digits.parse().map_err(|_| invalid())?).validate()
    }
}

/// A name that is no architecture (`sm90`), or a number that is no compute capability. Converts
/// into [`Error::InvalidValue`](crate::Error::InvalidValue) with the same message, so `?` works in
/// functions returning [`Result`](crate::Result).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseArchError(String);

impl fmt::Display for ParseArchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseArchError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_parses_and_prints() {
        assert_eq!("sm_90".parse::<Arch>().unwrap(), Arch::Sm(90));
        assert_eq!("compute_120".parse::<Arch>().unwrap(), Arch::Compute(120));
        assert_eq!(Arch::Sm(90).to_string(), "sm_90");
        assert_eq!(Arch::Sm(90), "sm_90");
        assert_ne!(Arch::Sm(90), "compute_90");
        assert_eq!(Arch::Compute(86).compute_capability(), (8, 6));
        assert_eq!(Arch::from_compute_capability(10, 0), Arch::Sm(100));
        for bad in ["sm90", "sm_", "sm_9x", "compute_+90", "sm_5", ""] {
            let error = bad.parse::<Arch>().unwrap_err();
            assert!(error.to_string().contains(" is not "), "{bad}: {error}");
            assert!(
                matches!(crate::Error::from(error), crate::Error::InvalidValue(_)),
                "{bad}"
            );
        }
    }
}
