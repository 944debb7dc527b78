//! CUDA graphs: work captured from a stream, instantiated once and replayed.

use std::ptr;

use cuda_sys::driver::{CUgraph, CUgraphExec};

use crate::error::{check, Result};
use crate::{Context, Stream};

/// A graph of work (`CUgraph`), as returned by [`Stream::end_capture`].
pub struct Graph {
    raw: CUgraph,
    context: Context,
}

/// An instantiated graph (`CUgraphExec`), ready to launch many times.
pub struct GraphExec {
    raw: CUgraphExec,
    context: Context,
}

// SAFETY: a graph handle may be used from any thread; every use makes its
// context current. Graph objects are not internally synchronised, so they
// are not `Sync`: calls on one graph are serialised by `&self` on one thread.
unsafe impl Send for Graph {}
// SAFETY: as for `Graph`; an executable graph must not be launched from two
// threads at once, so it is `Send` but not `Sync`.
unsafe impl Send for GraphExec {}

impl Graph {
    /// Takes ownership of a graph handle of `context`.
    ///
    /// # Safety
    /// `raw` must be a graph of `context` that nothing else destroys.
    pub(crate) unsafe fn from_owned(raw: CUgraph, context: Context) -> Graph {
        Graph { raw, context }
    }

    /// Instantiates the graph for launching (`cuGraphInstantiateWithFlags`).
    pub fn instantiate(&self) -> Result<GraphExec> {
        let driver = self.context.bind()?;
        let mut exec = ptr::null_mut();
        // SAFETY: `exec` is a valid out-pointer; the graph is alive; flags 0.
        check(unsafe { driver.cuGraphInstantiateWithFlags()?(&mut exec, self.raw, 0) })?;
        Ok(GraphExec {
            raw: exec,
            context: self.context.clone(),
        })
    }

    /// Number of nodes in the graph.
    pub fn node_count(&self) -> Result<usize> {
        let driver = self.context.bind()?;
        let mut count = 0;
        // SAFETY: a null node array asks only for the count, written to a valid out-pointer.
        check(unsafe { driver.cuGraphGetNodes()?(self.raw, ptr::null_mut(), &mut count) })?;
        Ok(count)
    }

    /// The context the graph was captured in.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this graph is alive; the caller must not destroy it.
    pub unsafe fn as_raw(&self) -> CUgraph {
        self.raw
    }
}

impl GraphExec {
    /// Launches the graph on `stream` (same context).
    ///
    /// # Safety
    /// The graph replays the captured work with the addresses it was captured
    /// with: every buffer (device or pinned host) the captured work used must
    /// still be alive, and the kernels' obligations of
    /// [`Stream::launch`] hold again for this run.
    pub unsafe fn launch(&self, stream: &Stream) -> Result<()> {
        self.context.expect_same(stream.context(), "stream", "graph")?;
        let driver = self.context.bind()?;
        // SAFETY: graph and stream are alive and of the current context; the captured memory is
        // alive by the caller's obligation.
        check(unsafe { driver.cuGraphLaunch()?(self.raw, stream.raw()) })
    }

    /// Uploads the graph to the device ahead of its first launch.
    pub fn upload(&self, stream: &Stream) -> Result<()> {
        self.context.expect_same(stream.context(), "stream", "graph")?;
        let driver = self.context.bind()?;
        // SAFETY: graph and stream are alive and of the current context; uploading runs nothing.
        check(unsafe { driver.cuGraphUpload()?(self.raw, stream.raw()) })
    }

    /// The context the graph belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// The driver's handle.
    ///
    /// # Safety
    /// Valid only while this object is alive; the caller must not destroy it.
    pub unsafe fn as_raw(&self) -> CUgraphExec {
        self.raw
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        let result = self.context.bind().and_then(|driver| {
            // SAFETY: this is the only owner of the graph; executable graphs made from it are independent.
            check(unsafe { driver.cuGraphDestroy()?(self.raw) })
        });
        if let Err(error) = result {
            self.context.record_drop_error("cuGraphDestroy", error);
        }
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        let result = self.context.bind().and_then(|driver| {
            // SAFETY: this is the only owner; the driver lets queued launches of it finish.
            check(unsafe { driver.cuGraphExecDestroy()?(self.raw) })
        });
        if let Err(error) = result {
            self.context.record_drop_error("cuGraphExecDestroy", error);
        }
    }
}
