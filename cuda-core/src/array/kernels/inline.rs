//! [`Inline`]: a list kept in place for up to `N` items and on the heap beyond, so the usual
//! launch of generated code (an expression's tree, its operands, its kernel key, the arguments
//! and parameters) allocates nothing.

use std::mem::MaybeUninit;

/// A list kept in place for up to `N` items, on the heap beyond (every item moves there once
/// the list outgrows `N`). Slots past the items are left uninitialised, so that making an
/// empty list writes two words and dropping one touches only its items.
pub(crate) struct Inline<T, const N: usize> {
    /// While there are at most `N` items (`len <= N`), the first `len` slots hold them and the
    /// rest are uninitialised; once there are more, every slot is (moved out, so) uninitialised.
    inline: [MaybeUninit<T>; N],
    len: usize,
    /// Every item, once there are more than `N` (empty while there are at most `N`).
    spilled: Vec<T>,
}

impl<T, const N: usize> Inline<T, N> {
    /// An empty list.
    #[inline]
    pub(crate) fn new() -> Self {
        Inline {
            inline: [const { MaybeUninit::uninit() }; N],
            len: 0,
            spilled: Vec::new(),
        }
    }

    /// Appends `item`.
    #[inline]
    pub(crate) fn push(&mut self, item: T) {
        match self.inline.get_mut(self.len) {
            Some(slot) => {
                slot.write(item);
                self.len += 1;
            }
            None => self.push_spilled(item),
        }
    }

    /// [`push`](Self::push) past the `N` kept in place: out of line, so that the usual push is
    /// a store and an increment where it is called.
    #[cold]
    #[inline(never)]
    fn push_spilled(&mut self, item: T) {
        if self.len == N {
            self.spilled.reserve(2 * N + 1);
            // SAFETY: with `len == N` every slot holds an item; each is read once, and `len`
            // passing `N` below marks the slots as moved out (never read or dropped again). The
            // reserved room means the extension does not allocate or panic.
            let kept = self.inline.iter().map(|slot| unsafe { slot.assume_init_read() });
            self.spilled.extend(kept);
        }
        self.spilled.push(item);
        self.len += 1;
    }

    /// Appends every item of `items`, in order.
    #[inline]
    pub(crate) fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.push(item);
        }
    }

    /// The items.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        match self.inline.get(..self.len) {
            // SAFETY: with `len <= N` the first `len` slots hold the items; `MaybeUninit<T>`
            // has `T`'s layout.
            Some(items) => unsafe { &*(items as *const [MaybeUninit<T>] as *const [T]) },
            None => &self.spilled,
        }
    }

    /// The items, to change in place.
    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match self.inline.get_mut(..self.len) {
            // SAFETY: as in `as_slice`.
            Some(items) => unsafe { &mut *(items as *mut [MaybeUninit<T>] as *mut [T]) },
            None => &mut self.spilled,
        }
    }

    /// The number of items.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Moves every item of `other` to the end of this list, in order, leaving `other` empty.
    #[inline(always)]
    pub(crate) fn append(&mut self, other: &mut Self) {
        let len = std::mem::take(&mut other.len);
        match other.inline.get(..len) {
            Some(items) => {
                for slot in items {
                    // SAFETY: with `len <= N` the first `len` slots of `other` hold its items;
                    // its `len` is 0 now, so each is read once, here, and never read or dropped
                    // again (a panic part-way leaks the rest, it does not drop them twice).
                    self.push(unsafe { slot.assume_init_read() });
                }
            }
            None => {
                for item in other.spilled.drain(..) {
                    self.push(item);
                }
            }
        }
    }
}

impl<T, const N: usize> Drop for Inline<T, N> {
    #[inline]
    fn drop(&mut self) {
        if std::mem::needs_drop::<T>() && self.len <= N {
            // SAFETY: the first `len` slots hold the items (`len <= N`), dropped once here;
            // the spilled ones are the `Vec`'s to drop.
            unsafe { std::ptr::drop_in_place(self.as_mut_slice()) }
        }
    }
}

impl<T, const N: usize> Default for Inline<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> std::ops::Deref for Inline<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Clone, const N: usize> Clone for Inline<T, N> {
    fn clone(&self) -> Self {
        let mut copy = Self::new();
        copy.extend(self.iter().cloned());
        copy
    }
}

impl<T: std::fmt::Debug, const N: usize> std::fmt::Debug for Inline<T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_stay_in_order_past_the_inline_capacity() {
        let mut list: Inline<u32, 3> = Inline::new();
        list.extend([1, 2]);
        assert_eq!(list.as_slice(), [1, 2]);
        list.extend([3, 4, 5]);
        assert_eq!((list.as_slice(), list.len()), (&[1, 2, 3, 4, 5][..], 5));
        list.as_mut_slice()[4] = 6;
        assert_eq!(list.clone().as_slice(), [1, 2, 3, 4, 6]);
        let mut all: Inline<u32, 3> = Inline::new();
        all.append(&mut list);
        assert_eq!((all.as_slice(), list.len()), (&[1, 2, 3, 4, 6][..], 0));
        list.push(7);
        assert_eq!(list.as_slice(), [7]);
        let mut short: Inline<u32, 3> = Inline::new();
        short.extend([8, 9]);
        list.append(&mut short);
        assert_eq!((list.as_slice(), short.len()), (&[7, 8, 9][..], 0));
        // Items that own memory move once: none is dropped twice or left behind.
        let mut owned: Inline<String, 2> = Inline::new();
        owned.extend(["a".to_string(), "b".to_string()]);
        let mut more: Inline<String, 2> = Inline::new();
        more.push("c".to_string());
        more.append(&mut owned);
        assert_eq!(
            (more.as_slice(), owned.len()),
            (&["c", "a", "b"].map(String::from)[..], 0)
        );
    }
}
