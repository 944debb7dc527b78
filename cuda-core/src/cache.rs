//! The kernel cache: compiled code kept in memory and on disk, keyed on a SHA-256 of
//! everything that affects compilation.
//!
//! On disk each entry is one file, `<key in hex>.kernel`, holding a header (magic, format
//! version, payload length, SHA-256 of the payload) and the payload (the key again, the code
//! kind and architecture, the compile log, the lowered names and the code). Entries are written
//! to a temporary file in the same folder and renamed into place, so a reader sees a whole old
//! entry, a whole new one, or none; a damaged entry fails its checksum and is recompiled.

use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::arch::Arch;
use crate::code_kind::CodeKind;
use crate::error::{Error, Result};
use crate::object_code::ObjectCode;
use sha2::{Digest, Sha256};

/// The SHA-256 identifying one compilation (see [`Program::cache_key`](crate::Program::cache_key)).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey(pub(crate) [u8; 32]);

impl CacheKey {
    /// The digest's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// The SHA-256 digest of `data`.
fn sha256(data: &[u8]) -> [u8; 32] {
    Sha256::digest(data).into()
}

/// Lower-case hexadecimal of `bytes`.
fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        hex.push(DIGITS[usize::from(byte >> 4)] as char);
        hex.push(DIGITS[usize::from(byte & 15)] as char);
    }
    hex
}

impl fmt::Display for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&to_hex(&self.0))
    }
}

impl fmt::Debug for CacheKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CacheKey({self})")
    }
}

/// Where compiled code came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheOutcome {
    /// Found in the cache's memory.
    MemoryHit,
    /// Read from the cache's folder (and now kept in memory too).
    DiskHit,
    /// Compiled, then stored in the cache.
    Compiled,
    /// Compiled without a cache (the cache or the program's `cache` option is off).
    Bypassed,
}

/// Counts of what a [`KernelCache`] has done.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups answered from memory.
    pub memory_hits: u64,
    /// Lookups answered from disk.
    pub disk_hits: u64,
    /// Lookups that compiled.
    pub compiles: u64,
    /// Disk entries found damaged (bad checksum, truncated, wrong key) and replaced.
    pub corrupt_entries: u64,
    /// Disk writes that failed (the compiled code was still returned).
    pub write_failures: u64,
}

/// Compiled code by [`CacheKey`], in memory and optionally in a folder.
///
/// [`KernelCache::global`] is the one [`Program::compile`](crate::Program::compile) uses; tests
/// and tools can make their own.
pub struct KernelCache {
    enabled: bool,
    memory: Mutex<HashMap<CacheKey, ObjectCode>>,
    dir: Option<PathBuf>,
    memory_hits: AtomicU64,
    disk_hits: AtomicU64,
    compiles: AtomicU64,
    corrupt_entries: AtomicU64,
    write_failures: AtomicU64,
}

/// The cache [`KernelCache::global`] returns, made on first use.
static GLOBAL: OnceLock<KernelCache> = OnceLock::new();

/// Forgets the global cache's entries in memory, if it was ever made, so the modules loaded
/// from them are unloaded (as soon as no kernel taken from them is left). For the exit hook.
#[cfg(feature = "array")]
pub(crate) fn release_global_memory() {
    if let Some(cache) = GLOBAL.get() {
        let entries = std::mem::take(&mut *cache.memory());
        // Dropped (and unloaded) outside the lock.
        drop(entries);
    }
}

/// The environment variable naming the cache folder.
pub const CACHE_DIR_ENV: &str = "CUDA_RS_CACHE_DIR";
/// The environment variable that turns the global cache off when `0` (or `false`, `off`, `no`).
pub const CACHE_SWITCH_ENV: &str = "CUDA_RS_CACHE";

const MAGIC: &[u8; 8] = b"CUDARSKC";
const FORMAT_VERSION: u32 = 1;
const HEADER_LEN: usize = 8 + 4 + 8 + 32;

impl KernelCache {
    fn build(enabled: bool, dir: Option<PathBuf>) -> Self {
        Self {
            enabled,
            memory: Mutex::new(HashMap::new()),
            dir,
            memory_hits: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            compiles: AtomicU64::new(0),
            corrupt_entries: AtomicU64::new(0),
            write_failures: AtomicU64::new(0),
        }
    }

    /// The process-wide cache, set up from the environment on first use:
    /// off when `CUDA_RS_CACHE=0`; otherwise in memory and in the folder `CUDA_RS_CACHE_DIR`,
    /// else `$XDG_CACHE_HOME/cuda-rs/kernels`, else `$HOME/.cache/cuda-rs/kernels` (memory only
    /// when none of these is set). The folder is created on the first write; failures to
    /// write are counted in [`CacheStats::write_failures`], never returned.
    pub fn global() -> &'static KernelCache {
        GLOBAL.get_or_init(|| {
            let get = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
            let switched_off = get(CACHE_SWITCH_ENV).is_some_and(|v| {
                matches!(
                    v.to_string_lossy().to_ascii_lowercase().as_str(),
                    "0" | "false" | "off" | "no"
                )
            });
            if switched_off {
                return KernelCache::disabled();
            }
            let dir = get(CACHE_DIR_ENV)
                .map(PathBuf::from)
                .or_else(|| get("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("cuda-rs").join("kernels")))
                .or_else(|| get("HOME").map(|d| PathBuf::from(d).join(".cache").join("cuda-rs").join("kernels")));
            KernelCache::build(true, dir)
        })
    }

    /// A cache kept in memory only.
    pub fn in_memory() -> Self {
        Self::build(true, None)
    }

    /// A cache in memory and in `dir`, which is created now; an error if it cannot be.
    pub fn with_dir(dir: impl Into<PathBuf>) -> Result<Self> {
        let dir = dir.into();
        fs::create_dir_all(&dir).map_err(|source| Error::Cache {
            path: dir.clone(),
            source,
        })?;
        Ok(Self::build(true, Some(dir)))
    }

    /// A cache that stores nothing: every compile is [`CacheOutcome::Bypassed`].
    pub fn disabled() -> Self {
        Self::build(false, None)
    }

    /// Whether this cache stores anything.
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }

    /// The folder entries are written to, if any.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The file an entry is (or would be) stored in.
    pub fn entry_path(&self, key: &CacheKey) -> Option<PathBuf> {
        self.dir.as_ref().map(|dir| dir.join(format!("{key}.kernel")))
    }

    /// What the cache has done so far.
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            compiles: self.compiles.load(Ordering::Relaxed),
            corrupt_entries: self.corrupt_entries.load(Ordering::Relaxed),
            write_failures: self.write_failures.load(Ordering::Relaxed),
        }
    }

    /// Forgets the entries held in memory (the disk is untouched).
    pub fn clear_memory(&self) {
        self.memory().clear();
    }

    fn memory(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, ObjectCode>> {
        // The map holds only complete entries, so it is consistent even after a panic elsewhere.
        self.memory.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The entry for `key`: from memory, else from disk, else made by `compile` and stored.
    pub(crate) fn get_or_insert_with(
        &self,
        key: &CacheKey,
        compile: impl FnOnce() -> Result<ObjectCode>,
    ) -> Result<(ObjectCode, CacheOutcome)> {
        if let Some(code) = self.memory().get(key) {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok((code.clone(), CacheOutcome::MemoryHit));
        }
        if let Some(code) = self.read_entry(key) {
            self.disk_hits.fetch_add(1, Ordering::Relaxed);
            self.memory().insert(*key, code.clone());
            return Ok((code, CacheOutcome::DiskHit));
        }
        let code = compile()?;
        self.compiles.fetch_add(1, Ordering::Relaxed);
        if self.write_entry(key, &code).is_err() {
            self.write_failures.fetch_add(1, Ordering::Relaxed);
        }
        self.memory().insert(*key, code.clone());
        Ok((code, CacheOutcome::Compiled))
    }

    /// Reads and checks the disk entry; `None` when absent, unreadable or damaged.
    fn read_entry(&self, key: &CacheKey) -> Option<ObjectCode> {
        let path = self.entry_path(key)?;
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return None,
            Err(_) => {
                self.corrupt_entries.fetch_add(1, Ordering::Relaxed);
                return None;
            }
        };
        let decoded = decode_entry(key, &bytes);
        if decoded.is_none() {
            self.corrupt_entries.fetch_add(1, Ordering::Relaxed);
        }
        decoded
    }

    /// Writes the entry atomically: a temporary file in the same folder, renamed into place.
    fn write_entry(&self, key: &CacheKey, code: &ObjectCode) -> std::io::Result<()> {
        let (Some(dir), Some(path)) = (self.dir.as_ref(), self.entry_path(key)) else {
            return Ok(());
        };
        fs::create_dir_all(dir)?;
        static SEQUENCE: AtomicU64 = AtomicU64::new(0);
        let temporary = dir.join(format!(
            ".{key}.{}.{}.tmp",
            std::process::id(),
            SEQUENCE.fetch_add(1, Ordering::Relaxed)
        ));
        let written = fs::File::create_new(&temporary)
            .and_then(|mut file| file.write_all(&encode_entry(key, code)))
            .and_then(|()| fs::rename(&temporary, &path));
        if written.is_err() {
            let _ = fs::remove_file(&temporary);
        }
        written
    }
}

impl fmt::Debug for KernelCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KernelCache")
            .field("enabled", &self.enabled)
            .field("dir", &self.dir)
            .field("stats", &self.stats())
            .finish()
    }
}

fn encode_entry(key: &CacheKey, code: &ObjectCode) -> Vec<u8> {
    let mut payload = Vec::with_capacity(code.code().len() + code.log().len() + 256);
    payload.extend_from_slice(&key.0);
    payload.push(code.kind().tag());
    let (arch_tag, arch_number) = match code.arch() {
        None => (0u8, 0u32),
        Some(Arch::Sm(n)) => (1, n),
        Some(Arch::Compute(n)) => (2, n),
    };
    payload.push(arch_tag);
    payload.extend_from_slice(&arch_number.to_le_bytes());
    put_bytes(&mut payload, code.log().as_bytes());
    let names: Vec<(&str, &str)> = code.lowered_names().collect();
    payload.extend_from_slice(&(names.len() as u64).to_le_bytes());
    for (expression, lowered) in names {
        put_bytes(&mut payload, expression.as_bytes());
        put_bytes(&mut payload, lowered.as_bytes());
    }
    put_bytes(&mut payload, code.code());

    let mut entry = Vec::with_capacity(HEADER_LEN + payload.len());
    entry.extend_from_slice(MAGIC);
    entry.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    entry.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    entry.extend_from_slice(&sha256(&payload));
    entry.extend_from_slice(&payload);
    entry
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads fields off the front of a byte slice; every read checks the length.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let length = usize::try_from(self.u64()?).ok()?;
        self.take(length)
    }

    fn string(&mut self) -> Option<String> {
        String::from_utf8(self.bytes()?.to_vec()).ok()
    }
}

fn decode_entry(key: &CacheKey, entry: &[u8]) -> Option<ObjectCode> {
    let mut header = Reader(entry);
    if header.take(8)? != MAGIC || header.u32()? != FORMAT_VERSION {
        return None;
    }
    let length = usize::try_from(header.u64()?).ok()?;
    let checksum = header.take(32)?;
    let payload = header.0;
    if payload.len() != length || sha256(payload) != checksum {
        return None;
    }
    let mut fields = Reader(payload);
    if fields.take(32)? != key.0 {
        return None;
    }
    let kind = CodeKind::from_tag(fields.u8()?)?;
    let arch = match (fields.u8()?, fields.u32()?) {
        (0, _) => None,
        (1, n) => Some(Arch::Sm(n)),
        (2, n) => Some(Arch::Compute(n)),
        _ => return None,
    };
    let log = fields.string()?;
    let count = usize::try_from(fields.u64()?).ok()?;
    let mut lowered_names = Vec::with_capacity(count.min(1024));
    for _ in 0..count {
        lowered_names.push((fields.string()?, fields.string()?));
    }
    let code = fields.bytes()?.to_vec();
    if !fields.0.is_empty() {
        return None;
    }
    Some(ObjectCode::from_parts(kind, arch, code, lowered_names, log))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_sha256_digests_shown_in_hex() {
        // FIPS 180-4's example "abc".
        assert_eq!(
            CacheKey(sha256(b"abc")).to_string(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    fn sample() -> ObjectCode {
        ObjectCode::from_parts(
            CodeKind::Cubin,
            Some(Arch::Sm(90)),
            b"\x7fELF code".to_vec(),
            vec![("f<int>".into(), "_Z1fIiEvv".into())],
            "warning: something".into(),
        )
    }

    #[test]
    fn entries_round_trip() {
        let key = CacheKey(sha256(b"k"));
        let decoded = decode_entry(&key, &encode_entry(&key, &sample())).expect("decodes");
        assert_eq!(decoded.kind(), CodeKind::Cubin);
        assert_eq!(decoded.arch(), Some(Arch::Sm(90)));
        assert_eq!(decoded.code(), b"\x7fELF code");
        assert_eq!(decoded.log(), "warning: something");
        assert_eq!(decoded.lowered_name("f<int>").unwrap(), "_Z1fIiEvv");
    }

    #[test]
    fn every_truncation_and_bit_flip_is_detected() {
        let key = CacheKey(sha256(b"k"));
        let entry = encode_entry(&key, &sample());
        for length in 0..entry.len() {
            assert!(decode_entry(&key, &entry[..length]).is_none(), "truncated to {length}");
        }
        for index in 0..entry.len() {
            let mut damaged = entry.clone();
            damaged[index] ^= 0x10;
            assert!(decode_entry(&key, &damaged).is_none(), "bit flipped at {index}");
        }
        let other = CacheKey(sha256(b"other"));
        assert!(
            decode_entry(&other, &entry).is_none(),
            "an entry under the wrong name is refused"
        );
    }
}
