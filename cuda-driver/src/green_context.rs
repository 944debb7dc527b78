//! Green contexts: a device's streaming multiprocessors split into partitions
//! (`cuDevSmResourceSplitByCount`), and contexts whose streams run kernels on one partition only
//! (`cuGreenCtxCreate`, `cuGreenCtxStreamCreate`).
//!
//! ```no_run
//! use cuda_driver::{Device, GreenContext};
//!
//! # fn main() -> cuda_driver::Result<()> {
//! let device = Device::get(0)?;
//! let sms = device.sm_resource()?;
//! // One group of 16 SMs; the rest of the device is the remainder.
//! let split = sms.split(1, 16)?;
//! let green = GreenContext::new(&device, &split.groups[..1])?;
//! let stream = green.stream()?;
//! // Kernels of `green.context()` (the device's primary context) launched on `stream` run on the
//! // group's SMs only.
//! # drop(stream);
//! # Ok(())
//! # }
//! ```

use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use cuda_sys::driver::{
    CUcontext, CUdevResource, CUdevResourceType, CUdevSmResource, CUgreenCtx, CUgreenCtxCreate_flags, CUstream_flags,
};

use crate::error::{check, check_resolved, Error, Result};
use crate::init::api;
use crate::{Context, Device, Stream};

/// Numbers each split, so that resources of different splits are never combined in one green
/// context (the driver requires one split's outputs).
static SPLITS: AtomicU64 = AtomicU64::new(1);

/// A set of streaming multiprocessors (`CUdevResource` of type SM): a whole device
/// ([`Device::sm_resource`]), a group or remainder of a split ([`SmResource::split`]), or what a
/// green context holds ([`GreenContext::sm_resource`]).
#[derive(Clone, Copy)]
pub struct SmResource {
    raw: CUdevResource,
    device: Device,
    /// The split this resource came out of; `None` for a device's or green context's resource.
    split: Option<u64>,
}

/// The result of [`SmResource::split`]: groups of at least the asked-for SM count each, and the
/// SMs left over.
#[derive(Clone)]
pub struct SmSplit {
    /// The groups, as many as asked for.
    pub groups: Vec<SmResource>,
    /// The SMs in no group, if any. The driver gives it weaker guarantees than the groups (its
    /// SMs may not be co-scheduled).
    pub remainder: Option<SmResource>,
}

impl Device {
    /// All the device's streaming multiprocessors as a resource to split
    /// (`cuDeviceGetDevResource`). Needs a driver for CUDA 12.4 or newer.
    pub fn sm_resource(&self) -> Result<SmResource> {
        let driver = api()?;
        let mut raw = empty_resource();
        // SAFETY: `raw` is a valid out-pointer for one resource; the device handle came from
        // `cuDeviceGet`.
        check(unsafe {
            driver.cuDeviceGetDevResource()?(self.as_raw(), &mut raw, CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM)
        })?;
        Ok(SmResource {
            raw,
            device: *self,
            split: None,
        })
    }
}

impl SmResource {
    fn sm(&self) -> CUdevSmResource {
        // SAFETY: every `SmResource` holds a resource of type SM, whose union field is `sm`.
        unsafe { self.raw.__bindgen_anon_1.sm }
    }

    /// The SMs in this resource.
    pub fn sm_count(&self) -> u32 {
        self.sm().smCount
    }

    /// The fewest SMs a group split from this resource can have.
    pub fn min_partition_size(&self) -> u32 {
        self.sm().minSmPartitionSize
    }

    /// The SMs guaranteed to be co-scheduled together; group sizes are rounded up to a multiple
    /// of it.
    pub fn coscheduled_alignment(&self) -> u32 {
        self.sm().smCoscheduledAlignment
    }

    /// The device the SMs belong to.
    pub fn device(&self) -> Device {
        self.device
    }

    /// Splits off `groups` groups of at least `sms_per_group` SMs each
    /// (`cuDevSmResourceSplitByCount`); the SMs left over are the remainder. Asking for more SMs
    /// than the resource has is [`Error::SmSplit`] before the driver is called, and so is a split
    /// the driver makes with fewer groups (it rounds each group up to the
    /// [alignment](SmResource::coscheduled_alignment)). A group or remainder of a split cannot be
    /// split again (a driver limitation): split a [`GreenContext::sm_resource`] instead.
    pub fn split(&self, groups: u32, sms_per_group: u32) -> Result<SmSplit> {
        if groups == 0 || sms_per_group == 0 {
            return Err(Error::InvalidValue(format!(
                "an SM split needs at least one group of at least one SM ({groups} groups of {sms_per_group} asked for)"
            )));
        }
        if self.split.is_some() {
            return Err(Error::InvalidValue(
                "a group or remainder of an SM split cannot be split again; create a green context from it \
                 and split its sm_resource()"
                    .into(),
            ));
        }
        let available = self.sm_count();
        let too_large = Error::SmSplit {
            groups,
            sms_per_group,
            available,
            made: None,
        };
        match groups.checked_mul(sms_per_group) {
            Some(total) if total <= available => {}
            _ => return Err(too_large),
        }
        let driver = api()?;
        let mut made = groups;
        let mut result = vec![empty_resource(); groups as usize];
        let mut remainder = empty_resource();
        // SAFETY: `result` has room for `made` resources, `remainder` for one; `self.raw` is an
        // SM resource the driver filled in.
        check(unsafe {
            driver.cuDevSmResourceSplitByCount()?(
                result.as_mut_ptr(),
                &mut made,
                &self.raw,
                &mut remainder,
                0,
                sms_per_group,
            )
        })?;
        if made < groups {
            return Err(Error::SmSplit {
                groups,
                sms_per_group,
                available,
                made: Some(made),
            });
        }
        let split = Some(SPLITS.fetch_add(1, Ordering::Relaxed));
        let wrap = |raw| SmResource {
            raw,
            device: self.device,
            split,
        };
        // SAFETY: the driver wrote an SM resource or left the remainder zeroed (type INVALID).
        let has_remainder = remainder.type_ == CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM
            && unsafe { remainder.__bindgen_anon_1.sm.smCount } > 0;
        Ok(SmSplit {
            groups: result.into_iter().map(wrap).collect(),
            remainder: has_remainder.then(|| wrap(remainder)),
        })
    }
}

impl std::fmt::Debug for SmResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmResource")
            .field("device", &self.device.ordinal())
            .field("sm_count", &self.sm_count())
            .field("min_partition_size", &self.min_partition_size())
            .field("coscheduled_alignment", &self.coscheduled_alignment())
            .finish()
    }
}

impl std::fmt::Debug for SmSplit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmSplit")
            .field("groups", &self.groups)
            .field("remainder", &self.remainder)
            .finish()
    }
}

fn empty_resource() -> CUdevResource {
    // SAFETY: `CUdevResource` is plain C data (an enum tag, bytes and a union of integers); all
    // zeroes is the INVALID resource.
    unsafe { std::mem::zeroed() }
}

/// A green context (`CUgreenCtx`): a partition of a device's SMs that the kernels launched on its
/// streams run on. Cheap to clone; destroyed (`cuGreenCtxDestroy`) when the last clone and the
/// last stream made from it are gone.
///
/// Kernels, memory and events are those of the device's primary context ([`GreenContext::context`],
/// held alive by the green context, as the driver does): a [`Stream`] from
/// [`GreenContext::stream`] belongs to that context for every check of this crate, so kernels of
/// its modules launch there through the usual launch methods and use its buffers.
///
/// This crate never makes the green context current on a thread (the driver documents that a
/// green context may be current to one thread at a time); it only creates streams from it and
/// reads its resources, and those calls are serialised by a lock.
#[derive(Clone)]
pub struct GreenContext {
    inner: Arc<GreenContextInner>,
}

pub(crate) struct GreenContextInner {
    raw: CUgreenCtx,
    /// The device's primary context: where the green context's streams' work is checked.
    context: Context,
    /// Serialises the calls that use `raw` (the driver has no lock of its own for them).
    calls: Mutex<()>,
}

// SAFETY: the handle is only passed to the driver under `calls`, and destroyed once, by the last
// owner; it is never made current on any thread. `Context` is Send and Sync.
unsafe impl Send for GreenContextInner {}
// SAFETY: as above: shared access goes through the mutex.
unsafe impl Sync for GreenContextInner {}

impl GreenContext {
    /// A green context over `resources` (`cuDevResourceGenerateDesc`, `cuGreenCtxCreate`): one
    /// SM resource of `device`, or several groups of one split. Needs a driver for CUDA 12.4 or
    /// newer ([`Error::NotSupported`] otherwise). The device's primary context is retained first
    /// (the driver's advice) and held as long as the green context.
    pub fn new(device: &Device, resources: &[SmResource]) -> Result<GreenContext> {
        let Some(first) = resources.first() else {
            return Err(Error::InvalidValue(
                "a green context needs at least one SM resource".into(),
            ));
        };
        if let Some(other) = resources.iter().find(|r| r.device != *device) {
            return Err(Error::InvalidValue(format!(
                "an SM resource of device {} cannot make a green context on device {}",
                other.device.ordinal(),
                device.ordinal()
            )));
        }
        if resources.len() > 1 && (first.split.is_none() || resources.iter().any(|r| r.split != first.split)) {
            return Err(Error::InvalidValue(
                "several SM resources in one green context must all come from one split".into(),
            ));
        }
        let context = Context::primary(device)?;
        let driver = api()?;
        let mut raw_resources: Vec<CUdevResource> = resources.iter().map(|r| r.raw).collect();
        let mut desc = ptr::null_mut();
        // SAFETY: `desc` is a valid out-pointer; `raw_resources` holds `len` resources the driver
        // filled in. The descriptor is the driver's to manage (there is no destroy call).
        check(unsafe {
            driver.cuDevResourceGenerateDesc()?(&mut desc, raw_resources.as_mut_ptr(), raw_resources.len() as u32)
        })?;
        let mut raw = ptr::null_mut();
        // SAFETY: `raw` is a valid out-pointer and `desc` a descriptor just generated; the
        // default-stream flag is required by the driver.
        check(unsafe {
            driver.cuGreenCtxCreate()?(
                &mut raw,
                desc,
                device.as_raw(),
                CUgreenCtxCreate_flags::CU_GREEN_CTX_DEFAULT_STREAM.0,
            )
        })?;
        Ok(GreenContext {
            inner: Arc::new(GreenContextInner {
                raw,
                context,
                calls: Mutex::new(()),
            }),
        })
    }

    /// The device's primary context, which the green context's streams belong to: load the
    /// kernels they run and allocate the memory they use here.
    pub fn context(&self) -> &Context {
        &self.inner.context
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.inner.context.device()
    }

    /// The SMs the green context holds (`cuGreenCtxGetDevResource`); it can be split again.
    pub fn sm_resource(&self) -> Result<SmResource> {
        let driver = api()?;
        let mut raw = empty_resource();
        let _calls = self.inner.calls.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `raw` is a valid out-pointer; the green context is alive while `self` is.
        check(unsafe {
            driver.cuGreenCtxGetDevResource()?(self.inner.raw, &mut raw, CUdevResourceType::CU_DEV_RESOURCE_TYPE_SM)
        })?;
        Ok(SmResource {
            raw,
            device: self.device(),
            split: None,
        })
    }

    /// A new non-blocking stream whose kernels run on the green context's SMs
    /// (`cuGreenCtxStreamCreate`, which needs a driver for CUDA 12.5 or newer). The stream
    /// keeps the green context alive.
    pub fn stream(&self) -> Result<Stream> {
        self.stream_with_priority(0)
    }

    /// As [`GreenContext::stream`], with a priority (see [`Context::stream_priority_range`]).
    pub fn stream_with_priority(&self, priority: i32) -> Result<Stream> {
        let driver = api()?;
        let mut raw = ptr::null_mut();
        {
            let _calls = self.inner.calls.lock().unwrap_or_else(|e| e.into_inner());
            // SAFETY: `raw` is a valid out-pointer; the green context is alive while `self` is;
            // the driver requires the non-blocking flag.
            check(unsafe {
                driver.cuGreenCtxStreamCreate()?(
                    &mut raw,
                    self.inner.raw,
                    CUstream_flags::CU_STREAM_NON_BLOCKING.0,
                    priority,
                )
            })?;
        }
        Ok(Stream::of_green_context(raw, self.inner.clone()))
    }

    /// The green context's handle.
    ///
    /// # Safety
    /// Valid only while this green context (or a clone, or a stream of it) is alive; the caller
    /// must not destroy it, nor use it from two threads at once.
    pub unsafe fn as_raw(&self) -> CUgreenCtx {
        self.inner.raw
    }

    /// The `CUcontext` that stands for the green context in driver calls that take one
    /// (`cuCtxFromGreenCtx`), for code outside this crate.
    ///
    /// # Safety
    /// Valid only while this green context is alive; the caller must not destroy it, and must
    /// make it current on at most one thread at a time (the driver's rule for green contexts).
    pub unsafe fn raw_context(&self) -> Result<CUcontext> {
        let driver = api()?;
        let mut raw = ptr::null_mut();
        let _calls = self.inner.calls.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: `raw` is a valid out-pointer; the green context is alive while `self` is.
        check(unsafe { driver.cuCtxFromGreenCtx()?(&mut raw, self.inner.raw) })?;
        Ok(raw)
    }
}

impl GreenContextInner {
    pub(crate) fn context(&self) -> &Context {
        &self.context
    }
}

impl Drop for GreenContextInner {
    fn drop(&mut self) {
        let Ok(driver) = api() else { return };
        // SAFETY: this is the last owner: every stream of the green context holds an owner, so
        // all of them are destroyed already.
        let result = driver.cuGreenCtxDestroy().map(|destroy| unsafe { destroy(self.raw) });
        self.context
            .record_drop_result("cuGreenCtxDestroy", check_resolved(result));
    }
}

impl std::fmt::Debug for GreenContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GreenContext")
            .field("raw", &self.inner.raw)
            .field("device", &self.device().ordinal())
            .finish()
    }
}
