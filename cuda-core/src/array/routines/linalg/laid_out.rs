//! [`LaidOut`]: an array handed to cuBLAS together with its layout, the one way a view that is
//! not compact reaches the library.

use cuda_driver::{Access, Context, Stream, StreamUse};
use cuda_libs::blas::Operand;
use cuda_sys::driver::CUdeviceptr;

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;

/// An array read by a cuBLAS call whose description of it (increment; leading dimension and
/// transpose; batch stride) was computed from the array's own strides: the device-memory
/// contract over the bytes from the lowest element the view reaches to one past its highest.
///
/// A [`DeviceArray`] that is not compact has no dense range of its own (its contract refuses
/// it, see [`cuda_driver::DeviceMemory`]); this is the "passes its layout" form of the rule:
/// the range is the extent of the elements, and the call reads only the elements its layout
/// names. Read-only: outputs are compact arrays, which give their range themselves.
pub(super) struct LaidOut<'a, T: Element>(&'a DeviceArray<T>);

impl<'a, T: Element> LaidOut<'a, T> {
    /// `array`, to be passed with a layout computed from its strides (no negative stride: a
    /// layout cuBLAS takes walks forward).
    pub(super) fn new(array: &'a DeviceArray<T>) -> Self {
        LaidOut(array)
    }
}

// SAFETY: the range is the view's extent, inside its storage (a view never reaches outside
// it), which lives as long as the borrow; every byte of it belongs to the storage, so a library
// call may read any of it, and the calls this type is given to read exactly the view's elements
// (the layout passed with it is the view's). The use goes through the array's own tracker, whose
// storage goes back only after the uses begun here. Not `DeviceMemoryMut`: never written.
unsafe impl<T: Element> cuda_driver::DeviceMemory for LaidOut<'_, T> {
    fn context(&self) -> &Context {
        self.0.context()
    }

    fn device_ptr(&self) -> CUdeviceptr {
        self.0.span().byte_range().0
    }

    fn byte_len(&self) -> usize {
        let (start, end) = self.0.span().byte_range();
        (end - start) as usize
    }

    fn begin_use(&self, stream: &Stream, access: Access) -> cuda_driver::Result<StreamUse<'_>> {
        self.0.begin_use(stream, access)
    }
}

impl<T: Element> Operand<T> for LaidOut<'_, T> {}
