//! The one registry of generated code: the kernels the crate writes (copy, fill, arange,
//! expressions, reductions, random), made once per process and found by a [`KernelKey`]; for each
//! kernel, the modules compiled (through the kernel cache) and loaded per context and signature;
//! how generated code is handed to the driver (CUBIN or PTX); unloading (by the program or the
//! exit hook); and the grid a grid-stride launch gets.

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use cuda_driver::{Context, DeviceAttribute, Function, Module};

use crate::array::kernels::signature::ArgType;
use crate::error::Result;
use crate::options::{CompileTarget, ProgramOptions};
use crate::program::Program;

/// What a kernel the crate writes is known by.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum KernelKey {
    /// A fixed kernel (copy, fill, arange, random): its name.
    Named(&'static str),
    /// A kernel generated from a description: its family and the description's encoding (an
    /// expression's tree and types, a reduction's operation and types).
    Encoded(&'static str, Vec<u32>),
}

/// The kernels the crate wrote, by family (or name) and then encoding: each made once and kept
/// for the process (their loaded code is per context, in their [`LoadedTable`]s, which
/// [`TABLES`] tracks for unloading). Two levels, so a launch finds its kernel from a borrowed
/// encoding, without building an owned key.
static KERNELS: Mutex<Option<Families>> = Mutex::new(None);

type Families = HashMap<&'static str, HashMap<Box<[u32]>, Arc<dyn Any + Send + Sync>, KeyHasher>, KeyHasher>;

/// A multiply-rotate hash over 8-byte words (the scheme of rustc's FxHash): the registry's keys
/// are short and made by this crate (no untrusted input to resist), and a kernel is looked up on
/// every launch.
#[derive(Clone, Copy, Default)]
struct WordHasher(u64);

impl WordHasher {
    #[inline]
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            self.mix(u64::from_le_bytes(word.try_into().unwrap_or_default()));
        }
        let mut tail = [0u8; 8];
        tail[..words.remainder().len()].copy_from_slice(words.remainder());
        self.mix(u64::from_le_bytes(tail) ^ (words.remainder().len() as u64) << 56);
    }

    #[inline]
    fn write_usize(&mut self, value: usize) {
        self.mix(value as u64);
    }
}

type KeyHasher = BuildHasherDefault<WordHasher>;

/// The kernel of `key`, made by `make` the first time. A key always names one kernel type.
pub(crate) fn kernel<K: Any + Send + Sync>(key: KernelKey, make: impl FnOnce() -> Result<K>) -> Result<Arc<K>> {
    match &key {
        KernelKey::Named(name) => kernel_encoded(name, &[], make),
        KernelKey::Encoded(family, encoding) => kernel_encoded(family, encoding, make),
    }
}

/// The kernel of `family` generated from `encoding` (see [`KernelKey::Encoded`]; a named kernel
/// has an empty encoding), made by `make` the first time. A thin typed shell over [`entry`],
/// which holds the registry's code once for every kernel type and call site.
pub(crate) fn kernel_encoded<K: Any + Send + Sync>(
    family: &'static str,
    encoding: &[u32],
    make: impl FnOnce() -> Result<K>,
) -> Result<Arc<K>> {
    let mut make = Some(make);
    let mut make_erased = || -> Result<Arc<dyn Any + Send + Sync>> {
        match make.take() {
            Some(make) => Ok(Arc::new(make()?)),
            None => Err(crate::Error::InvalidValue(format!(
                "kernel registry: {family} {encoding:?} was made twice"
            ))),
        }
    };
    entry(family, encoding, &mut make_erased)?.downcast::<K>().map_err(|_| {
        crate::Error::InvalidValue(format!(
            "kernel registry: {family} {encoding:?} holds another kind of kernel"
        ))
    })
}

/// The registry's entry of `family` and `encoding`, made by `make` (called at most once) when
/// there is none: from this thread's [`RECENT`] lookups when it is there, else from the registry.
fn entry(
    family: &'static str,
    encoding: &[u32],
    make: &mut dyn FnMut() -> Result<Arc<dyn Any + Send + Sync>>,
) -> Result<Arc<dyn Any + Send + Sync>> {
    // Read before the registry: a lookup that races with a forget is noted under the older
    // generation, which the forget has already moved past.
    let generation = GENERATION.load(Ordering::Acquire);
    // A thread whose locals are being torn down (a launch from another local's destructor)
    // has no record: it asks the registry.
    let recent = RECENT.try_with(|recent| recent.borrow().find(generation, family, encoding));
    if let Ok(Some(found)) = recent {
        return Ok(found);
    }
    let found = registry_entry(family, encoding, make)?;
    let _ = RECENT.try_with(|recent| recent.borrow_mut().note(generation, family, encoding, &found));
    Ok(found)
}

/// [`entry`] from the registry itself, under its lock.
fn registry_entry(
    family: &'static str,
    encoding: &[u32],
    make: &mut dyn FnMut() -> Result<Arc<dyn Any + Send + Sync>>,
) -> Result<Arc<dyn Any + Send + Sync>> {
    let mut kernels = KERNELS.lock().unwrap_or_else(PoisonError::into_inner);
    let kernels = kernels.get_or_insert_with(HashMap::default).entry(family).or_default();
    match kernels.get(encoding) {
        Some(found) => Ok(found.clone()),
        None => {
            let made = make()?;
            kernels.insert(encoding.into(), made.clone());
            Ok(made)
        }
    }
}

/// How many times the registry has let go of entries ([`forget_kernel`], [`forget_kernels`]):
/// a thread's [`RECENT`] lookups count only under the generation they were made in.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// Lookups each thread keeps, so that launching a kernel it launched lately (an expression in
/// a loop) takes neither the registry's lock nor a hash of its key.
const RECENT_LOOKUPS: usize = 4;
/// The longest encoding a thread's [`RECENT`] lookups keep (longer ones go to the registry):
/// an expression of 6 operands and 16 steps has at most 56 words.
const RECENT_ENCODING: usize = 64;

/// One lookup a thread keeps: the key, and the entry without a hold on it (the registry decides
/// how long entries live; a forgotten one is not found here either, by its generation).
struct Lookup {
    generation: u64,
    family: &'static str,
    len: usize,
    encoding: [u32; RECENT_ENCODING],
    entry: Weak<dyn Any + Send + Sync>,
}

/// A thread's recent lookups, replaced in turn.
struct Recent {
    lookups: [Option<Lookup>; RECENT_LOOKUPS],
    next: usize,
}

thread_local! {
    /// This thread's recent registry lookups.
    static RECENT: RefCell<Recent> = const {
        RefCell::new(Recent {
            lookups: [const { None }; RECENT_LOOKUPS],
            next: 0,
        })
    };
}

impl Recent {
    /// The entry of `family` and `encoding` if this thread looked it up in `generation` and it
    /// is still alive.
    fn find(&self, generation: u64, family: &'static str, encoding: &[u32]) -> Option<Arc<dyn Any + Send + Sync>> {
        self.lookups.iter().flatten().find_map(|lookup| {
            let hit = lookup.generation == generation
                && lookup.family == family
                && lookup.encoding.get(..lookup.len) == Some(encoding);
            match hit {
                true => lookup.entry.upgrade(),
                false => None,
            }
        })
    }

    /// Keeps a lookup made in `generation` (an encoding too long to keep is not kept).
    fn note(&mut self, generation: u64, family: &'static str, encoding: &[u32], entry: &Arc<dyn Any + Send + Sync>) {
        if encoding.len() > RECENT_ENCODING {
            return;
        }
        let mut kept = [0; RECENT_ENCODING];
        kept[..encoding.len()].copy_from_slice(encoding);
        self.lookups[self.next] = Some(Lookup {
            generation,
            family,
            len: encoding.len(),
            encoding: kept,
            entry: Arc::downgrade(entry),
        });
        self.next = (self.next + 1) % RECENT_LOOKUPS;
    }
}

/// Drops the registry's hold on the kernel (or library handle) of `family` and `encoding`; one
/// still held elsewhere lives until its holder lets go. A later lookup makes it again. (The
/// cuBLAS handles, feature `blas`, are the entries let go one by one.)
#[cfg(any(test, feature = "blas"))]
pub(crate) fn forget_kernel(family: &'static str, encoding: &[u32]) {
    let removed = KERNELS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .and_then(|families| families.get_mut(family))
        .and_then(|kernels| kernels.remove(encoding));
    GENERATION.fetch_add(1, Ordering::AcqRel);
    // Dropped here, outside the lock.
    drop(removed);
}

/// Drops every kernel (and library handle) the registry holds: for the exit hook, once the
/// contexts have been waited for. A later use makes them again.
pub(crate) fn forget_kernels() {
    let kernels = KERNELS.lock().unwrap_or_else(PoisonError::into_inner).take();
    GENERATION.fetch_add(1, Ordering::AcqRel);
    // Dropped here, outside the lock.
    drop(kernels);
}

/// Functions of generated code loaded in one context for one signature.
pub(crate) struct Loaded {
    context: Context,
    signature: Vec<ArgType>,
    /// What else the code is specialised on (the caller's encoding; 0 for none).
    variant: u64,
    pub(crate) functions: Vec<Function>,
    /// Streaming multiprocessors of the device.
    pub(crate) sm_count: u32,
}

/// The entries of a [`LoadedTable`].
type Entries = Mutex<Vec<Arc<Loaded>>>;

/// The per-kernel table of loaded code.
#[derive(Default)]
pub(crate) struct LoadedTable {
    /// Shared (weakly) with [`TABLES`], so the exit hook can unload it.
    entries: Arc<Entries>,
}

/// Every table holding loaded code: registered when it loads its first entry, dropped from
/// here when [`unload_loaded`] empties it or the table itself is gone.
static TABLES: Mutex<Vec<Weak<Entries>>> = Mutex::new(Vec::new());

/// The contexts generated code is loaded in.
pub(crate) fn loaded_contexts() -> Vec<Context> {
    let tables: Vec<Arc<Entries>> = TABLES
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .filter_map(Weak::upgrade)
        .collect();
    let mut contexts: Vec<Context> = Vec::new();
    for table in tables {
        for entry in table.lock().unwrap_or_else(PoisonError::into_inner).iter() {
            if !contexts.contains(&entry.context) {
                contexts.push(entry.context.clone());
            }
        }
    }
    contexts
}

/// Whether generated code is loaded as PTX (see [`load_generated_as_ptx`]).
static GENERATED_AS_PTX: AtomicBool = AtomicBool::new(false);

/// Whether the code cuda-core generates (expressions, reductions, random, `ElementwiseKernel`,
/// `ReductionKernel`) is handed to the driver as PTX, which the driver's JIT compiles, instead
/// of NVRTC's CUBIN for the device (the default). PTX runs on a device newer than the NVRTC in
/// use knows, and on drivers that take only PTX (the test suites' stand-in driver); CUBIN
/// loads faster. Affects code loaded after the call; loaded code stays as it is.
pub fn load_generated_as_ptx(ptx: bool) {
    GENERATED_AS_PTX.store(ptx, Ordering::Relaxed);
}

/// Unloads the modules of every generated kernel in every context (expressions, reductions,
/// random, and the loaded code of `ElementwiseKernel` and `ReductionKernel` objects); a later
/// launch loads them again, from the kernel cache. Call it when none of their launches is
/// queued (after synchronising), to give back the modules' memory or before tearing down a
/// context; the exit hook does the same when the process ends.
///
/// While a [`GraphBuilder`](crate::GraphBuilder) or an executable graph of one lives, this
/// does nothing: such a graph may launch generated kernels captured on a forked stream, whose
/// modules only this registry keeps.
pub fn unload_generated_kernels() {
    if GRAPH_PINS.load(Ordering::Acquire) != 0 {
        return;
    }
    unload_loaded(|_| true);
}

/// Graph builders and their executable graphs alive now (see [`unload_generated_kernels`]).
static GRAPH_PINS: AtomicUsize = AtomicUsize::new(0);

/// Keeps [`unload_generated_kernels`] from unloading while it lives.
#[derive(Debug)]
pub(crate) struct GeneratedKernelsPin(());

impl GeneratedKernelsPin {
    pub(crate) fn new() -> GeneratedKernelsPin {
        GRAPH_PINS.fetch_add(1, Ordering::AcqRel);
        GeneratedKernelsPin(())
    }
}

impl Drop for GeneratedKernelsPin {
    fn drop(&mut self) {
        GRAPH_PINS.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Drops every table's code loaded in a context `usable` accepts; the modules are unloaded as
/// the last launch holding them ends (a launch in progress keeps its own reference). A later
/// call loads the code again. For the exit hook.
pub(crate) fn unload_loaded(usable: impl Fn(&Context) -> bool) {
    let tables = std::mem::take(&mut *TABLES.lock().unwrap_or_else(PoisonError::into_inner));
    let mut kept = Vec::new();
    let mut unloaded = Vec::new();
    for table in tables.iter().filter_map(Weak::upgrade) {
        let mut entries = table.lock().unwrap_or_else(PoisonError::into_inner);
        let (gone, stay): (Vec<_>, Vec<_>) = std::mem::take(&mut *entries)
            .into_iter()
            .partition(|e| usable(&e.context));
        *entries = stay;
        if !entries.is_empty() {
            kept.push(Arc::downgrade(&table));
        }
        unloaded.extend(gone);
    }
    TABLES.lock().unwrap_or_else(PoisonError::into_inner).extend(kept);
    // Unloaded here, outside the locks.
    drop(unloaded);
}

impl LoadedTable {
    /// The streaming multiprocessors of `context`'s device: from code already loaded there, else
    /// asked of the device (what a launch needs to size its grid before choosing a variant).
    pub(crate) fn sm_count(&self, context: &Context) -> Result<u32> {
        let known = self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|e| &e.context == context)
            .map(|e| e.sm_count);
        match known {
            Some(count) => Ok(count),
            None => device_sm_count(context),
        }
    }

    /// The functions of generated code for `signature` in `context`. On first use `generate`
    /// gives the source and the names of the functions wanted, which are compiled (through the
    /// kernel cache) and loaded.
    pub(crate) fn get_or_load(
        &self,
        context: &Context,
        signature: &[ArgType],
        variant: u64,
        generate: impl FnOnce() -> Result<(String, Vec<String>)>,
    ) -> Result<std::sync::Arc<Loaded>> {
        let find = |entries: &Vec<std::sync::Arc<Loaded>>| {
            entries
                .iter()
                .find(|e| e.variant == variant && &e.context == context && e.signature == signature)
                .cloned()
        };
        if let Some(found) = find(&self.entries.lock().unwrap_or_else(PoisonError::into_inner)) {
            return Ok(found);
        }
        let device = context.device();
        let (major, minor) = device.compute_capability()?;
        let (source, names) = generate()?;
        let wanted = match GENERATED_AS_PTX.load(Ordering::Relaxed) {
            true => CompileTarget::Ptx,
            false => CompileTarget::Cubin,
        };
        // The device's own CUBIN where this NVRTC knows it; PTX the driver compiles otherwise.
        let (arch, target) = crate::device_target(major, minor, wanted)?;
        let program = Program::new(source, ProgramOptions::for_arch(arch));
        let code = program.compile(target)?;
        let module = Module::from_image(context, code.code())?;
        let functions = names
            .iter()
            .map(|name| module.function(name))
            .collect::<cuda_driver::Result<Vec<_>>>()?;
        let sm_count = device_sm_count(context)?;
        let loaded = std::sync::Arc::new(Loaded {
            context: context.clone(),
            signature: signature.to_vec(),
            variant,
            functions,
            sm_count,
        });
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = find(&entries) {
            return Ok(found);
        }
        let first = entries.is_empty();
        entries.push(loaded.clone());
        drop(entries);
        if first {
            let mut tables = TABLES.lock().unwrap_or_else(PoisonError::into_inner);
            tables.retain(|t| t.strong_count() > 0);
            tables.push(Arc::downgrade(&self.entries));
            drop(tables);
            crate::at_exit::register();
        }
        Ok(loaded)
    }
}

/// The streaming multiprocessors of `context`'s device (at least 1).
fn device_sm_count(context: &Context) -> Result<u32> {
    let count = context
        .device()
        .attribute(DeviceAttribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    Ok(u32::try_from(count).unwrap_or(1).max(1))
}

/// Blocks of `BLOCK` threads for `units` units of work, at most `per_sm` blocks per SM.
pub(crate) fn grid_for(units: u64, block: u32, sm_count: u32, per_sm: u32) -> u32 {
    let needed = units.div_ceil(u64::from(block)).max(1);
    needed.min(u64::from(sm_count) * u64::from(per_sm)) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_cover_the_work_up_to_a_per_sm_limit() {
        assert_eq!(grid_for(0, 256, 132, 8), 1);
        assert_eq!(grid_for(1000, 256, 132, 8), 4);
        assert_eq!(grid_for(1 << 28, 256, 132, 8), 1056);
    }

    #[test]
    fn recent_lookups_find_what_the_registry_holds_and_nothing_it_let_go() {
        use std::sync::atomic::AtomicUsize;
        const FAMILY: &str = "registry test: recent lookups";
        let made = AtomicUsize::new(0);
        let make = |value: u64| {
            made.fetch_add(1, Ordering::Relaxed);
            Ok(value)
        };
        let first = kernel_encoded(FAMILY, &[1, 2, 3], || make(1)).unwrap();
        // Found again (from this thread's recent lookups), not made again.
        let again = kernel_encoded(FAMILY, &[1, 2, 3], || make(2)).unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        assert_eq!(made.load(Ordering::Relaxed), 1);
        // Another encoding, a prefix, and a longer one are other kernels.
        assert_eq!(*kernel_encoded(FAMILY, &[1, 2, 4], || make(3)).unwrap(), 3);
        assert_eq!(*kernel_encoded(FAMILY, &[1, 2], || make(4)).unwrap(), 4);
        assert_eq!(*kernel_encoded(FAMILY, &[1, 2, 3, 0], || make(5)).unwrap(), 5);
        // More kernels than a thread keeps: the first is still found, in the registry.
        for word in 10..10 + RECENT_LOOKUPS as u32 {
            kernel_encoded(FAMILY, &[word], || make(0)).unwrap();
        }
        assert!(Arc::ptr_eq(
            &first,
            &kernel_encoded(FAMILY, &[1, 2, 3], || make(6)).unwrap()
        ));
        // An encoding too long to keep is found in the registry.
        let long = [7u32; RECENT_ENCODING + 1];
        let long_first = kernel_encoded(FAMILY, &long, || make(7)).unwrap();
        assert!(Arc::ptr_eq(
            &long_first,
            &kernel_encoded(FAMILY, &long, || make(8)).unwrap()
        ));
        let count = made.load(Ordering::Relaxed);
        // Once the registry lets go of it, it is made again, although this thread looked it up
        // lately and the first one is still held here.
        forget_kernel(FAMILY, &[1, 2, 3]);
        let remade = kernel_encoded(FAMILY, &[1, 2, 3], || make(9)).unwrap();
        assert_eq!((*remade, made.load(Ordering::Relaxed)), (9, count + 1));
        assert!(!Arc::ptr_eq(&first, &remade));
        // The recent lookups hold no entry alive: forgotten and dropped, it is gone.
        let weak = Arc::downgrade(&remade);
        drop(remade);
        forget_kernel(FAMILY, &[1, 2, 3]);
        assert!(weak.upgrade().is_none());
        // Another kind of kernel under the same key is an error, from the recent lookups too.
        let error = kernel_encoded(FAMILY, &[1, 2, 4], || Ok("text")).expect_err("a u64 is there");
        assert!(error.to_string().contains("another kind of kernel"), "{error}");
    }
}
