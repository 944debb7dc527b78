//! Contexts: the primary context of a device (retained and released) or an
//! explicit one, plus the bookkeeping every object of the context shares:
//! errors from destructors and cached device limits.

use std::fmt;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use cuda_sys::driver::{CUcontext, CUresult};

use crate::error::{check, check_drop, DriverError, Error, Result};
use crate::flags::ContextFlags;
use crate::init::api;
use crate::Device;

/// A context resource limit (`CUlimit`), for [`Context::limit`].
pub use cuda_sys::driver::CUlimit as ContextLimit;

/// A CUDA context. Cheap to clone: clones share one handle, which is
/// released (primary) or destroyed (explicit) when the last clone and the
/// last object made in it are gone.
///
/// Every method of every object in this crate makes its context current on
/// the calling thread first, so objects can be used from any thread.
#[derive(Clone)]
pub struct Context {
    pub(crate) inner: Arc<ContextInner>,
}

pub(crate) struct ContextInner {
    raw: CUcontext,
    device: Device,
    primary: bool,
    has_deferred: AtomicBool,
    deferred: Mutex<Vec<DriverError>>,
    limits: OnceLock<DeviceLimits>,
}

/// Device limits a launch is checked against, read once per context.
#[derive(Clone, Copy, Debug)]
pub(crate) struct DeviceLimits {
    pub(crate) max_block: (u32, u32, u32),
    pub(crate) max_grid: (u32, u32, u32),
}

// SAFETY: a CUcontext is a process-wide handle that the driver lets any
// thread make current and use; the remaining fields are Sync themselves.
unsafe impl Send for ContextInner {}
// SAFETY: as above; shared access only reads the handle or goes through
// atomics and a mutex.
unsafe impl Sync for ContextInner {}

/// One retained primary context per device, shared by every `Context::primary`
/// call while any is alive, so all of them see the same recorded errors.
static PRIMARY: Mutex<Vec<Weak<ContextInner>>> = Mutex::new(Vec::new());

impl Context {
    /// The device's primary context (the one the runtime API uses), retained
    /// with `cuDevicePrimaryCtxRetain` and released when the last handle and
    /// object are dropped.
    pub fn primary(device: &Device) -> Result<Context> {
        let driver = api()?;
        let mut registry = PRIMARY.lock().unwrap_or_else(|e| e.into_inner());
        let slot = device.ordinal() as usize;
        if let Some(inner) = registry.get(slot).and_then(Weak::upgrade) {
            return Ok(Context { inner });
        }
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer; the device handle came from `cuDeviceGet`.
        check(unsafe { driver.cuDevicePrimaryCtxRetain()?(&mut raw, device.as_raw()) })?;
        let inner = Arc::new(ContextInner::new(raw, *device, true));
        if registry.len() <= slot {
            registry.resize_with(slot + 1, Weak::new);
        }
        registry[slot] = Arc::downgrade(&inner);
        Ok(Context { inner })
    }

    /// A new context of its own on `device` (`cuCtxCreate`), destroyed when
    /// the last handle and object are dropped. The calling thread's current
    /// context is left as it was.
    pub fn new(device: &Device, flags: ContextFlags) -> Result<Context> {
        let driver = api()?;
        let mut raw = ptr::null_mut();
        match driver.cuCtxCreate_v4() {
            // SAFETY: `raw` is a valid out-pointer; null creation parameters are allowed.
            Ok(create) => check(unsafe { create(&mut raw, ptr::null_mut(), flags.bits(), device.as_raw()) })?,
            // Drivers before 12.5 have the same context without creation parameters.
            Err(missing) if missing.needs_version.is_some() => {
                // SAFETY: as above; the 12.x ABI takes flags and device only.
                check(unsafe { driver.cuCtxCreate_v2()?(&mut raw, flags.bits(), device.as_raw()) })?
            }
            Err(missing) => return Err(missing.into()),
        }
        let context = Context {
            inner: Arc::new(ContextInner::new(raw, *device, false)),
        };
        let mut popped = ptr::null_mut();
        // SAFETY: `cuCtxCreate` pushed the new context on this thread's stack; popping it restores
        // the caller's current context. `popped` is a valid out-pointer.
        check(unsafe { driver.cuCtxPopCurrent_v2()?(&mut popped) })?;
        Ok(context)
    }

    /// The device this context belongs to.
    pub fn device(&self) -> Device {
        self.inner.device
    }

    /// Whether this is its device's primary context.
    pub fn is_primary(&self) -> bool {
        self.inner.primary
    }

    /// Makes this context current on the calling thread (`cuCtxSetCurrent`).
    /// Methods of this crate do this themselves; this is for calls into other
    /// code that expects a current context.
    pub fn set_current(&self) -> Result<()> {
        // SAFETY: the handle is alive while `self` is.
        check(unsafe { api()?.cuCtxSetCurrent()?(self.inner.raw) })
    }

    /// Waits for all work in this context, then returns errors kept from
    /// destructors (see [`Context::check_deferred`]) or the driver's error.
    pub fn synchronize(&self) -> Result<()> {
        let driver = self.bind()?;
        // SAFETY: the context is current on this thread.
        let result = check(unsafe { driver.cuCtxSynchronize()?() });
        self.check_deferred()?;
        result
    }

    /// Waits for all work in this context (`cuCtxSynchronize`) without taking the errors kept
    /// from destructors: they stay for [`Context::synchronize`] or [`Context::check_deferred`].
    /// For a layer that waits on its own account (a pool making room after running out of
    /// memory), whose caller did not ask for those errors.
    pub fn synchronize_quiet(&self) -> Result<()> {
        synchronize_current(self.bind()?)
    }

    /// Returns, once, the errors that destructors (`Drop`) of this context's
    /// objects hit since the last call, as [`Error::Deferred`].
    pub fn check_deferred(&self) -> Result<()> {
        if !self.inner.has_deferred.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut deferred = self.inner.deferred.lock().unwrap_or_else(|e| e.into_inner());
        self.inner.has_deferred.store(false, Ordering::Release);
        let errors = std::mem::take(&mut *deferred);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(Error::Deferred(errors))
        }
    }

    /// `(free, total)` device memory in bytes, as this context sees it.
    pub fn memory_info(&self) -> Result<(usize, usize)> {
        let driver = self.bind()?;
        let (mut free, mut total) = (0, 0);
        // SAFETY: both are valid out-pointers; the context is current.
        check(unsafe { driver.cuMemGetInfo_v2()?(&mut free, &mut total) })?;
        Ok((free, total))
    }

    /// `(least, greatest)` stream priorities; numerically lower is higher priority.
    pub fn stream_priority_range(&self) -> Result<(i32, i32)> {
        let driver = self.bind()?;
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: both are valid out-pointers; the context is current.
        check(unsafe { driver.cuCtxGetStreamPriorityRange()?(&mut least, &mut greatest) })?;
        Ok((least, greatest))
    }

    /// A resource limit of this context (`cuCtxGetLimit`), e.g. the
    /// per-thread stack size or the `printf` buffer size.
    pub fn limit(&self, limit: ContextLimit) -> Result<usize> {
        let driver = self.bind()?;
        let mut value = 0;
        // SAFETY: valid out-pointer; the context is current.
        check(unsafe { driver.cuCtxGetLimit()?(&mut value, limit) })?;
        Ok(value)
    }

    /// Sets a resource limit of this context (`cuCtxSetLimit`).
    pub fn set_limit(&self, limit: ContextLimit, value: usize) -> Result<()> {
        let driver = self.bind()?;
        // SAFETY: the context is current; a bad limit or value is an error code.
        check(unsafe { driver.cuCtxSetLimit()?(limit, value) })
    }

    /// Lets kernels and copies of this context access memory of `peer`'s
    /// context directly (`cuCtxEnablePeerAccess`). Enabling it twice is not
    /// an error. Check [`Device::can_access_peer`] first.
    pub fn enable_peer_access(&self, peer: &Context) -> Result<()> {
        if self == peer {
            return Err(Error::InvalidValue("a context cannot be its own peer".into()));
        }
        let driver = self.bind()?;
        // SAFETY: the peer handle is alive while `peer` is; flags must be 0.
        let result = unsafe { driver.cuCtxEnablePeerAccess()?(peer.inner.raw, 0) };
        if result == CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
            return Ok(());
        }
        check(result)
    }

    /// Undoes [`Context::enable_peer_access`].
    pub fn disable_peer_access(&self, peer: &Context) -> Result<()> {
        let driver = self.bind()?;
        // SAFETY: the peer handle is alive while `peer` is.
        check(unsafe { driver.cuCtxDisablePeerAccess()?(peer.inner.raw) })
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// The handle is valid only while this `Context` (or a clone) is alive;
    /// the caller must not destroy, release or pop it.
    pub unsafe fn as_raw(&self) -> CUcontext {
        self.inner.raw
    }

    pub(crate) fn raw(&self) -> CUcontext {
        self.inner.raw
    }

    /// Makes the context current on this thread if it is not already, and
    /// returns the driver. Cheap when it is current: one `cuCtxGetCurrent`.
    #[inline]
    pub(crate) fn bind(&self) -> Result<&'static cuda_sys::Driver> {
        self.inner.bind()
    }

    /// Limits of the context's device, read on first use.
    pub(crate) fn limits(&self) -> Result<DeviceLimits> {
        if let Some(limits) = self.inner.limits.get() {
            return Ok(*limits);
        }
        let device = self.inner.device;
        let limits = DeviceLimits {
            max_block: device.max_block_dim()?,
            max_grid: device.max_grid_dim()?,
        };
        Ok(*self.inner.limits.get_or_init(|| limits))
    }

    /// Records an error a destructor hit, for [`Context::check_deferred`], and logs it.
    pub(crate) fn record_drop_error(&self, what: &str, error: Error) {
        self.inner.record_drop_error(what, error);
    }

    /// Records `result`'s error, if any, as [`Context::record_drop_error`] does.
    pub(crate) fn record_drop_result(&self, what: &str, result: Result<()>) {
        if let Err(error) = result {
            self.inner.record_drop_error(what, error);
        }
    }

    /// For destructors: the driver, with this context made current if that
    /// works. A failure to make it current is recorded, and the caller goes
    /// on to attempt its release anyway (the driver finds the context of
    /// most handles itself). `None` only when no driver can be loaded, when
    /// nothing can be released.
    pub(crate) fn bind_for_drop(&self, what: &str) -> Option<&'static cuda_sys::Driver> {
        let driver = match api() {
            Ok(driver) => driver,
            Err(error) => {
                self.inner.record_drop_error(what, error);
                return None;
            }
        };
        if let Err(error) = self.inner.make_current(driver) {
            self.inner
                .record_drop_error(&format!("making the context current for {what}"), error);
        }
        Some(driver)
    }

    /// Fails with `WrongContext` unless `other` is this context.
    #[inline]
    pub(crate) fn expect_same(&self, other: &Context, object: &'static str, used_with: &'static str) -> Result<()> {
        if self.inner.raw == other.inner.raw {
            Ok(())
        } else {
            Err(Error::WrongContext { object, used_with })
        }
    }
}

/// Waits for all work of the calling thread's current context (`cuCtxSynchronize`).
pub(crate) fn synchronize_current(driver: &cuda_sys::Driver) -> Result<()> {
    // SAFETY: synchronising has no preconditions; without a current context it is an error code.
    check(unsafe { driver.cuCtxSynchronize()?() })
}

impl ContextInner {
    fn new(raw: CUcontext, device: Device, primary: bool) -> Self {
        Self {
            raw,
            device,
            primary,
            has_deferred: AtomicBool::new(false),
            deferred: Mutex::new(Vec::new()),
            limits: OnceLock::new(),
        }
    }

    #[inline]
    fn bind(&self) -> Result<&'static cuda_sys::Driver> {
        let driver = api()?;
        let mut current = ptr::null_mut();
        // SAFETY: `current` is a valid out-pointer.
        check(unsafe { driver.cuCtxGetCurrent()?(&mut current) })?;
        if current != self.raw {
            // SAFETY: the handle is alive while `self` is.
            check(unsafe { driver.cuCtxSetCurrent()?(self.raw) })?;
        }
        Ok(driver)
    }

    /// Like `bind`, but when asking for the current context fails it still
    /// sets this one, and returns the first error it met.
    fn make_current(&self, driver: &'static cuda_sys::Driver) -> Result<()> {
        let mut current = ptr::null_mut();
        let asked = match driver.cuCtxGetCurrent() {
            // SAFETY: `current` is a valid out-pointer.
            Ok(get) => check(unsafe { get(&mut current) }),
            Err(error) => Err(error.into()),
        };
        if asked.is_ok() && current == self.raw {
            return Ok(());
        }
        let set = match driver.cuCtxSetCurrent() {
            // SAFETY: the handle is alive while `self` is.
            Ok(set) => check(unsafe { set(self.raw) }),
            Err(error) => Err(error.into()),
        };
        asked.and(set)
    }

    fn record_drop_error(&self, what: &str, error: Error) {
        eprintln!("cuda-driver: {what} failed while dropping: {error}");
        let driver_error = match error {
            Error::Driver(e) => e,
            Error::Deferred(mut errors) if !errors.is_empty() => errors.remove(0),
            _ => return,
        };
        let mut deferred = self.deferred.lock().unwrap_or_else(|e| e.into_inner());
        deferred.push(driver_error);
        self.has_deferred.store(true, Ordering::Release);
    }
}

impl Drop for ContextInner {
    fn drop(&mut self) {
        let Ok(driver) = api() else { return };
        let result = if self.primary {
            // SAFETY: this handle holds one retain of the device's primary context.
            unsafe { driver.cuDevicePrimaryCtxRelease_v2().map(|f| f(self.device.as_raw())) }
        } else {
            // SAFETY: this handle created the context and nothing of it outlives this point.
            unsafe { driver.cuCtxDestroy_v2().map(|f| f(self.raw)) }
        };
        match result
            .map_err(Error::from)
            .and_then(|r| check_drop(r).map_err(Error::from))
        {
            Ok(()) => {}
            Err(error) => eprintln!("cuda-driver: releasing a context failed: {error}"),
        }
        let deferred = self.deferred.get_mut().unwrap_or_else(|e| e.into_inner());
        for error in deferred.drain(..) {
            eprintln!("cuda-driver: unreported destructor error at context release: {error}");
        }
    }
}

impl PartialEq for Context {
    fn eq(&self, other: &Context) -> bool {
        self.inner.raw == other.inner.raw
    }
}

impl Eq for Context {}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.inner.device.ordinal())
            .field("primary", &self.inner.primary)
            .field("raw", &self.inner.raw)
            .finish()
    }
}
