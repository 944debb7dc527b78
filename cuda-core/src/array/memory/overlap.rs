//! Whether two views share memory, decided by device address ranges (never by which storage
//! object holds them: two imports of one tensor are different objects over the same bytes).

use cuda_sys::driver::CUdeviceptr;

/// The memory a view reaches: its first element's address, the element size, its extents and
/// its strides in elements (negative along reversed axes).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span<'a> {
    pub(crate) ptr: CUdeviceptr,
    pub(crate) element_size: usize,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [isize],
}

/// The lowest and highest element offsets from the first element that `extents` with `strides`
/// reach (each axis adds its last index times its stride to one of them, by the stride's sign),
/// exactly, or `None` when there are no elements: what views, launch index widths, gather
/// layouts and DLPack imports measure their memory by.
pub(crate) fn offset_range(extents: &[usize], strides: &[isize]) -> Option<(i128, i128)> {
    if extents.contains(&0) {
        return None;
    }
    let mut range = (0i128, 0i128);
    for (&extent, &stride) in extents.iter().zip(strides) {
        let reach = (extent as i128 - 1) * stride as i128;
        match reach < 0 {
            true => range.0 += reach,
            false => range.1 += reach,
        }
    }
    Some(range)
}

impl Span<'_> {
    /// The bytes the view can reach, `[start, end)`: from its lowest element to one past its
    /// highest (empty, at the first element, for a zero-size view).
    pub(crate) fn byte_range(&self) -> (CUdeviceptr, CUdeviceptr) {
        if self.shape.contains(&0) {
            return (self.ptr, self.ptr);
        }
        // `offset_range` in `i64`: a view reaches only elements of its memory, so its lowest and
        // highest offsets fit, and so does each axis's reach (at most either in size).
        let (mut low, mut high) = (0i64, 0i64);
        for (&extent, &stride) in self.shape.iter().zip(self.strides) {
            let reach = (extent as i64 - 1).wrapping_mul(stride as i64);
            match reach < 0 {
                true => low = low.wrapping_add(reach),
                false => high = high.wrapping_add(reach),
            }
        }
        let size = self.element_size as i64;
        let start = self.ptr.wrapping_add_signed(low.wrapping_mul(size));
        let end = self.ptr.wrapping_add_signed((high + 1).wrapping_mul(size));
        (start, end)
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
    overlap_measured(a, b, b.byte_range())
}

/// [`overlap`] with `b`'s [`byte_range`](Span::byte_range) measured by the caller (one output
/// against each of several inputs).
pub(crate) fn overlap_measured(a: Span<'_>, b: Span<'_>, b_range: (CUdeviceptr, CUdeviceptr)) -> Overlap {
    let (a_start, a_end) = a.byte_range();
    let (b_start, b_end) = b_range;
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

    fn span<'a>(ptr: u64, shape: &'a [usize], strides: &'a [isize]) -> Span<'a> {
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
        // Reversed: x[::-1] of 16 floats starts at the last and reaches down to the first.
        assert_eq!(span(base + 60, &[16], &[-1]).byte_range(), (base, base + 64));
        assert_eq!(
            overlap(span(base + 60, &[16], &[-1]), span(base, &[16], &[1])),
            Overlap::Partial,
            "the same bytes in the other order"
        );
        assert_eq!(
            overlap(span(base + 28, &[8], &[-1]), span(base + 32, &[8], &[1])),
            Overlap::Disjoint
        );
        // Rows reversed, columns kept: [[4..8], [0..4]] of a 2x4 matrix.
        assert_eq!(span(base + 16, &[2, 4], &[-4, 1]).byte_range(), (base, base + 32));
        assert_eq!(offset_range(&[4, 3], &[-3, 1]), Some((-9, 2)));
        assert_eq!(offset_range(&[0, 3], &[-3, 1]), None);
    }

    #[test]
    fn byte_ranges_agree_with_offset_ranges() {
        let base = 1 << 40;
        let layouts: [(&[usize], &[isize]); 6] = [
            (&[16], &[1]),
            (&[3, 5], &[-5, 1]),
            (&[4, 2, 3], &[6, -3, -1]),
            (&[7], &[0]),
            (&[2, 1 << 20], &[-(1 << 20), 1]),
            (&[5, 0], &[1, 1]),
        ];
        for (shape, strides) in layouts {
            let view = span(base, shape, strides);
            let expected = offset_range(shape, strides).map_or((base, base), |(low, high)| {
                ((base as i128 + 4 * low) as u64, (base as i128 + 4 * (high + 1)) as u64)
            });
            assert_eq!(view.byte_range(), expected, "{shape:?} {strides:?}");
            let other = span(base + 8, &[4], &[1]);
            assert_eq!(
                overlap_measured(other, view, view.byte_range()),
                overlap(other, view),
                "{shape:?} {strides:?}"
            );
        }
    }
}
