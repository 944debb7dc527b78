//! Whether two views share memory, decided by device address ranges (never by which storage
//! object holds them: two imports of one tensor are different objects over the same bytes).

use cuda_sys::driver::CUdeviceptr;

/// The memory a view reaches: its first element's address, the element size, its extents and
/// its strides in elements.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span<'a> {
    pub(crate) ptr: CUdeviceptr,
    pub(crate) element_size: usize,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [usize],
}

impl Span<'_> {
    /// The bytes the view can reach, `[start, end)`: from its first element to one past its
    /// last (empty for a zero-size view).
    pub(crate) fn byte_range(&self) -> (CUdeviceptr, CUdeviceptr) {
        // A view reaches only bytes of its memory, so these sums stay far below 2^64.
        let mut last = 0u64;
        for (&extent, &stride) in self.shape.iter().zip(self.strides) {
            if extent == 0 {
                return (self.ptr, self.ptr);
            }
            last = last.wrapping_add((extent as u64 - 1).wrapping_mul(stride as u64));
        }
        let end = self.ptr.wrapping_add((last + 1).wrapping_mul(self.element_size as u64));
        (self.ptr, end)
    }
}

/// How two views' memory relates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Overlap {
    /// No byte in common.
    Disjoint,
    /// The very same elements in the same order (an in-place operation reads each element
    /// before writing it).
    SameView,
    /// Their byte ranges intersect otherwise: writing one may change what the other reads.
    Partial,
}

/// How `a` and `b` overlap (NumPy's `may_share_memory`: ranges, not exact element sets).
pub(crate) fn overlap(a: Span<'_>, b: Span<'_>) -> Overlap {
    let (a_start, a_end) = a.byte_range();
    let (b_start, b_end) = b.byte_range();
    if a_start >= a_end || b_start >= b_end || a_end <= b_start || b_end <= a_start {
        return Overlap::Disjoint;
    }
    let same = a.ptr == b.ptr && a.element_size == b.element_size && a.shape == b.shape && a.strides == b.strides;
    match same {
        true => Overlap::SameView,
        false => Overlap::Partial,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span<'a>(ptr: u64, shape: &'a [usize], strides: &'a [usize]) -> Span<'a> {
        Span {
            ptr,
            element_size: 4,
            shape,
            strides,
        }
    }

    #[test]
    fn overlap_is_decided_by_address_ranges() {
        let base = 0x1000;
        // x[1:] and x[:-1] of 16 floats.
        assert_eq!(
            overlap(span(base + 4, &[15], &[1]), span(base, &[15], &[1])),
            Overlap::Partial
        );
        assert_eq!(
            overlap(span(base, &[16], &[1]), span(base, &[16], &[1])),
            Overlap::SameView
        );
        // A 4x4 matrix and its transpose: same bytes, other order.
        assert_eq!(
            overlap(span(base, &[4, 4], &[4, 1]), span(base, &[4, 4], &[1, 4])),
            Overlap::Partial
        );
        // Interleaved halves share a range, as NumPy's may_share_memory says.
        assert_eq!(
            overlap(span(base, &[8], &[2]), span(base + 4, &[8], &[2])),
            Overlap::Partial
        );
        // Adjacent halves, and zero-size views, share nothing.
        assert_eq!(
            overlap(span(base, &[8], &[1]), span(base + 32, &[8], &[1])),
            Overlap::Disjoint
        );
        assert_eq!(
            overlap(span(base, &[0], &[1]), span(base, &[8], &[1])),
            Overlap::Disjoint
        );
        assert_eq!(span(base, &[2, 3], &[3, 1]).byte_range(), (base, base + 24));
        assert_eq!(span(base, &[3, 1], &[0, 1]).byte_range(), (base, base + 4), "broadcast");
    }
}
