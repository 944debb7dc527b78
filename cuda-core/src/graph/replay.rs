//! [`CapturedStep`]: a closure over arrays run eagerly once, captured as a graph, and replayed
//! from then on, with its inputs rebound by copying.

use cuda_driver::{CaptureMode, GraphExec, Stream};

use crate::array::{DeviceArray, Element};
use crate::error::{Error, Result};

/// A step of array work (a training step, a solver iteration) recorded once and replayed as a
/// CUDA graph: what `torch.cuda.graphs` and CuPy's graphs leave to their users (static input
/// buffers, copying new data into them, static outputs, a warm-up), done here.
///
/// The step is a closure from input arrays to output arrays. The step keeps its own input
/// arrays (copies of the ones given to [`new`](Self::new), on the step's stream) and output
/// arrays. [`run`](Self::run) copies the arrays it is given into the inputs and:
/// - on the first call, runs the closure eagerly (compiling and loading its kernels and making
///   library handles: the warm-up), copies its results into the outputs, then captures the
///   closure once more, ending with copies of its results into the same outputs, and
///   instantiates the graph. The capture runs nothing, so the first call has run the step once.
/// - on every later call, launches the graph (one `cuGraphLaunch`): the closure is not called.
///
/// The contract, beyond [the module's](crate::graph):
/// - every call gives as many inputs as the first, of the same shapes, on the step's stream's
///   context (else a typed error, before anything runs); their contents are free;
/// - the closure returns as many arrays, of the same shapes, every time it is called (the
///   capture's are checked against the warm-up's), and chooses its work from array shapes only:
///   a replay repeats what the capture recorded, whatever host state the closure would read;
/// - arrays the closure reaches other than its inputs (weights, say) are read and written in
///   place at every replay, as by the eager run: updating a weight array in the closure makes
///   each replay one more update;
/// - the returned outputs are overwritten by the next call; copy what must be kept.
pub struct CapturedStep<T: Element, F> {
    /// Dropped first: its launches are queued on `stream`, before the arrays' stream-ordered
    /// frees.
    graph: Option<GraphExec<'static>>,
    stream: Stream,
    step: F,
    inputs: Vec<DeviceArray<T>>,
    outputs: Vec<DeviceArray<T>>,
    replays: u64,
}

impl<T, F> CapturedStep<T, F>
where
    T: Element,
    F: FnMut(&[DeviceArray<T>]) -> Result<Vec<DeviceArray<T>>>,
{
    /// A step on `stream` whose inputs have the shapes of `inputs` (copied now into the step's
    /// own input arrays). Nothing runs until [`run`](Self::run).
    ///
    /// # Safety
    /// The graph replays the addresses the closure used when captured. Every array the closure
    /// reaches besides its inputs must stay alive, at its address, while this step lives:
    /// captured by move or by reference (the borrow checker then sees to it), not swapped or
    /// dropped behind a shared reference (`RefCell`, `Mutex`, ...).
    pub unsafe fn new(stream: &Stream, inputs: &[&DeviceArray<T>], step: F) -> Result<Self> {
        let mut owned = Vec::with_capacity(inputs.len());
        for input in inputs {
            let mut copy = DeviceArray::<T>::empty(stream, input.shape().to_vec())?;
            copy.copy_from(input)?;
            owned.push(copy);
        }
        Ok(CapturedStep {
            graph: None,
            stream: stream.clone(),
            step,
            inputs: owned,
            outputs: Vec::new(),
            replays: 0,
        })
    }

    /// Runs the step on `inputs` (copied into the step's input arrays first) and returns its
    /// outputs: eagerly, then captured, on the first call; as one graph launch after.
    pub fn run(&mut self, inputs: &[&DeviceArray<T>]) -> Result<&[DeviceArray<T>]> {
        self.rebind(inputs)?;
        match &self.graph {
            Some(graph) => {
                // SAFETY: the graph uses the step's inputs and outputs (owned here), memory it
                // allocates itself, and the arrays the closure reaches, alive by `new`'s contract;
                // its kernels are the crate's own generated ones, correct for the captured shapes.
                unsafe { graph.launch(&self.stream)? };
                self.replays += 1;
            }
            None => self.record()?,
        }
        Ok(&self.outputs)
    }

    /// The step's input arrays, which every run copies its inputs into and the graph reads.
    pub fn inputs(&self) -> &[DeviceArray<T>] {
        &self.inputs
    }

    /// The outputs of the last call.
    pub fn outputs(&self) -> &[DeviceArray<T>] {
        &self.outputs
    }

    /// Whether the step has been captured (its first call is done).
    pub fn is_recorded(&self) -> bool {
        self.graph.is_some()
    }

    /// How many calls were graph launches.
    pub fn replays(&self) -> u64 {
        self.replays
    }

    /// Copies `given` into the step's inputs, after checking count, shapes and stream.
    fn rebind(&mut self, given: &[&DeviceArray<T>]) -> Result<()> {
        if given.len() != self.inputs.len() {
            return Err(Error::InvalidValue(format!(
                "captured step: {} inputs given, it was made with {}",
                given.len(),
                self.inputs.len()
            )));
        }
        for (position, (input, new)) in self.inputs.iter().zip(given).enumerate() {
            if input.shape() != new.shape() {
                return Err(Error::InvalidValue(format!(
                    "captured step: input {position} has shape {:?}, the step was made for {:?} (a graph replays its shapes)",
                    new.shape(),
                    input.shape()
                )));
            }
        }
        for (input, new) in self.inputs.iter_mut().zip(given) {
            input.copy_from(new)?;
        }
        Ok(())
    }

    /// The first call: the warm-up, then the capture and instantiation.
    fn record(&mut self) -> Result<()> {
        let eager = (self.step)(&self.inputs)?;
        let mut outputs = Vec::with_capacity(eager.len());
        for result in &eager {
            let mut output = DeviceArray::<T>::empty(&self.stream, result.shape().to_vec())?;
            output.copy_from(result)?;
            outputs.push(output);
        }
        drop(eager);
        self.outputs = outputs;
        let scope = self.stream.capture_scope(CaptureMode::ThreadLocal)?;
        let captured = (self.step)(&self.inputs)?;
        if captured.len() != self.outputs.len() {
            return Err(Error::InvalidValue(format!(
                "captured step: the closure returned {} arrays when captured, {} when run eagerly",
                captured.len(),
                self.outputs.len()
            )));
        }
        for (output, result) in self.outputs.iter_mut().zip(&captured) {
            // `copy_from` refuses another shape: the capture must repeat the eager run.
            output.copy_from(result)?;
        }
        // Dropped inside the capture: graph frees, so the graph allocates and frees them itself.
        drop(captured);
        let graph = scope.end()?;
        self.graph = Some(graph.instantiate()?);
        Ok(())
    }
}

impl<T: Element, F> std::fmt::Debug for CapturedStep<T, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CapturedStep")
            .field("stream", &self.stream)
            .field("inputs", &self.inputs.len())
            .field("outputs", &self.outputs.len())
            .field("recorded", &self.graph.is_some())
            .field("replays", &self.replays)
            .finish()
    }
}
