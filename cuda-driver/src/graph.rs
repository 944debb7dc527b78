//! CUDA graphs: work captured from a stream, instantiated once and replayed.

use std::ptr;
use std::sync::Arc;

use cuda_sys::driver::{CUgraph, CUgraphExec};

use crate::error::{check, check_resolved, Result};
use crate::{Context, Function, Stream};

/// A graph of work (`CUgraph`), as returned by [`Stream::end_capture`] and
/// [`Stream::capture`]. It keeps the kernels launched during the capture
/// (and so their modules) loaded.
pub struct Graph {
    raw: CUgraph,
    context: Context,
    kernels: Arc<[Function]>,
}

/// An instantiated graph (`CUgraphExec`), ready to launch many times. It
/// keeps the kernels of the graph it was made from loaded.
pub struct GraphExec {
    raw: CUgraphExec,
    context: Context,
    kernels: Arc<[Function]>,
}

// SAFETY: a graph handle may be used from any thread; every use makes its
// context current. Graph objects are not internally synchronised, so they
// are not `Sync`: calls on one graph are serialised by `&self` on one thread.
unsafe impl Send for Graph {}
// SAFETY: as for `Graph`; an executable graph must not be launched from two
// threads at once, so it is `Send` but not `Sync`.
unsafe impl Send for GraphExec {}

impl Graph {
    /// Takes ownership of a graph handle of `context` whose kernel nodes
    /// launch `kernels`.
    ///
    /// # Safety
    /// `raw` must be a graph of `context` that nothing else destroys.
    pub(crate) unsafe fn from_owned(raw: CUgraph, context: Context, kernels: Vec<Function>) -> Graph {
        Graph {
            raw,
            context,
            kernels: kernels.into(),
        }
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
            kernels: self.kernels.clone(),
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
    /// The kernels launched during the capture stay loaded as long as this
    /// object lives (it holds them), so dropping their modules is harmless.
    ///
    /// # Safety
    /// The graph replays the captured work with the addresses it was captured
    /// with: every buffer (device or pinned host) the captured work used must
    /// still be alive, and the kernels' obligations of
    /// [`Stream::launch`] hold again for this run. Kernels the captured work
    /// launched other than through this crate's launches (raw
    /// `cuLaunchKernel` on [`Stream::as_raw`]) must still be loaded.
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
        let Some(driver) = self.context.bind_for_drop("cuGraphDestroy") else {
            return;
        };
        // SAFETY: this is the only owner of the graph; executable graphs made from it are independent.
        let result = driver.cuGraphDestroy().map(|destroy| unsafe { destroy(self.raw) });
        self.context
            .record_drop_result("cuGraphDestroy", check_resolved(result));
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        let Some(driver) = self.context.bind_for_drop("cuGraphExecDestroy") else {
            return;
        };
        // SAFETY: this is the only owner; the driver lets queued launches of it finish.
        let result = driver.cuGraphExecDestroy().map(|destroy| unsafe { destroy(self.raw) });
        self.context
            .record_drop_result("cuGraphExecDestroy", check_resolved(result));
    }
}

impl std::fmt::Debug for Graph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph")
            .field("device", &self.context.device().ordinal())
            .field("kernels", &self.kernels.len())
            .finish()
    }
}

impl std::fmt::Debug for GraphExec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GraphExec")
            .field("device", &self.context.device().ordinal())
            .field("kernels", &self.kernels.len())
            .finish()
    }
}
