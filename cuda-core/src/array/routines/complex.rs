//! NumPy's "handling complex numbers" chapter for arrays: `real` and `imag` of a complex array
//! are views of its parts, as NumPy's `.real` and `.imag` are (no copy; writes through them
//! change the complex array). The element-wise forms (`abs`, `angle`, `conj`, `real`, `imag` of
//! expressions) are in the ufunc table of `math`.

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;

/// The part types of the complex element types: `f32` of `Complex<f32>`, `f64` of
/// `Complex<f64>`.
pub trait ComplexElement: Element + sealed::Sealed {
    /// The type of each part.
    type Part: Element;
}

mod sealed {
    pub trait Sealed {}
}

impl sealed::Sealed for num_complex::Complex<f32> {}
impl ComplexElement for num_complex::Complex<f32> {
    type Part = f32;
}
impl sealed::Sealed for num_complex::Complex<f64> {}
impl ComplexElement for num_complex::Complex<f64> {
    type Part = f64;
}

impl<C: ComplexElement> DeviceArray<C> {
    /// The real parts, a view (NumPy's `z.real`): the same shape, each stride doubled in parts.
    pub fn real(&self) -> DeviceArray<C::Part> {
        self.part(0)
    }

    /// The imaginary parts, a view (NumPy's `z.imag`): the real parts' view one part further.
    pub fn imag(&self) -> DeviceArray<C::Part> {
        self.part(1)
    }

    fn part(&self, index: u64) -> DeviceArray<C::Part> {
        let part_bytes = std::mem::size_of::<C::Part>() as u64;
        // A complex element is two parts, so strides in parts are twice those in elements
        // (which are far below `isize::MAX / 2`: the array's span fits in memory).
        let strides = self.strides().iter().map(|&s| s * 2).collect();
        self.view_as(*self.ptr_ref() + index * part_bytes, self.shape().to_vec(), strides)
    }
}
