//! NumPy's `.npy` files (`np.save` / `np.load` of one array): [`DeviceArray::save_npy`],
//! [`DeviceArray::load_npy`], and the same to any [`Write`] and from any [`Read`].
//!
//! ```no_run
//! use cuda_core::{Device, DeviceArray};
//!
//! # fn main() -> cuda_core::Result<()> {
//! let stream = Device::new(0)?.create_stream()?;
//! let x = DeviceArray::<f32>::arange(&stream, 0.0, 6.0, 1.0)?.reshape([2, 3])?;
//! x.save_npy("x.npy")?; // np.load("x.npy") reads it
//! let y = DeviceArray::<f32>::load_npy(&stream, "x.npy")?;
//! assert_eq!(y.shape(), [2, 3]);
//! # Ok(())
//! # }
//! ```
//!
//! The format is small (a magic string, a version, a Python dict literal with `descr`,
//! `fortran_order` and `shape`, then the raw elements), so it is written here rather than taken
//! from a crate: the crates that read it carry a general Python-literal parser or an `ndarray`
//! dependency, for the three keys this layer needs. Every element type but `bf16` has a NumPy
//! dtype, always little-endian here (`'|b1'` for `Bool`, `'<f2'` for `f16`, ...); `bf16` has
//! none (NumPy knows it only through ml_dtypes, whose files NumPy itself cannot load), so saving
//! it is a [`NpyError::NoNumpyDtype`] error: convert it with `astype::<f32>()` first. Files of
//! versions 1.0, 2.0 and 3.0 load; files are written as 1.0 (2.0 when the header needs more than
//! 65535 bytes), with the header padded to 64 bytes as NumPy does. A `fortran_order` file loads
//! as the transposed view of its data, with no copy. The host is little-endian (as every host
//! that runs CUDA), so elements are copied as they are.

use std::fmt;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use cuda_driver::Stream;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::{DType, Element};
use crate::array::memory::MemoryPool;
use crate::error::Result;

/// What is wrong with a `.npy` file, or why an array cannot be written as one.
#[derive(Debug)]
#[non_exhaustive]
pub enum NpyError {
    /// Reading or writing failed.
    Io {
        /// The file, when the data came from or went to one.
        path: Option<PathBuf>,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The data does not start with NumPy's magic string `\x93NUMPY`.
    NotNpy,
    /// A format version other than 1.0, 2.0 and 3.0.
    Version {
        /// The major version byte.
        major: u8,
        /// The minor version byte.
        minor: u8,
    },
    /// The header is not the dict NumPy writes (`descr`, `fortran_order`, `shape`).
    Header(String),
    /// The file's element type is not the array's.
    Dtype {
        /// The file's `descr`.
        descr: String,
        /// The element type asked for.
        expected: DType,
    },
    /// The element type has no NumPy dtype (`bf16`).
    NoNumpyDtype(DType),
    /// The data ends before the shape's elements do.
    Truncated {
        /// Bytes the shape and dtype call for.
        expected: u64,
        /// Bytes there were.
        found: u64,
    },
}

impl fmt::Display for NpyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NpyError::Io { path, source } => {
                if let Some(path) = path {
                    write!(f, "{}: ", path.display())?;
                }
                write!(f, "{source}")
            }
            NpyError::NotNpy => f.write_str("not a .npy file: it does not start with \\x93NUMPY"),
            NpyError::Version { major, minor } => write!(
                f,
                ".npy format version {major}.{minor} is not supported (1.0, 2.0 and 3.0 are)"
            ),
            NpyError::Header(message) => write!(f, "bad .npy header: {message}"),
            NpyError::Dtype { descr, expected } => write!(
                f,
                "the .npy data is of dtype {descr:?}, not {expected} ({})",
                expected.name()
            ),
            NpyError::NoNumpyDtype(dtype) => write!(
                f,
                "{dtype} has no NumPy dtype to save it as; convert it first (astype::<f32>())"
            ),
            NpyError::Truncated { expected, found } => write!(
                f,
                "the .npy data is truncated: {expected} bytes of elements expected, {found} found"
            ),
        }
    }
}

impl std::error::Error for NpyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NpyError::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The most element bytes read into a new host buffer before the data shows it has them: the
/// buffer grows with the data (doubling), so a short file that claims a large shape costs
/// about its own size, not the shape's.
const READ_CHUNK_BYTES: usize = 1 << 16;

/// NumPy's magic string.
const MAGIC: &[u8; 6] = b"\x93NUMPY";
/// Headers are padded so that the data starts at a multiple of this.
const ALIGN: usize = 64;
/// Digits of the first extent that NumPy leaves room for in a header.
const GROWTH_DIGITS: usize = 21;

/// The little-endian NumPy `descr` of `dtype` (`None` for `bf16`).
fn descr(dtype: DType) -> Option<&'static str> {
    Some(match dtype {
        DType::Bool => "|b1",
        DType::I8 => "|i1",
        DType::I16 => "<i2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::U8 => "|u1",
        DType::U16 => "<u2",
        DType::U32 => "<u4",
        DType::U64 => "<u8",
        DType::F16 => "<f2",
        DType::F32 => "<f4",
        DType::F64 => "<f8",
        DType::C64 => "<c8",
        DType::C128 => "<c16",
        DType::BF16 => return None,
    })
}

/// Whether a file's `descr` is `dtype` (one-byte types may be written with `<`, `|` or `=`).
fn descr_matches(file: &str, dtype: DType) -> bool {
    let Some(ours) = descr(dtype) else {
        return false;
    };
    // Compared as bytes: the file's `descr` may start with any character, not only ASCII.
    match (dtype.size(), file.as_bytes()) {
        (1, [order, rest @ ..]) => b"<|=".contains(order) && rest == &ours.as_bytes()[1..],
        _ => file == ours,
    }
}

/// The bytes before the data of a `.npy` file holding `shape` elements of `dtype`, C order.
fn header_bytes(dtype: DType, shape: &[usize]) -> Result<Vec<u8>, NpyError> {
    let descr = descr(dtype).ok_or(NpyError::NoNumpyDtype(dtype))?;
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // NumPy leaves room for the first extent to grow to 21 digits (appending in place).
    let growth = dims.first().map_or(0, |d| GROWTH_DIGITS.saturating_sub(d.len()));
    let padded_len = |length_bytes: usize| {
        let unpadded = MAGIC.len() + 2 + length_bytes + dict.len() + growth + 1;
        dict.len() + growth + 1 + (ALIGN - unpadded % ALIGN) % ALIGN
    };
    // Version 1.0 has a 2-byte header length; 2.0 (for longer headers) a 4-byte one.
    let (version, length_bytes, header_len) = match padded_len(2) {
        short if short <= u16::MAX as usize => (1u8, 2usize, short),
        _ => (2u8, 4usize, padded_len(4)),
    };
    let mut out = Vec::with_capacity(MAGIC.len() + 2 + length_bytes + header_len);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[version, 0]);
    match version {
        1 => out.extend_from_slice(&(header_len as u16).to_le_bytes()),
        _ => out.extend_from_slice(&(header_len as u32).to_le_bytes()),
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(MAGIC.len() + 2 + length_bytes + header_len - 1, b' ');
    out.push(b'\n');
    Ok(out)
}

/// A parsed header.
#[derive(Debug, PartialEq, Eq)]
struct Header {
    descr: String,
    fortran_order: bool,
    shape: Vec<usize>,
}

impl Header {
    /// Reads the magic string, version and header of a `.npy` file from `reader`.
    fn read(reader: &mut impl Read) -> Result<Header, NpyError> {
        let mut start = [0u8; 8];
        let found = read_full(reader, &mut start)?;
        if found < 8 || &start[..6] != MAGIC {
            return Err(NpyError::NotNpy);
        }
        let length_bytes = match (start[6], start[7]) {
            (1, 0) => 2,
            (2, 0) | (3, 0) => 4,
            (major, minor) => return Err(NpyError::Version { major, minor }),
        };
        let mut length = [0u8; 4];
        if read_full(reader, &mut length[..length_bytes])? < length_bytes {
            return Err(NpyError::Header("the data ends inside the header length".into()));
        }
        let length = u32::from_le_bytes(length) as usize;
        let mut text = Vec::new();
        let read = reader
            .take(length as u64)
            .read_to_end(&mut text)
            .map_err(|source| NpyError::Io { path: None, source })?;
        if read < length {
            return Err(NpyError::Header(format!(
                "the data ends inside the header ({read} of {length} bytes)"
            )));
        }
        // Version 1.0 and 2.0 headers are latin-1, 3.0 UTF-8; the dict NumPy writes is ASCII.
        let text = std::str::from_utf8(&text).map_err(|_| NpyError::Header("the header is not ASCII".into()))?;
        Header::parse(text)
    }

    /// Parses the dict literal NumPy writes: `{'descr': '<f4', 'fortran_order': False,
    /// 'shape': (2, 3), }`, keys in any order, each once.
    fn parse(text: &str) -> Result<Header, NpyError> {
        let bad = |why: &str| NpyError::Header(format!("{why} in {:?}", text.trim_end()));
        let mut rest = text.trim().strip_prefix('{').ok_or_else(|| bad("no '{'"))?;
        let (mut descr, mut fortran_order, mut shape) = (None, None, None);
        loop {
            rest = rest.trim_start();
            if let Some(after) = rest.strip_prefix('}') {
                if !after.trim().is_empty() {
                    return Err(bad("text after the dict"));
                }
                break;
            }
            let (key, after) = quoted(rest).ok_or_else(|| bad("a key is not a quoted string"))?;
            rest = after
                .trim_start()
                .strip_prefix(':')
                .ok_or_else(|| bad("no ':' after a key"))?
                .trim_start();
            let slot_taken = match key {
                "descr" => {
                    let (value, after) = quoted(rest)
                        .ok_or_else(|| bad("descr is not a string (structured dtypes are not supported)"))?;
                    rest = after;
                    descr.replace(value.to_string()).is_some()
                }
                "fortran_order" => {
                    let (value, after) = match (rest.strip_prefix("True"), rest.strip_prefix("False")) {
                        (Some(after), _) => (true, after),
                        (_, Some(after)) => (false, after),
                        _ => return Err(bad("fortran_order is not True or False")),
                    };
                    rest = after;
                    fortran_order.replace(value).is_some()
                }
                "shape" => {
                    let inner = rest.strip_prefix('(').ok_or_else(|| bad("shape is not a tuple"))?;
                    let end = inner.find(')').ok_or_else(|| bad("shape has no ')'"))?;
                    let dims = inner[..end]
                        .split(',')
                        .map(str::trim)
                        .filter(|d| !d.is_empty())
                        .map(|d| {
                            d.parse::<usize>()
                                .map_err(|_| bad("shape holds something other than sizes"))
                        })
                        .collect::<Result<Vec<usize>, NpyError>>()?;
                    rest = &inner[end + 1..];
                    shape.replace(dims).is_some()
                }
                other => return Err(bad(&format!("unexpected key {other:?}"))),
            };
            if slot_taken {
                return Err(bad(&format!("key {key:?} given twice")));
            }
            rest = rest.trim_start();
            rest = rest.strip_prefix(',').unwrap_or(rest);
        }
        match (descr, fortran_order, shape) {
            (Some(descr), Some(fortran_order), Some(shape)) => Ok(Header {
                descr,
                fortran_order,
                shape,
            }),
            _ => Err(bad("descr, fortran_order or shape is missing")),
        }
    }
}

/// The contents of the quoted string (`'...'` or `"..."`) at the start of `text`, and the rest.
fn quoted(text: &str) -> Option<(&str, &str)> {
    let quote = text.chars().next().filter(|&c| c == '\'' || c == '"')?;
    let end = text[1..].find(quote)? + 1;
    Some((&text[1..end], &text[end + 1..]))
}

/// Reads until `buffer` is full or the data ends; the number of bytes read.
fn read_full(reader: &mut impl Read, buffer: &mut [u8]) -> Result<usize, NpyError> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(source) => return Err(NpyError::Io { path: None, source }),
        }
    }
    Ok(filled)
}

/// `len` elements read from `reader` into a host vector that grows as the data arrives (from
/// [`READ_CHUNK_BYTES`], doubling), so that data shorter than its header claims is a
/// [`NpyError::Truncated`] error before much more than its own size is allocated.
fn read_elements<T: Element>(reader: &mut impl Read, len: usize) -> Result<Vec<T>> {
    let size = T::DTYPE.size();
    // The caller checked that `len * size` fits.
    let expected = (len * size) as u64;
    let mut values = Vec::new();
    while values.len() < len {
        let start = values.len();
        let end = len.min(start.saturating_mul(2).max(READ_CHUNK_BYTES / size));
        values.try_reserve_exact(end - start).map_err(|error| {
            crate::Error::InvalidValue(format!(
                "cannot hold {end} elements of {size} bytes in host memory: {error}"
            ))
        })?;
        values.resize(end, T::from_f64(0.0));
        let chunk = &mut values[start..];
        // SAFETY: `chunk` holds initialised elements, `size_of_val` bytes, and every byte pattern
        // is a valid `Element` (plain integers, floats, pairs of floats, and `Bool`, any `u8`).
        let bytes =
            unsafe { std::slice::from_raw_parts_mut(chunk.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(chunk)) };
        let found = read_full(reader, bytes)?;
        if found < bytes.len() {
            return Err(NpyError::Truncated {
                expected,
                found: (start * size + found) as u64,
            }
            .into());
        }
    }
    Ok(values)
}

/// `values` as bytes.
fn as_bytes<T: Element>(values: &[T]) -> &[u8] {
    // SAFETY: every `Element` is a plain integer, float, pair of floats (complex) or `Bool` (one
    // `u8`) without padding, so
    // its `size_of_val(values)` bytes are initialised; `u8` has no alignment requirement.
    unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values)) }
}

/// `Io` errors of a file get its path.
fn with_path(error: NpyError, path: &Path) -> NpyError {
    match error {
        NpyError::Io { path: None, source } => NpyError::Io {
            path: Some(path.to_path_buf()),
            source,
        },
        other => other,
    }
}

impl<T: Element> DeviceArray<T> {
    /// Writes the array as a `.npy` file at `path` (NumPy's `np.save`; C order, any view),
    /// waiting for the array's stream. `bf16` arrays are a [`NpyError::NoNumpyDtype`] error.
    pub fn save_npy(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let file = std::fs::File::create(path).map_err(|source| NpyError::Io {
            path: Some(path.to_path_buf()),
            source,
        })?;
        let mut writer = std::io::BufWriter::new(file);
        self.write_npy(&mut writer)?;
        writer.flush().map_err(|source| NpyError::Io {
            path: Some(path.to_path_buf()),
            source,
        })?;
        Ok(())
    }

    /// Writes the array in the `.npy` format to `writer` (see [`save_npy`](Self::save_npy)).
    pub fn write_npy(&self, mut writer: impl Write) -> Result<()> {
        let header = header_bytes(T::DTYPE, self.shape())?;
        let values = self.to_vec()?;
        let io = |source| NpyError::Io { path: None, source };
        writer.write_all(&header).map_err(io)?;
        writer.write_all(as_bytes(&values)).map_err(io)?;
        Ok(())
    }

    /// Reads the `.npy` file at `path` into a new array on `stream` (NumPy's `np.load` of a
    /// `.npy` file). The file's dtype must be `T`'s ([`NpyError::Dtype`] otherwise: convert
    /// after loading); a `fortran_order` file gives the transposed view of its data.
    pub fn load_npy(stream: &Stream, path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|source| NpyError::Io {
            path: Some(path.to_path_buf()),
            source,
        })?;
        Self::read_npy(stream, std::io::BufReader::new(file)).map_err(|error| match error {
            crate::Error::Npy(error) => crate::Error::Npy(with_path(error, path)),
            other => other,
        })
    }

    /// Reads `.npy` data from `reader` into a new array on `stream` (see
    /// [`load_npy`](Self::load_npy)); bytes after the elements are left unread.
    pub fn read_npy(stream: &Stream, reader: impl Read) -> Result<Self> {
        Self::read_npy_in(&MemoryPool::for_context(stream.context()), stream, reader)
    }

    /// [`read_npy`](Self::read_npy) into memory of `pool`.
    pub fn read_npy_in(pool: &MemoryPool, stream: &Stream, mut reader: impl Read) -> Result<Self> {
        let header = Header::read(&mut reader)?;
        if !descr_matches(&header.descr, T::DTYPE) {
            return Err(NpyError::Dtype {
                descr: header.descr,
                expected: T::DTYPE,
            }
            .into());
        }
        let len = header
            .shape
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(d))
            .filter(|n| n.checked_mul(T::DTYPE.size()).is_some())
            .ok_or_else(|| NpyError::Header(format!("the shape {:?} overflows", header.shape)))?;
        let values = read_elements::<T>(&mut reader, len)?;
        let mut array = DeviceArray::empty_in(pool, stream, len)?;
        array.copy_from_host(&values)?;
        match header.fortran_order {
            false => array.reshape(header.shape),
            true => Ok(array
                .reshape(header.shape.iter().rev().copied().collect::<Vec<_>>())?
                .transpose()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 128 bytes before the data that NumPy writes for `np.save(f, np.zeros((2, 3),
    /// np.float32))`: the dict, spaces, a newline.
    fn numpy_f32_2x3() -> Vec<u8> {
        let mut bytes = b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".to_vec();
        bytes.resize(127, b' ');
        bytes.push(b'\n');
        bytes
    }

    #[test]
    fn headers_match_numpys_bytes() {
        assert_eq!(header_bytes(DType::F32, &[2, 3]).unwrap(), numpy_f32_2x3());
        // NumPy's room for a longer first extent (21 digits) fits in the padding here.
        assert_eq!(header_bytes(DType::F64, &[1_000_000]).unwrap().len(), 128);
        assert_eq!(header_bytes(DType::F64, &[100, 200, 300, 400]).unwrap().len(), 128);
        for (dtype, shape) in [
            (DType::Bool, vec![]),
            (DType::F16, vec![5]),
            (DType::U64, vec![0, 7]),
            (DType::I8, vec![1, 2, 3, 4]),
        ] {
            let bytes = header_bytes(dtype, &shape).unwrap();
            assert_eq!(bytes.len() % ALIGN, 0, "padded to 64 bytes");
            assert_eq!(*bytes.last().unwrap(), b'\n');
            let header = Header::read(&mut bytes.as_slice()).unwrap();
            assert!(descr_matches(&header.descr, dtype), "{header:?}");
            assert_eq!((header.shape, header.fortran_order), (shape, false));
        }
        let text = String::from_utf8_lossy(&header_bytes(DType::Bool, &[]).unwrap()).into_owned();
        assert!(
            text.contains("'descr': '|b1'") && text.contains("'shape': ()"),
            "{text}"
        );
        let text = String::from_utf8_lossy(&header_bytes(DType::F16, &[5]).unwrap()).into_owned();
        assert!(text.contains("'<f2'") && text.contains("(5,)"), "{text}");
        assert!(matches!(
            header_bytes(DType::BF16, &[2]),
            Err(NpyError::NoNumpyDtype(DType::BF16))
        ));
    }

    #[test]
    fn long_shapes_get_a_version_2_header() {
        let shape = vec![1usize; 30_000];
        let bytes = header_bytes(DType::F64, &shape).unwrap();
        assert_eq!(&bytes[6..8], [2, 0]);
        assert_eq!(bytes.len() % ALIGN, 0);
        assert_eq!(Header::read(&mut bytes.as_slice()).unwrap().shape, shape);
    }

    #[test]
    fn headers_of_every_version_and_key_order_parse() {
        for version in [[1u8, 0], [2, 0], [3, 0]] {
            let dict = b"{\"shape\": (4,3,),'fortran_order':True,  'descr':'<i8'}\n";
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&version);
            match version[0] {
                1 => bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes()),
                _ => bytes.extend_from_slice(&(dict.len() as u32).to_le_bytes()),
            }
            bytes.extend_from_slice(dict);
            bytes.extend_from_slice(&[0; 96]);
            let mut reader = bytes.as_slice();
            let header = Header::read(&mut reader).unwrap();
            assert_eq!(
                header,
                Header {
                    descr: "<i8".into(),
                    fortran_order: true,
                    shape: vec![4, 3]
                }
            );
            assert_eq!(reader.len(), 96, "the data is left to read");
        }
    }

    #[test]
    fn bad_headers_are_typed_errors() {
        let header = |dict: &str| {
            let mut bytes = MAGIC.to_vec();
            bytes.extend_from_slice(&[1, 0]);
            bytes.extend_from_slice(&(dict.len() as u16).to_le_bytes());
            bytes.extend_from_slice(dict.as_bytes());
            Header::read(&mut bytes.as_slice())
        };
        assert!(matches!(
            Header::read(&mut &b"PK\x03\x04 a zip"[..]),
            Err(NpyError::NotNpy)
        ));
        assert!(matches!(Header::read(&mut &b"\x93NUM"[..]), Err(NpyError::NotNpy)));
        assert!(matches!(
            Header::read(&mut &b"\x93NUMPY\x04\x00\x10\x00"[..]),
            Err(NpyError::Version { major: 4, minor: 0 })
        ));
        assert!(matches!(
            Header::read(&mut &b"\x93NUMPY\x01\x00\x40\x00{'descr'"[..]),
            Err(NpyError::Header(_))
        ));
        for (dict, why) in [
            ("{'descr': '<f4', 'fortran_order': False}", "missing"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}",
                "unexpected key",
            ),
            ("{'descr': '<f4', 'fortran_order': 0, 'shape': (2,)}", "True or False"),
            ("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -1)}", "sizes"),
            (
                "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,)}",
                "structured",
            ),
            (
                "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}",
                "twice",
            ),
            ("'descr': '<f4'", "no '{'"),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (2,)} x",
                "after the dict",
            ),
        ] {
            match header(dict) {
                Err(NpyError::Header(message)) => assert!(message.contains(why), "{dict}: {message}"),
                other => panic!("{dict}: {other:?}"),
            }
        }
    }

    #[test]
    fn descrs_match_their_types_only() {
        assert!(descr_matches("<f4", DType::F32));
        assert!(descr_matches("|u1", DType::U8) && descr_matches("<u1", DType::U8));
        assert!(descr_matches("|b1", DType::Bool));
        assert!(!descr_matches(">f4", DType::F32), "big-endian data is refused");
        assert!(!descr_matches("<f4", DType::F64));
        assert!(!descr_matches("<i4", DType::U32));
        assert!(!descr_matches("<V2", DType::BF16), "bf16 has no dtype");
        // Three bytes that start with a two-byte character (a version 3.0 header is UTF-8).
        for dtype in [DType::U8, DType::I8, DType::Bool, DType::F32] {
            assert!(!descr_matches("\u{e9}1", dtype) && !descr_matches("\u{20ac}", dtype));
            assert!(!descr_matches("", dtype));
        }
        for dtype in DType::ALL.into_iter().filter(|&d| d != DType::BF16) {
            let descr = descr(dtype).unwrap();
            assert_eq!(descr[2..].parse::<usize>().unwrap(), dtype.size(), "{descr}");
        }
    }

    #[test]
    fn elements_are_their_little_endian_bytes() {
        assert_eq!(as_bytes(&[1.0f32, -2.0]), [0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0]);
        assert_eq!(as_bytes(&[half::f16::from_f32(1.0)]), [0x00, 0x3c]);
        assert_eq!(as_bytes(&[crate::Bool::TRUE, crate::Bool::FALSE]), [1, 0]);
        assert_eq!(as_bytes(&[-2i16]), [0xfe, 0xff]);
        let z = [num_complex::Complex::new(1.0f32, -2.0)];
        assert_eq!(as_bytes(&z), [0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0], "real part first");
    }

    #[test]
    fn complex_files_match_numpys_bytes_and_read_back() {
        // `np.save(f, np.array([1+2j, -0.5j], np.complex64))`: the header, then the pairs.
        let mut numpy = b"\x93NUMPY\x01\x00v\x00{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }".to_vec();
        numpy.resize(127, b' ');
        numpy.push(b'\n');
        numpy.extend_from_slice(&[0, 0, 128, 63, 0, 0, 0, 64, 0, 0, 0, 128, 0, 0, 0, 191]);
        let values = [
            num_complex::Complex::new(1.0f32, 2.0),
            num_complex::Complex::new(-0.0, -0.5),
        ];
        let mut ours = header_bytes(DType::C64, &[2]).unwrap();
        ours.extend_from_slice(as_bytes(&values));
        assert_eq!(ours, numpy);
        let mut reader = numpy.as_slice();
        let header = Header::read(&mut reader).unwrap();
        assert!(descr_matches(&header.descr, DType::C64) && !descr_matches(&header.descr, DType::C128));
        assert_eq!(
            read_elements::<num_complex::Complex<f32>>(&mut reader, 2).unwrap(),
            values
        );
        // `np.save(f, np.array([[3-4j]], np.complex128))`.
        let wide = [num_complex::Complex::new(3.0f64, -4.0)];
        let mut bytes = header_bytes(DType::C128, &[1, 1]).unwrap();
        assert!(String::from_utf8_lossy(&bytes).contains("'descr': '<c16'"));
        bytes.extend_from_slice(&[0, 0, 0, 0, 0, 0, 8, 64, 0, 0, 0, 0, 0, 0, 16, 192]);
        let mut reader = bytes.as_slice();
        let header = Header::read(&mut reader).unwrap();
        assert_eq!(header.shape, [1, 1]);
        assert_eq!(
            read_elements::<num_complex::Complex<f64>>(&mut reader, 1).unwrap(),
            wide
        );
    }
}
