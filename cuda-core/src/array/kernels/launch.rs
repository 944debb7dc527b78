//! [`Launch`]: the one path every generated kernel is launched by. Parameters are added in the
//! kernel's order: call arguments (each array's use recorded on the launch stream, so that
//! stream is ordered after the array's), and values (sizes, seeds, addresses of scratch memory,
//! layout structs by value); the arrays' uses end (are recorded) once the kernel is queued. The count and every size are checked against the kernel's
//! parameters (`cuFuncGetParamInfo`) before anything runs, as typed launches are.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::mem::size_of;

use cuda_driver::{launch_checked, Function, LaunchConfig, Stream, StreamUse};

use crate::array::kernels::args::Arg;
use crate::array::kernels::inline::Inline;
use crate::error::Result;

/// Parameters whose pointer array needs no allocation.
const INLINE_PARAMS: usize = 16;

/// Where a parameter's bytes are: in a call argument, or in the launch's own value storage.
#[derive(Clone, Copy)]
enum Param {
    Borrowed(*mut c_void),
    /// Offset, in 8-byte words, into [`Launch::words`].
    Value(usize),
}

/// A launch of generated code being put together (see the module's docs); the call arguments
/// it points into are borrowed for `'a`.
pub(crate) struct Launch<'s, 'a> {
    stream: &'s Stream,
    /// The arrays' uses, ended (recorded) once the kernel is queued.
    uses: Vec<StreamUse<'a>>,
    params: Inline<Param, INLINE_PARAMS>,
    sizes: Inline<usize, INLINE_PARAMS>,
    /// Values passed by value, each from an 8-byte boundary.
    words: Inline<u64, { 2 * INLINE_PARAMS }>,
    borrowed: PhantomData<&'a ()>,
}

impl<'s, 'a> Launch<'s, 'a> {
    /// An empty parameter list for a launch on `stream`.
    pub(crate) fn on(stream: &'s Stream) -> Self {
        Launch {
            stream,
            uses: Vec::new(),
            params: Inline::new(),
            sizes: Inline::new(),
            words: Inline::new(),
            borrowed: PhantomData,
        }
    }

    /// Adds `arg` (an array by its device address, or a scalar by value), recording an array's
    /// use on the launch stream.
    pub(crate) fn arg(&mut self, arg: &'a Arg<'a>) -> Result<&mut Self> {
        if let Some(array) = arg.array() {
            let used = array.begin_use(self.stream, arg.access())?;
            // Only a tracked use (shared memory) has anything to record once the kernel is
            // queued; keeping no other spares the allocation on the one-stream path.
            if used.is_tracked() {
                self.uses.push(used);
            }
        }
        self.params.push(Param::Borrowed(arg.param_ptr()));
        self.sizes.push(arg.param_size());
        Ok(self)
    }

    /// Adds every argument of `args`, in order.
    pub(crate) fn args(&mut self, args: &'a [Arg<'a>]) -> Result<&mut Self> {
        for arg in args {
            self.arg(arg)?;
        }
        Ok(self)
    }

    /// Adds `value` by value: an integer, a float, a device address, or a `#[repr(C)]` struct of
    /// such (a kernel parameter of the same size and layout).
    pub(crate) fn value<T: Copy + 'static>(&mut self, value: T) -> &mut Self {
        let start = self.words.len();
        let words = size_of::<T>().div_ceil(size_of::<u64>());
        for _ in 0..words {
            self.words.push(0);
        }
        let slot = self.words.as_mut_slice()[start..].as_mut_ptr();
        // SAFETY: the words just added hold at least `size_of::<T>()` bytes, aligned to 8
        // (enough for any `T` a kernel parameter has); `T` is `Copy` plain data.
        unsafe { std::ptr::write_unaligned(slot.cast::<T>(), value) };
        self.params.push(Param::Value(start));
        self.sizes.push(size_of::<T>());
        self
    }

    /// Adds the 64-bit words of `values` as one struct parameter, by value.
    pub(crate) fn words(&mut self, values: &[u64]) -> &mut Self {
        let start = self.words.len();
        self.words.extend(values.iter().copied());
        self.params.push(Param::Value(start));
        self.sizes.push(size_of_val(values));
        self
    }

    /// Launches `function` with the parameters added, on a `grid` of `block`s.
    ///
    /// # Safety
    /// The kernel's device code must match the parameters' types and stay within the memory
    /// they describe for this grid (the family that generated it argues that once, where it
    /// calls this). Count and sizes are checked here.
    pub(crate) unsafe fn run(&mut self, function: &Function, grid: (u32, u32), block: (u32, u32)) -> Result<()> {
        let words = self.words.as_mut_slice().as_mut_ptr();
        // The pointer array lives on the stack for the usual few parameters.
        let mut inline = [std::ptr::null_mut::<c_void>(); INLINE_PARAMS];
        let mut spilled = Vec::new();
        let pointers: &mut [*mut c_void] = match self.params.len() {
            count if count <= INLINE_PARAMS => &mut inline[..count],
            count => {
                spilled.resize(count, std::ptr::null_mut());
                &mut spilled
            }
        };
        for (slot, param) in pointers.iter_mut().zip(self.params.as_mut_slice().iter()) {
            *slot = match *param {
                Param::Borrowed(pointer) => pointer,
                // SAFETY: `start` is an offset inside `words`, which is not resized until the
                // launch below returns.
                Param::Value(start) => unsafe { words.add(start) }.cast(),
            };
        }
        let config = LaunchConfig {
            grid: (grid.0, grid.1, 1),
            block: (block.0, block.1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: every pointer addresses its parameter's bytes (a call argument, borrowed for
        // the launch by the caller, or `words`), of the size recorded beside it, which the launch
        // checks against the kernel; the device code is the caller's obligation.
        unsafe { launch_checked(function, &config, self.stream, pointers, self.sizes.as_mut_slice())? };
        // The kernel is queued: the uses end here (a shared array records its stream's event).
        self.uses.clear();
        Ok(())
    }
}
