//! The `info` outputs of queued routines: slots in one device buffer of the handle, the routine
//! and meaning of each, read back together and turned into [`Error::Linalg`].

use cuda_driver::{Access, DeviceBuffer, DeviceMemory, Stream, StreamUse};
use cuda_sys::driver::CUdeviceptr;

use crate::{Error, LinalgFailure, Result};

/// What a positive `info` means for a routine (a negative one is always an invalid argument).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Meaning {
    /// LU: `U(info, info)` is zero.
    Singular,
    /// Cholesky: the leading minor of order `info` is not positive definite.
    NotPositiveDefinite,
    /// SVD and eigenvalue solvers: `info` did not converge.
    NoConvergence,
    /// Only argument checks (solves, QR): a positive value is not documented and reported as
    /// not converging, never dropped.
    ArgumentsOnly,
}

impl Meaning {
    /// The failure an `info` value stands for; `None` for 0.
    pub(crate) fn failure(self, info: i32) -> Option<LinalgFailure> {
        let value = i64::from(info);
        match info {
            0 => None,
            i32::MIN..=-1 => Some(LinalgFailure::InvalidArgument { position: -value }),
            _ => Some(match self {
                Meaning::Singular => LinalgFailure::Singular { pivot: value },
                Meaning::NotPositiveDefinite => LinalgFailure::NotPositiveDefinite { order: value },
                Meaning::NoConvergence | Meaning::ArgumentsOnly => LinalgFailure::NoConvergence { count: value },
            }),
        }
    }
}

/// One routine's slots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Pending {
    routine: &'static str,
    meaning: Meaning,
    first: usize,
    count: usize,
}

/// The bookkeeping of the slots, apart from the memory: which routine owns which. The slots
/// of the routine being queued are tentative until [`Ledger::confirm`]: a routine that failed
/// to queue never writes them, so they are given back by the next [`Ledger::take`] or
/// [`Ledger::settle`] instead of being read as a result.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    pending: Vec<Pending>,
    tentative: Option<Pending>,
    used: usize,
}

impl Ledger {
    /// Slots taken since the last read-back.
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// Routines queued whose slots are not read back yet.
    pub(crate) fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Notes `count` tentative slots for `routine`, returning the first.
    pub(crate) fn take(&mut self, routine: &'static str, meaning: Meaning, count: usize) -> usize {
        self.give_back_tentative();
        let first = self.used;
        self.tentative = Some(Pending {
            routine,
            meaning,
            first,
            count,
        });
        self.used += count;
        first
    }

    /// The routine of the tentative slots was queued: they will be read back.
    pub(crate) fn confirm(&mut self) {
        if let Some(pending) = self.tentative.take() {
            self.pending.push(pending);
        }
    }

    /// Tentative slots are the last taken: giving them back frees them for the next routine.
    fn give_back_tentative(&mut self) {
        if let Some(pending) = self.tentative.take() {
            self.used -= pending.count;
        }
    }

    /// The first failure in the values read back (slot order: routines in the order queued,
    /// matrices in batch order); the ledger is empty afterwards.
    pub(crate) fn settle(&mut self, values: &[i32]) -> Result<()> {
        self.give_back_tentative();
        let pending = std::mem::take(&mut self.pending);
        self.used = 0;
        for Pending {
            routine,
            meaning,
            first,
            count,
        } in pending
        {
            for (index, &info) in values[first..first + count].iter().enumerate() {
                if let Some(failure) = meaning.failure(info) {
                    return Err(Error::Linalg {
                        routine,
                        index,
                        failure,
                    });
                }
            }
        }
        Ok(())
    }
}

/// The handle's `info` buffer and its ledger.
pub(crate) struct Infos {
    buffer: Option<DeviceBuffer<i32>>,
    ledger: Ledger,
}

impl Infos {
    pub(crate) fn new() -> Infos {
        Infos {
            buffer: None,
            ledger: Ledger::default(),
        }
    }

    /// Routines whose `info` is not read back yet.
    pub(crate) fn pending(&self) -> usize {
        self.ledger.pending()
    }

    /// The routine given the last slots was queued (see [`Ledger::confirm`]).
    pub(crate) fn confirm(&mut self) {
        self.ledger.confirm();
    }

    /// `count` tentative slots for `routine`, their address and the buffer's use on `stream`
    /// (drop it once the routine is queued, then [`Infos::confirm`] if it was). A full buffer with
    /// routines pending is read back first (a host wait; its failure is returned), then grown.
    pub(crate) fn slots(
        &mut self,
        stream: &Stream,
        routine: &'static str,
        meaning: Meaning,
        count: usize,
    ) -> Result<(CUdeviceptr, StreamUse<'_>)> {
        let capacity = self.buffer.as_ref().map_or(0, DeviceBuffer::len);
        self.ledger.give_back_tentative();
        if self.ledger.used() + count > capacity {
            self.read_back(stream)?;
            let grown = capacity.saturating_mul(2).max(count).max(64);
            self.buffer = Some(DeviceBuffer::alloc(stream.context(), grown)?);
        }
        let first = self.ledger.take(routine, meaning, count);
        let buffer = self.buffer.as_ref().expect("allocated above");
        let address = buffer.device_ptr() + (first * size_of::<i32>()) as CUdeviceptr;
        Ok((address, buffer.begin_use(stream, Access::Write)?))
    }

    /// Reads every pending `info` back (one copy, after the stream's work) and returns the first
    /// failure.
    pub(crate) fn read_back(&mut self, stream: &Stream) -> Result<()> {
        let Some(buffer) = self.buffer.as_ref().filter(|_| self.ledger.used() > 0) else {
            return Ok(());
        };
        if stream.in_capture()? {
            return Err(Error::InvalidValue(
                "the info check reads the results back (a host wait), which a stream capture cannot hold: \
                 check after ending the capture"
                    .to_string(),
            ));
        }
        stream.synchronize()?;
        let values = buffer.to_vec()?;
        self.ledger.settle(&values)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_values_take_their_routines_meaning() {
        assert_eq!(Meaning::Singular.failure(0), None);
        assert_eq!(Meaning::Singular.failure(3), Some(LinalgFailure::Singular { pivot: 3 }));
        assert_eq!(
            Meaning::NotPositiveDefinite.failure(2),
            Some(LinalgFailure::NotPositiveDefinite { order: 2 })
        );
        assert_eq!(
            Meaning::NoConvergence.failure(5),
            Some(LinalgFailure::NoConvergence { count: 5 })
        );
        assert_eq!(
            Meaning::ArgumentsOnly.failure(-4),
            Some(LinalgFailure::InvalidArgument { position: 4 })
        );
        assert_eq!(
            Meaning::ArgumentsOnly.failure(1),
            Some(LinalgFailure::NoConvergence { count: 1 })
        );
    }

    #[test]
    fn the_first_failure_names_its_routine_and_batch_index() {
        let mut ledger = Ledger::default();
        assert_eq!(ledger.take("cusolverDnXgetrf", Meaning::Singular, 1), 0);
        ledger.confirm();
        assert_eq!(
            ledger.take("cusolverDnSpotrfBatched", Meaning::NotPositiveDefinite, 4),
            1
        );
        ledger.confirm();
        assert_eq!(ledger.take("cusolverDnXgesvd", Meaning::NoConvergence, 1), 5);
        ledger.confirm();
        assert_eq!((ledger.used(), ledger.pending()), (6, 3));
        // Matrix 2 of the batch fails, and so does the SVD after it: the batch is reported.
        let error = ledger.settle(&[0, 0, 0, 3, 0, 7]).unwrap_err();
        match &error {
            Error::Linalg {
                routine,
                index,
                failure,
            } => {
                assert_eq!((*routine, *index), ("cusolverDnSpotrfBatched", 2));
                assert_eq!(*failure, LinalgFailure::NotPositiveDefinite { order: 3 });
            }
            other => panic!("{other:?}"),
        }
        let message = error.to_string();
        assert!(
            message.contains("matrix 2") && message.contains("not positive definite"),
            "{message}"
        );
        // Settled: nothing is pending any more.
        assert_eq!(ledger.used(), 0);
        assert!(ledger.settle(&[]).is_ok());
        ledger.take("cusolverDnXpotrs", Meaning::ArgumentsOnly, 1);
        ledger.confirm();
        assert!(ledger.settle(&[0]).is_ok());
    }

    #[test]
    fn slots_of_a_routine_that_failed_to_queue_are_never_read() {
        let mut ledger = Ledger::default();
        ledger.take("cusolverDnXpotrf", Meaning::NotPositiveDefinite, 1);
        ledger.confirm();
        // The next routine failed before it was queued: its slot is given back and reused.
        assert_eq!(ledger.take("cusolverDnXgetrf", Meaning::Singular, 1), 1);
        assert_eq!(ledger.take("cusolverDnXgeqrf", Meaning::ArgumentsOnly, 1), 1);
        ledger.confirm();
        assert_eq!((ledger.used(), ledger.pending()), (2, 2));
        // A tentative slot is not read back: its garbage does not become an error.
        ledger.take("cusolverDnXgesvd", Meaning::NoConvergence, 1);
        assert!(ledger.settle(&[0, 0, -99]).is_ok());
        assert_eq!((ledger.used(), ledger.pending()), (0, 0));
    }
}
