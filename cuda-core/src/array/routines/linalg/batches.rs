//! The batch loop of a stacked matrix product, shared by the cuBLAS and the tiled paths: the
//! batch axes merged into as few strided batches as their strides allow ([`batch_calls`]), each
//! handed over as offsets and strides (the tiled kernel) or as 3-D views ([`for_each_batch`],
//! cuBLAS).

use crate::array::device_array::DeviceArray;
use crate::array::dtype::Element;
use crate::error::Result;

/// One strided batch of a stacked product: `count` matrices of each operand (`a`, `b`, the
/// result), the first `offsets` elements after the operand's first element (negative: before),
/// the next ones `strides` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct BatchCall {
    pub(crate) count: usize,
    pub(crate) offsets: [isize; 3],
    pub(crate) strides: [isize; 3],
}

/// The strided batches of stacks of batch shape `batch` whose operands have batch strides
/// `strides` (equal batch axes, broadcast ones of stride 0). The batch axes are grouped by
/// [`batch_groups`]; the innermost group is one call, the outer ones are looped over (last axis
/// fastest). Offsets are of elements of the operands: they fit `isize`.
pub(crate) fn batch_calls(batch: &[usize], strides: [&[isize]; 3]) -> Vec<BatchCall> {
    let groups = batch_groups(batch, strides);
    let (inner, outer) = match groups.split_last() {
        Some((&inner, outer)) => (inner, outer),
        None => ((1, [0; 3]), &[][..]),
    };
    let (count, strides) = inner;
    let calls: usize = outer.iter().map(|&(size, _)| size).product();
    let mut index = vec![0usize; outer.len()];
    let mut out = Vec::with_capacity(calls);
    for _ in 0..calls {
        let offset = |operand: usize| -> isize {
            index
                .iter()
                .zip(outer)
                .map(|(&i, &(_, strides))| i as isize * strides[operand])
                .sum()
        };
        out.push(BatchCall {
            count,
            offsets: [offset(0), offset(1), offset(2)],
            strides,
        });
        for axis in (0..index.len()).rev() {
            index[axis] += 1;
            if index[axis] < outer[axis].0 {
                break;
            }
            index[axis] = 0;
        }
    }
    out
}

/// The strided batches of the stacks `a`, `b` and `out` (equal batch axes; see
/// [`batch_calls`]).
pub(crate) fn stack_calls<T: Element>(a: &DeviceArray<T>, b: &DeviceArray<T>, out: &DeviceArray<T>) -> Vec<BatchCall> {
    let batch = out.ndim() - 2;
    batch_calls(
        &out.shape()[..batch],
        [&a.strides()[..batch], &b.strides()[..batch], &out.strides()[..batch]],
    )
}

/// Calls `call` once per strided batch of the stacks `a`, `b` and `out` (see [`batch_calls`]):
/// with 3-D views of `count` matrices of each and their batch strides.
pub(crate) fn for_each_batch<T: Element>(
    a: &DeviceArray<T>,
    b: &DeviceArray<T>,
    out: &mut DeviceArray<T>,
    mut call: impl FnMut(&DeviceArray<T>, &DeviceArray<T>, &mut DeviceArray<T>, usize, [isize; 3]) -> Result<()>,
) -> Result<()> {
    for BatchCall {
        count,
        offsets,
        strides,
    } in stack_calls(a, b, out)
    {
        let a_i = stack(a, offsets[0], count, strides[0]);
        let b_i = stack(b, offsets[1], count, strides[1]);
        let mut c_i = stack(out, offsets[2], count, strides[2]);
        call(&a_i, &b_i, &mut c_i, count, strides)?;
    }
    Ok(())
}

/// The batch axes of `shape` (strides of `a`, `b` and the result) as groups of `(size, [stride
/// of each operand])`, outermost first: axes of one dropped, neighbours merged where each
/// operand's outer stride is its inner stride times the inner size (a broadcast axis, stride 0,
/// merges with another broadcast axis). Each group is one strided batch.
fn batch_groups(shape: &[usize], strides: [&[isize]; 3]) -> Vec<(usize, [isize; 3])> {
    let mut groups: Vec<(usize, [isize; 3])> = Vec::new();
    for (axis, &size) in shape.iter().enumerate() {
        if size == 1 {
            continue;
        }
        let axis_strides = strides.map(|s| s[axis]);
        if let Some((outer_size, outer_strides)) = groups.last_mut() {
            if (0..3).all(|o| outer_strides[o] == axis_strides[o] * size as isize) {
                *outer_size *= size;
                *outer_strides = axis_strides;
                continue;
            }
        }
        groups.push((size, axis_strides));
    }
    groups
}

/// `count` matrices of `array` (its last two axes), `stride` elements apart from `offset`
/// elements after its start (negative: before): a 3-D view, the operand of one batched call.
fn stack<T: Element>(array: &DeviceArray<T>, offset: isize, count: usize, stride: isize) -> DeviceArray<T> {
    let ndim = array.ndim();
    let ptr = array
        .ptr_ref()
        .wrapping_add_signed(offset as i64 * std::mem::size_of::<T>() as i64);
    let mut shape = vec![count];
    shape.extend_from_slice(&array.shape()[ndim - 2..]);
    let mut strides = vec![stride];
    strides.extend_from_slice(&array.strides()[ndim - 2..]);
    array.view(ptr, shape, strides)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_axes_merge_into_strided_batches() {
        // A compact 4 x 5 stack times a broadcast matrix (strides 0): one batch of 20.
        let shape = [4, 5];
        assert_eq!(batch_groups(&shape, [&[60, 12], &[0, 0], &[30, 6]]), [(20, [12, 0, 6])]);
        // Broadcasting along the outer axis only: two groups (a loop of strided batches).
        assert_eq!(
            batch_groups(&shape, [&[60, 12], &[0, 20], &[30, 6]]),
            [(4, [60, 0, 30]), (5, [12, 20, 6])]
        );
        // Axes of one are dropped, whatever their strides.
        assert_eq!(
            batch_groups(&[1, 3, 1], [&[99, 8, 7], &[0, 4, 1], &[5, 6, 2]]),
            [(3, [8, 4, 6])]
        );
        // A permuted (non-mergeable) stack and no batch axes at all.
        assert_eq!(
            batch_groups(&[2, 3], [&[6, 12], &[12, 4], &[18, 6]]),
            [(2, [6, 12, 18]), (3, [12, 4, 6])]
        );
        assert!(batch_groups(&[], [&[], &[], &[]]).is_empty());
    }

    #[test]
    fn outer_groups_become_calls_with_their_offsets() {
        // Broadcasting along the outer axis: 4 calls of 5 matrices each, the outer axis's
        // offsets stepping through a and the result, b broadcast along it.
        let calls = batch_calls(&[4, 5], [&[60, 12], &[0, 20], &[30, 6]]);
        assert_eq!(calls.len(), 4);
        assert_eq!(
            calls[2],
            BatchCall {
                count: 5,
                offsets: [120, 0, 60],
                strides: [12, 20, 6]
            }
        );
        // A reversed batch axis: offsets below the first matrix.
        let calls = batch_calls(&[3, 2], [&[-8, 1], &[0, 0], &[2, 1]]);
        assert_eq!(calls.iter().map(|c| c.offsets[0]).collect::<Vec<_>>(), [0, -8, -16]);
        // No batch axes: one call of one matrix.
        assert_eq!(
            batch_calls(&[], [&[], &[], &[]]),
            [BatchCall {
                count: 1,
                offsets: [0; 3],
                strides: [0; 3]
            }]
        );
    }
}
