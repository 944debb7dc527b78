//! The checks made before NCCL is called, as pure functions: the elements each buffer of a
//! collective holds, ranks against the communicator's size, buffer lengths, and overlap.

use crate::{Error, Result};

/// A collective, for the element counts its buffers hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Collective {
    AllReduce,
    Reduce,
    Broadcast,
    AllGather,
    ReduceScatter,
}

/// Elements of the send and the receive buffer of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Counts {
    pub(crate) send: usize,
    pub(crate) recv: usize,
}

impl Collective {
    /// The elements each buffer holds for `count` (NCCL's count argument) over `nranks`: the
    /// gathered or scattered side holds `count * nranks`.
    pub(crate) fn counts(self, count: usize, nranks: usize) -> Result<Counts> {
        let all = || {
            count
                .checked_mul(nranks)
                .ok_or_else(|| Error::InvalidValue(format!("{count} elements times {nranks} ranks overflow")))
        };
        Ok(match self {
            Collective::AllReduce | Collective::Reduce | Collective::Broadcast => Counts {
                send: count,
                recv: count,
            },
            Collective::AllGather => Counts {
                send: count,
                recv: all()?,
            },
            Collective::ReduceScatter => Counts {
                send: all()?,
                recv: count,
            },
        })
    }
}

/// `rank` (a root, a peer, this process's rank) is one of `nranks`.
pub(crate) fn peer(what: &str, rank: usize, nranks: usize) -> Result<()> {
    if nranks == 0 || nranks > i32::MAX as usize {
        return Err(Error::InvalidValue(format!(
            "a communicator of {nranks} ranks: it needs 1 to {}",
            i32::MAX
        )));
    }
    if rank >= nranks {
        return Err(Error::InvalidValue(format!(
            "{what} {rank} is not a rank of a communicator of {nranks} (0..{nranks})"
        )));
    }
    Ok(())
}

/// A buffer of `have` bytes holds the `need` a call uses.
pub(crate) fn fits(name: &str, need: usize, have: usize) -> Result<()> {
    if need > have {
        return Err(Error::InvalidValue(format!(
            "the {name} holds {have} bytes but the call uses {need}"
        )));
    }
    Ok(())
}

/// Out-of-place buffers (address, bytes used) do not overlap: NCCL reads one while writing the
/// other. Overlapping use is what the `_in_place` forms are for.
pub(crate) fn disjoint(send: (u64, usize), recv: (u64, usize)) -> Result<()> {
    let ((a, a_len), (b, b_len)) = (send, recv);
    let overlaps = a_len > 0 && b_len > 0 && a < b.saturating_add(b_len as u64) && b < a.saturating_add(a_len as u64);
    if overlaps {
        return Err(Error::InvalidValue(
            "the send and receive buffers overlap: use the `_in_place` form for one buffer".into(),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gathered_and_scattered_sides_hold_every_ranks_part() {
        let counts = |kind: Collective| kind.counts(10, 4).unwrap();
        assert_eq!(counts(Collective::AllReduce), Counts { send: 10, recv: 10 });
        assert_eq!(counts(Collective::Reduce), Counts { send: 10, recv: 10 });
        assert_eq!(counts(Collective::Broadcast), Counts { send: 10, recv: 10 });
        assert_eq!(counts(Collective::AllGather), Counts { send: 10, recv: 40 });
        assert_eq!(counts(Collective::ReduceScatter), Counts { send: 40, recv: 10 });
        assert!(matches!(
            Collective::AllGather.counts(usize::MAX, 2),
            Err(Error::InvalidValue(_))
        ));
        assert_eq!(Collective::AllReduce.counts(usize::MAX, 2).unwrap().recv, usize::MAX);
    }

    #[test]
    fn ranks_are_checked_against_the_size() {
        assert!(peer("root", 0, 1).is_ok());
        assert!(peer("peer", 3, 4).is_ok());
        let error = peer("root", 4, 4).unwrap_err();
        assert!(
            matches!(&error, Error::InvalidValue(m) if m.contains("root 4") && m.contains("0..4")),
            "{error:?}"
        );
        assert!(matches!(peer("rank", 0, 0), Err(Error::InvalidValue(_))));
        assert!(matches!(
            peer("rank", 0, i32::MAX as usize + 1),
            Err(Error::InvalidValue(_))
        ));
    }

    #[test]
    fn lengths_must_cover_the_call() {
        assert!(fits("send buffer", 40, 40).is_ok());
        let error = fits("receive buffer", 41, 40).unwrap_err();
        assert!(
            matches!(&error, Error::InvalidValue(m) if m.contains("receive buffer") && m.contains("41")),
            "{error:?}"
        );
    }

    #[test]
    fn overlapping_out_of_place_buffers_are_refused() {
        assert!(disjoint((0x1000, 0x100), (0x1100, 0x100)).is_ok());
        assert!(disjoint((0x1100, 0x100), (0x1000, 0x100)).is_ok());
        assert!(
            disjoint((0x1000, 0), (0x1000, 0x100)).is_ok(),
            "empty ranges never overlap"
        );
        for recv in [(0x1000, 0x100), (0x10ff, 1), (0x0f00, 0x101), (0x0f00, 0x1000)] {
            assert!(
                matches!(disjoint((0x1000, 0x100), recv), Err(Error::InvalidValue(_))),
                "{recv:?}"
            );
        }
    }
}
