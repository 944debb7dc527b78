//! Tensors imported through DLPack, and their release without a host wait: dropping the last
//! view orders the memory's last use with an event and hands the tensor back to its producer
//! (its deleter) once that event has completed, so the producer never gets memory back early
//! and the host never blocks on the device.
//!
//! When the importer named the producer's stream, that stream is made to wait for the last use
//! (an event wait, on the device) and the tensor goes back at once. Otherwise an event is
//! recorded on the array's stream; if it has already completed the tensor goes back at once,
//! else it waits in a process-wide list that later imports and releases poll, and that the
//! exit hook (or [`release_completed_imports`]) empties.

use std::mem::ManuallyDrop;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use cuda_driver::{Event, EventFlags, Stream};

use cuda_sys::driver::CUdeviceptr;

use super::dlpack::DLPackTensor;
use super::dlpack_abi::{DLManagedTensor, DLManagedTensorVersioned};
use crate::array::device_array::{DeviceArray, Storage};
use crate::array::dtype::Element;
use crate::array::memory::{check_per_thread, order_after, ForeignMemory, StreamUses};
use crate::error::Result;

impl<T: Element> DeviceArray<T> {
    /// Takes a DLPack tensor of CUDA memory of `stream`'s device as an array (a view of the
    /// tensor's memory with its shape and strides; never a copy) ordered on `stream`. When the
    /// producer says its work is on `producer_stream`, `stream` waits for it (an event), and on
    /// release the producer's stream waits for every stream that used the array before the
    /// tensor's deleter runs; without one the release first waits on the host for those
    /// streams. On error (CPU or another device's memory, another element type, a read-only
    /// tensor, a layout no array has) the tensor is released: check [`DLPackTensor::dtype`](crate::DLPackTensor::dtype)
    /// and [`DLPackTensor::device`](crate::DLPackTensor::device) first to choose.
    ///
    /// Before accepting, the driver is asked about the memory ([`PointerInfo`](cuda_driver::PointerInfo)): the bytes from
    /// the first element to the last one the shape and strides reach must be device (or
    /// managed) memory of `stream`'s device, inside the allocation the first lies in, else
    /// [`DLPackError::NotDeviceMemory`](crate::DLPackError::NotDeviceMemory) or [`DLPackError::OutOfAllocation`](crate::DLPackError::OutOfAllocation). The rest of what
    /// makes the import sound (the memory is the tensor's to lend, alive until its deleter
    /// runs, not used by others meanwhile) is what [`DLPackTensor::from_raw`]'s caller promised.
    pub fn from_dlpack_tensor(tensor: DLPackTensor, stream: &Stream, producer_stream: Option<&Stream>) -> Result<Self> {
        let (ptr, shape, strides) = tensor.checked_layout::<T>(stream)?;
        Self::adopt(tensor, ptr, shape, strides, stream, producer_stream)
    }

    fn adopt(
        tensor: DLPackTensor,
        ptr: CUdeviceptr,
        shape: Vec<usize>,
        strides: Vec<isize>,
        stream: &Stream,
        producer_stream: Option<&Stream>,
    ) -> Result<Self> {
        check_per_thread(stream)?;
        if let Some(producer) = producer_stream {
            order_after(producer, stream)?;
        }
        let storage = Storage::Foreign(Box::new(ImportedTensor::new(tensor, stream, producer_stream)));
        DeviceArray::from_storage(ptr, shape, Some(strides), storage)
    }

    /// Takes ownership of a legacy DLPack tensor of CUDA memory of `stream`'s device, as
    /// [`from_dlpack_tensor`](Self::from_dlpack_tensor) without a producer stream (its deleter
    /// runs after a host wait for the streams that used the array). On error
    /// ([`Error::DLPack`](crate::Error::DLPack)) the tensor is left to the caller.
    ///
    /// # Safety
    /// `tensor` must point to a valid `DLManagedTensor` (the contract of
    /// [`DLPackTensor::from_raw`]) whose memory holds the elements its shape and strides
    /// reach, stays valid until its deleter is called, may be used on `stream` (the producer's
    /// queued work is ordered before it: the caller's duty), and is not used by anyone else
    /// meanwhile.
    pub unsafe fn from_dlpack(tensor: *mut DLManagedTensor, stream: &Stream) -> Result<Self> {
        // SAFETY: the caller's promise, passed on.
        let tensor = unsafe { DLPackTensor::from_raw(tensor) }?;
        Self::take_or_leave(tensor, stream)
    }

    /// Like [`from_dlpack`](Self::from_dlpack), for a DLPack 1.0 versioned tensor; a major
    /// version other than 1 is [`DLPackError::UnsupportedVersion`](crate::DLPackError::UnsupportedVersion) (the tensor is left to the
    /// caller, who should call its deleter and read nothing else).
    ///
    /// # Safety
    /// As [`from_dlpack`](Self::from_dlpack), for a `DLManagedTensorVersioned`.
    pub unsafe fn from_dlpack_versioned(tensor: *mut DLManagedTensorVersioned, stream: &Stream) -> Result<Self> {
        // SAFETY: the caller's promise, passed on.
        let tensor = unsafe { DLPackTensor::from_raw_versioned(tensor) }?;
        Self::take_or_leave(tensor, stream)
    }

    /// Imports `tensor`, or gives it back to the caller (without calling the deleter) on error.
    fn take_or_leave(tensor: DLPackTensor, stream: &Stream) -> Result<Self> {
        match tensor.checked_layout::<T>(stream) {
            Ok((ptr, shape, strides)) => Self::adopt(tensor, ptr, shape, strides, stream, None),
            Err(error) => {
                std::mem::forget(tensor);
                Err(error)
            }
        }
    }
}

/// A tensor imported with [`DeviceArray::from_dlpack_tensor`](crate::DeviceArray::from_dlpack_tensor)
/// and friends: the storage of the arrays viewing it.
pub(crate) struct ImportedTensor {
    tensor: ManuallyDrop<DLPackTensor>,
    uses: StreamUses,
    producer: Option<Stream>,
}

impl ImportedTensor {
    /// The storage of `tensor`, used first on `stream`; `producer` is the stream the producer
    /// said its work is on (which the tensor is handed back in the order of).
    pub(crate) fn new(tensor: DLPackTensor, stream: &Stream, producer: Option<&Stream>) -> Self {
        release_completed_imports();
        ImportedTensor {
            tensor: ManuallyDrop::new(tensor),
            uses: StreamUses::new(stream.clone()),
            producer: producer.cloned(),
        }
    }
}

impl ForeignMemory for ImportedTensor {
    fn uses(&self) -> &StreamUses {
        &self.uses
    }
}

/// A tensor waiting for the last use of its memory before its deleter runs.
struct PendingRelease {
    tensor: DLPackTensor,
    last_use: Event,
}

/// Tensors whose last use had not completed when they were dropped.
static PENDING: Mutex<Vec<PendingRelease>> = Mutex::new(Vec::new());
/// The length of [`PENDING`], so that polling an empty list takes no lock.
static PENDING_COUNT: AtomicUsize = AtomicUsize::new(0);
/// Set once deleters may no longer run at exit (the Python interpreter they may need is gone).
static EXIT_RELEASE_DISABLED: AtomicBool = AtomicBool::new(false);

impl Drop for ImportedTensor {
    fn drop(&mut self) {
        // The owner stream waits for every other stream that used the memory (events)...
        self.uses.order_release();
        // SAFETY: taken once, here; the field is not used again.
        let tensor = unsafe { ManuallyDrop::take(&mut self.tensor) };
        let owner = self.uses.owner();
        // ... and the producer's stream for the owner, so that it may reuse the memory at once.
        if let Some(producer) = &self.producer {
            if order_after(owner, producer).is_ok() {
                drop(tensor);
                release_completed_imports();
                return;
            }
        }
        release_after_last_use(tensor, owner);
        release_completed_imports();
    }
}

/// Runs `tensor`'s deleter once the work queued on `stream` so far has completed: now if it
/// has, else from the pending list. Without an event, waits on the host; if even that fails
/// the tensor is leaked (never handed back while work may still use it).
fn release_after_last_use(tensor: DLPackTensor, stream: &Stream) {
    let recorded = Event::new(stream.context(), EventFlags::DISABLE_TIMING).and_then(|event| {
        event.record(stream)?;
        Ok(event)
    });
    match recorded {
        Ok(last_use) => match last_use.query() {
            Ok(true) => drop(tensor),
            Ok(false) => {
                let mut pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
                pending.push(PendingRelease { tensor, last_use });
                PENDING_COUNT.store(pending.len(), Ordering::Release);
                drop(pending);
                crate::at_exit::register();
            }
            Err(error) => leak(tensor, &error),
        },
        Err(error) => {
            eprintln!("cuda-core: recording the last use of a DLPack tensor failed ({error}); waiting instead");
            match stream.synchronize() {
                Ok(()) => drop(tensor),
                Err(error) => leak(tensor, &error),
            }
        }
    }
}

fn leak(tensor: DLPackTensor, error: &cuda_driver::Error) {
    eprintln!("cuda-core: the last use of a DLPack tensor cannot be confirmed ({error}); it is leaked");
    std::mem::forget(tensor);
}

/// Hands back (runs the deleters of) the imported tensors released earlier whose last use has
/// completed since; never waits. Imports and releases call it, so a program rarely needs to;
/// call it to return memory to its producer promptly after a burst of work.
pub fn release_completed_imports() {
    if PENDING_COUNT.load(Ordering::Acquire) == 0 {
        return;
    }
    let done: Vec<DLPackTensor> = {
        let mut pending = PENDING.lock().unwrap_or_else(PoisonError::into_inner);
        let mut done = Vec::new();
        let mut kept = Vec::with_capacity(pending.len());
        for entry in pending.drain(..) {
            match entry.last_use.query() {
                Ok(true) => done.push(entry.tensor),
                Ok(false) => kept.push(entry),
                Err(error) => leak(entry.tensor, &error),
            }
        }
        *pending = kept;
        PENDING_COUNT.store(pending.len(), Ordering::Release);
        done
    };
    // The deleters run outside the lock: one may drop another import.
    drop(done);
}

/// Waits for the last use of every pending tensor and hands it back (the exit hooks). Does
/// nothing once [`disable_exit_release`] was called.
pub(crate) fn release_all_imports() {
    if EXIT_RELEASE_DISABLED.load(Ordering::Acquire) {
        return;
    }
    let pending = std::mem::take(&mut *PENDING.lock().unwrap_or_else(PoisonError::into_inner));
    PENDING_COUNT.store(0, Ordering::Release);
    for entry in pending {
        match entry.last_use.synchronize() {
            Ok(()) => drop(entry.tensor),
            Err(error) => leak(entry.tensor, &error),
        }
    }
}

/// After this, the process exit hook leaves pending tensors alone (for the Python feature:
/// their deleters may need an interpreter that has already finalised).
#[cfg(feature = "python")]
pub(crate) fn disable_exit_release() {
    EXIT_RELEASE_DISABLED.store(true, Ordering::Release);
}
