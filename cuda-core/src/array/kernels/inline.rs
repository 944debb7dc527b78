//! [`Inline`]: a list kept in place for up to `N` items and on the heap beyond, so the usual
//! launch of generated code (an expression's tree, its operands, its kernel key, the arguments
//! and parameters) allocates nothing.

/// A type with a placeholder value that fills the unused slots of an [`Inline`] list (never
/// read as an item).
pub(crate) trait Vacant {
    /// The placeholder.
    fn vacant() -> Self;
}

macro_rules! vacant_default {
    ($($t:ty),*) => {
        $(
            impl Vacant for $t {
                fn vacant() -> Self {
                    <$t>::default()
                }
            }
        )*
    };
}

vacant_default!(u32, u64, usize);

/// A list kept in place for up to `N` items, on the heap beyond (every item moves there once
/// the list outgrows `N`).
pub(crate) struct Inline<T: Vacant, const N: usize> {
    /// The first `len` slots are the items while `spilled` is empty; the rest are vacant.
    inline: [T; N],
    len: usize,
    /// Every item, once there are more than `N`.
    spilled: Vec<T>,
}

impl<T: Vacant, const N: usize> Inline<T, N> {
    /// An empty list.
    pub(crate) fn new() -> Self {
        Inline {
            inline: std::array::from_fn(|_| T::vacant()),
            len: 0,
            spilled: Vec::new(),
        }
    }

    /// Appends `item`.
    #[inline]
    pub(crate) fn push(&mut self, item: T) {
        if self.spilled.is_empty() && self.len < N {
            self.inline[self.len] = item;
        } else {
            if self.spilled.is_empty() {
                self.spilled.reserve(2 * N + 1);
                let kept = &mut self.inline[..self.len];
                self.spilled
                    .extend(kept.iter_mut().map(|slot| std::mem::replace(slot, T::vacant())));
            }
            self.spilled.push(item);
        }
        self.len += 1;
    }

    /// Appends every item of `items`, in order.
    pub(crate) fn extend(&mut self, items: impl IntoIterator<Item = T>) {
        for item in items {
            self.push(item);
        }
    }

    /// The items.
    #[inline]
    pub(crate) fn as_slice(&self) -> &[T] {
        match self.spilled.is_empty() {
            true => &self.inline[..self.len],
            false => &self.spilled,
        }
    }

    /// The items, to change in place.
    #[inline]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match self.spilled.is_empty() {
            true => &mut self.inline[..self.len],
            false => &mut self.spilled,
        }
    }

    /// The number of items.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The items, moved out in order (the list is left empty).
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        let len = std::mem::take(&mut self.len);
        let spilled = std::mem::take(&mut self.spilled);
        let inline = match spilled.is_empty() {
            true => len,
            false => 0,
        };
        self.inline[..inline]
            .iter_mut()
            .map(|slot| std::mem::replace(slot, T::vacant()))
            .chain(spilled)
    }
}

impl<T: Vacant, const N: usize> Default for Inline<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Vacant, const N: usize> std::ops::Deref for Inline<T, N> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Vacant + Clone, const N: usize> Clone for Inline<T, N> {
    fn clone(&self) -> Self {
        let mut copy = Self::new();
        copy.extend(self.iter().cloned());
        copy
    }
}

impl<T: Vacant + std::fmt::Debug, const N: usize> std::fmt::Debug for Inline<T, N> {
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
        assert_eq!(list.drain().collect::<Vec<_>>(), [1, 2, 3, 4, 6]);
        assert_eq!(list.len(), 0);
        list.push(7);
        assert_eq!(list.as_slice(), [7]);
        let mut short: Inline<u32, 3> = Inline::new();
        short.extend([8, 9]);
        assert_eq!(short.drain().collect::<Vec<_>>(), [8, 9]);
    }
}
