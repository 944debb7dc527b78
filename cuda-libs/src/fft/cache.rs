//! [`PlanCache`]: cuFFT plans kept by shape, layout, type and stream, a bounded number, the
//! least recently used dropped first.

use std::collections::HashMap;
use std::hash::Hash;

use cuda_driver::Stream;

use super::{LoadCallback, Plan, PlanDesc, StoreCallback};
use crate::{Error, Result};

/// The plans of the transforms a program repeats: [`PlanCache::plan`] returns the plan of a
/// [`PlanDesc`] on a stream, made on first use and kept until `capacity` others were used
/// more recently.
///
/// An entry keeps a clone of its stream, so a stream stays alive while a plan made for it is
/// cached (and its handle cannot be reused by another stream meanwhile). Dropping a plan waits
/// for its last transform (see [`Plan`]): eviction and [`PlanCache::clear`] may wait on the
/// host.
pub struct PlanCache {
    plans: Lru<Key, (Plan, Stream)>,
}

/// What a cached plan is found by: the description, the stream's context and handle, and for
/// a plan with a callback, its kind and the key its caller gave the callback.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Key {
    desc: PlanDesc,
    context: usize,
    stream: usize,
    callback: Option<(Attached, Box<[u32]>)>,
}

/// The kind of callback a cached plan has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Attached {
    Load,
    Store,
}

impl Key {
    fn new(stream: &Stream, desc: &PlanDesc, callback: Option<(Attached, &[u32])>) -> Key {
        Key {
            desc: *desc,
            // SAFETY (both): the handles are only read as numbers, to tell streams apart; the
            // entry's stream clone keeps them alive while the key is cached.
            context: unsafe { stream.context().as_raw() } as usize,
            stream: unsafe { stream.as_raw() } as usize,
            callback: callback.map(|(kind, key)| (kind, Box::from(key))),
        }
    }
}

impl PlanCache {
    /// A cache of at most `capacity` plans (at least 1).
    pub fn new(capacity: usize) -> Result<PlanCache> {
        Ok(PlanCache {
            plans: Lru::new(capacity)?,
        })
    }

    /// The plan of `desc` for `stream`: the cached one, or a new one made in the stream's
    /// context (which may drop the least recently used). A plan cuFFT refuses is not cached.
    pub fn plan(&mut self, stream: &Stream, desc: &PlanDesc) -> Result<&mut Plan> {
        let key = Key::new(stream, desc, None);
        let (plan, _) = self
            .plans
            .get_or_try_insert(key, || Ok((Plan::new(stream.context(), desc)?, stream.clone())))?;
        Ok(plan)
    }

    /// The plan of `desc` for `stream` with the load callback that `callback_key` names: the
    /// cached one, or one made by [`Plan::with_load_callback`] with what `callback` returns
    /// (called only then). Equal keys must name callbacks of equal code and caller-info size.
    pub fn plan_with_load_callback<'c>(
        &mut self,
        stream: &Stream,
        desc: &PlanDesc,
        callback_key: &[u32],
        callback: impl FnOnce() -> Result<LoadCallback<'c>>,
    ) -> Result<&mut Plan> {
        let key = Key::new(stream, desc, Some((Attached::Load, callback_key)));
        let (plan, _) = self.plans.get_or_try_insert(key, || {
            let plan = Plan::with_load_callback(stream.context(), desc, &callback()?)?;
            Ok((plan, stream.clone()))
        })?;
        Ok(plan)
    }

    /// The plan of `desc` for `stream` with the store callback that `callback_key` names: the
    /// cached one, or one made by [`Plan::with_store_callback`] with what `callback` returns
    /// (called only then). Equal keys must name callbacks of equal code and caller-info size.
    ///
    /// # Safety
    /// The callback `callback` returns keeps the contract of [`Plan::with_store_callback`].
    pub unsafe fn plan_with_store_callback<'c>(
        &mut self,
        stream: &Stream,
        desc: &PlanDesc,
        callback_key: &[u32],
        callback: impl FnOnce() -> Result<StoreCallback<'c>>,
    ) -> Result<&mut Plan> {
        let key = Key::new(stream, desc, Some((Attached::Store, callback_key)));
        let (plan, _) = self.plans.get_or_try_insert(key, || {
            // SAFETY: the caller vouches for the callback (this function's contract).
            let plan = unsafe { Plan::with_store_callback(stream.context(), desc, &callback()?)? };
            Ok((plan, stream.clone()))
        })?;
        Ok(plan)
    }

    /// Cached plans with a load callback.
    pub fn load_callback_plans(&self) -> usize {
        self.callback_plans(Attached::Load)
    }

    /// Cached plans with a store callback.
    pub fn store_callback_plans(&self) -> usize {
        self.callback_plans(Attached::Store)
    }

    fn callback_plans(&self, kind: Attached) -> usize {
        let attached = |key: &&Key| matches!(&key.callback, Some((k, _)) if *k == kind);
        self.plans.entries.keys().filter(attached).count()
    }

    /// Plans cached now.
    pub fn len(&self) -> usize {
        self.plans.len()
    }

    /// Whether no plan is cached.
    pub fn is_empty(&self) -> bool {
        self.plans.len() == 0
    }

    /// The most plans kept.
    pub fn capacity(&self) -> usize {
        self.plans.capacity
    }

    /// Drops every cached plan.
    pub fn clear(&mut self) {
        self.plans.clear();
    }
}

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanCache")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .finish()
    }
}

/// A map of at most `capacity` entries that drops the least recently used to make room.
struct Lru<K, V> {
    capacity: usize,
    entries: HashMap<K, (V, u64)>,
    clock: u64,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    fn new(capacity: usize) -> Result<Self> {
        if capacity == 0 {
            return Err(Error::InvalidValue(
                "a plan cache of capacity 0 keeps nothing: give at least 1".into(),
            ));
        }
        Ok(Lru {
            capacity,
            entries: HashMap::new(),
            clock: 0,
        })
    }

    /// The value of `key`, made by `make` when absent (after the least recently used entry is
    /// dropped where the map is full); an error from `make` inserts nothing.
    fn get_or_try_insert(&mut self, key: K, make: impl FnOnce() -> Result<V>) -> Result<&mut V> {
        self.clock += 1;
        let now = self.clock;
        if !self.entries.contains_key(&key) {
            let value = make()?;
            if self.entries.len() >= self.capacity {
                let oldest = self
                    .entries
                    .iter()
                    .min_by_key(|(_, (_, used))| *used)
                    .map(|(k, _)| k.clone());
                if let Some(oldest) = oldest {
                    self.entries.remove(&oldest);
                }
            }
            self.entries.insert(key.clone(), (value, now));
        }
        let (value, used) = self.entries.get_mut(&key).expect("present or just inserted");
        *used = now;
        Ok(value)
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_goes_first() {
        let mut lru = Lru::<char, u32>::new(2).unwrap();
        let mut made = 0;
        let mut get = |lru: &mut Lru<char, u32>, key| {
            *lru.get_or_try_insert(key, || {
                made += 1;
                Ok(made)
            })
            .unwrap()
        };
        assert_eq!(get(&mut lru, 'a'), 1);
        assert_eq!(get(&mut lru, 'b'), 2);
        // A hit makes nothing and refreshes `a`.
        assert_eq!(get(&mut lru, 'a'), 1);
        // Full: `c` drops `b`, the least recently used.
        assert_eq!(get(&mut lru, 'c'), 3);
        assert_eq!(lru.len(), 2);
        assert_eq!(get(&mut lru, 'a'), 1);
        assert_eq!(get(&mut lru, 'b'), 4);
        // `b` came back in place of `c`.
        assert_eq!(get(&mut lru, 'c'), 5);
    }

    #[test]
    fn a_failed_make_inserts_nothing_and_evicts_nothing() {
        let mut lru = Lru::<u8, u8>::new(1).unwrap();
        lru.get_or_try_insert(1, || Ok(10)).unwrap();
        let failed = lru.get_or_try_insert(2, || Err(Error::InvalidValue("refused".into())));
        assert!(matches!(failed, Err(Error::InvalidValue(_))));
        assert_eq!(lru.len(), 1);
        assert_eq!(*lru.get_or_try_insert(1, || panic!("cached")).unwrap(), 10);
        lru.clear();
        assert_eq!(lru.len(), 0);
    }

    #[test]
    fn a_cache_keeps_at_least_one_plan() {
        assert!(matches!(PlanCache::new(0), Err(Error::InvalidValue(_))));
        let cache = PlanCache::new(16).unwrap();
        assert_eq!((cache.len(), cache.capacity(), cache.is_empty()), (0, 16, true));
    }

    #[test]
    fn keys_tell_descriptions_and_streams_apart() {
        use super::super::{Kind, Layout, Precision};
        let desc = PlanDesc::new(Kind::C2C, Precision::F32, &[64]).unwrap();
        let key = |desc: PlanDesc, stream| Key {
            desc,
            context: 1,
            stream,
            callback: None,
        };
        let mut lru = Lru::<Key, u32>::new(8).unwrap();
        let mut made = 0;
        let mut get = |lru: &mut Lru<Key, u32>, k| {
            *lru.get_or_try_insert(k, || {
                made += 1;
                Ok(made)
            })
            .unwrap()
        };
        assert_eq!(get(&mut lru, key(desc, 7)), 1);
        assert_eq!(get(&mut lru, key(desc, 7)), 1);
        assert_eq!(get(&mut lru, key(desc, 8)), 2, "another stream");
        assert_eq!(get(&mut lru, key(desc.batch(2), 7)), 3, "another batch");
        let strided = Layout::strided(&[64], 2, 128).unwrap();
        assert_eq!(get(&mut lru, key(desc.input_layout(strided), 7)), 4, "another layout");
        let double = PlanDesc::new(Kind::C2C, Precision::F64, &[64]).unwrap();
        assert_eq!(get(&mut lru, key(double, 7)), 5, "another type");
        let real = PlanDesc::new(Kind::R2C, Precision::F32, &[64]).unwrap();
        assert_eq!(get(&mut lru, key(real, 7)), 6, "another kind");
        let with_callback = |words: &[u32]| Key {
            callback: Some((Attached::Load, Box::from(words))),
            ..key(real, 7)
        };
        assert_eq!(get(&mut lru, with_callback(&[1, 2])), 7, "a load callback");
        assert_eq!(get(&mut lru, with_callback(&[1, 3])), 8, "another load callback");
        assert_eq!(get(&mut lru, with_callback(&[1, 2])), 7);
        let stored = Key {
            callback: Some((Attached::Store, Box::from(&[1u32, 2][..]))),
            ..key(real, 7)
        };
        assert_eq!(get(&mut lru, stored), 9, "a store callback of the same key");
    }
}
