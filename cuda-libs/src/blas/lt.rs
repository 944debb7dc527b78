//! [`Lt`]: a cuBLASLt handle bound to one stream, and its `matmul` with an epilogue.

use std::collections::HashMap;
use std::ffi::c_void;

use cuda_driver::{Access, DeviceBuffer, DeviceMemory, DeviceMemoryMut, Stream};
use cuda_sys::cublaslt::{
    cublasComputeType_t, cublasLtEpilogue_t, cublasLtHandle_t, cublasLtMatmulAlgo_t, cublasLtMatmulDescAttributes_t,
    cublasLtMatmulDesc_t, cublasLtMatmulHeuristicResult_t, cublasLtMatmulPreferenceAttributes_t,
    cublasLtMatmulPreference_t, cublasLtMatrixLayout_t, cublasStatus_t, cudaDataType_t,
};
use cuda_sys::CublasLt;
use half::{bf16, f16};

use super::replay::{handle_lifecycle, Replays};
use super::{check, device_ptr, operand, status_error, Element, Gemm, Matrix, Operand, Shape, WORKSPACE_BYTES};
use crate::{Error, Result};

/// The alignment of every cuBLASLt operand, which the algorithm heuristic assumes (whole
/// allocations have it).
const LT_ALIGNMENT: u32 = 256;

/// The widest load cuBLASLt's kernels make, in bytes: a kernel that reads a matrix in vectors
/// may read up to this many bytes past its last element (the rest of the last vector).
const LT_VECTOR_BYTES: usize = 16;

const CUBLASLT: &str = "cuBLASLt";

/// What cuBLASLt applies to the product before it is stored: `D = f(alpha * op(A) op(B) +
/// beta * C + bias)`, with `bias` a vector of `n` elements added to every row (row-major
/// `y = x @ w + b`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    /// Nothing (`CUBLASLT_EPILOGUE_DEFAULT`).
    None,
    /// `max(x, 0)` (`CUBLASLT_EPILOGUE_RELU`).
    Relu,
    /// GELU, tanh approximation (`CUBLASLT_EPILOGUE_GELU`).
    Gelu,
    /// `+ bias` (`CUBLASLT_EPILOGUE_BIAS`).
    Bias,
    /// `max(x + bias, 0)` (`CUBLASLT_EPILOGUE_RELU_BIAS`).
    ReluBias,
    /// GELU of `x + bias` (`CUBLASLT_EPILOGUE_GELU_BIAS`).
    GeluBias,
}

impl Epilogue {
    /// Whether it adds a bias vector.
    pub fn has_bias(self) -> bool {
        matches!(self, Epilogue::Bias | Epilogue::ReluBias | Epilogue::GeluBias)
    }

    fn raw(self) -> cublasLtEpilogue_t {
        match self {
            Epilogue::None => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_DEFAULT,
            Epilogue::Relu => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU,
            Epilogue::Gelu => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU,
            Epilogue::Bias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
            Epilogue::ReluBias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_RELU_BIAS,
            Epilogue::GeluBias => cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
        }
    }
}

/// An element type [`Lt::matmul`] takes: [`half::bf16`], [`half::f16`] and `f32`, all computed
/// in `f32` (`CUBLAS_COMPUTE_32F`, `f32` `alpha` and `beta`); the bias has the element type.
pub trait LtElement: Element {}

impl LtElement for bf16 {}
impl LtElement for f16 {}
impl LtElement for f32 {}

/// What a [`Plan`] depends on: the element and compute types, the epilogue, the shape and
/// whether `C` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct PlanKey {
    data_type: u32,
    compute_type: u32,
    epilogue: Epilogue,
    transpose_a: bool,
    transpose_b: bool,
    shape: Shape,
    reads_c: bool,
    /// The alignment the heuristic is told the matrices have: [`LT_ALIGNMENT`] where every
    /// matrix's memory runs on to the end of its last element's 16-byte vector, else one
    /// element, which leaves out the kernels that read whole vectors (see [`Lt::matmul`]).
    alignment: u32,
}

/// One call exactly: its plan, every address it reads or writes, and `alpha` and `beta` (as
/// bits), which is what its graph replays (see [`Lt::set_replay`]).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct CallKey {
    plan: PlanKey,
    addresses: [u64; 4],
    scalars: [u64; 2],
}

/// Everything a product of one [`PlanKey`] needs but its addresses, made on the first call and
/// reused: the descriptor (transposes and epilogue set; only the bias pointer is set per call),
/// the three layouts, and the algorithm the heuristic chose. A repeated call creates nothing.
struct Plan {
    descriptor: MatmulDesc,
    /// `A`, `B` and `C` as cuBLASLt sees them (column-major: row-major `B`, `A`, `C`).
    layouts: [Layout; 3],
    algorithm: cublasLtMatmulAlgo_t,
}

/// A cuBLASLt handle whose work is queued on one stream, with a workspace of its own
/// ([`WORKSPACE_BYTES`]) and, for each problem it has multiplied (shape, element type,
/// epilogue), a plan: the descriptors cuBLASLt needs and the algorithm
/// `cublasLtMatmulAlgoGetHeuristic` chose, made once, so a repeated call costs one
/// `cublasLtMatmul` (and, with a bias, one attribute set).
///
/// With replay switched on ([`Lt::set_replay`], off by default), a call repeated on the same
/// addresses is replayed as a CUDA graph from its second time on.
///
/// `Send` but not `Sync`, like [`super::Blas`]; destroyed on drop.
pub struct Lt {
    replays: Replays<CallKey>,
    handle: cublasLtHandle_t,
    stream: Stream,
    workspace: DeviceBuffer<u8>,
    plans: HashMap<PlanKey, Plan>,
    allow_tf32: bool,
}

// SAFETY: cuBLASLt allows a handle to be used from any host thread, one thread at a time; `Lt`
// is not `Sync`, and every call makes the stream's context current on the calling thread.
unsafe impl Send for Lt {}

impl Lt {
    /// Creates a handle (`cublasLtCreate`, with the stream's context current) whose
    /// matrix products are queued on `stream`. Loads cuBLASLt first: a missing library is
    /// [`crate::Error::Load`].
    pub fn new(stream: &Stream) -> Result<Lt> {
        // Held to the end: nothing can fail once the `Lt` exists, so its `drop` (which takes
        // the lock again) never runs under this guard.
        let _lifecycle = handle_lifecycle();
        let lt = cuda_sys::cublaslt()?;
        let create = lt.cublasLtCreate()?;
        stream.context().set_current()?;
        let workspace = DeviceBuffer::<u8>::alloc(stream.context(), WORKSPACE_BYTES)?;
        // Every call uses the workspace on `stream`: noted once, its free waits for the stream.
        drop(workspace.begin_use(stream, Access::Write)?);
        let mut handle = std::ptr::null_mut();
        // SAFETY: `handle` is a valid out-pointer; the stream's context is current.
        check(CUBLASLT, "cublasLtCreate", unsafe { create(&mut handle) }.0)?;
        Ok(Lt {
            replays: Replays::new(),
            handle,
            stream: stream.clone(),
            workspace,
            plans: HashMap::new(),
            allow_tf32: false,
        })
    }

    /// The stream this handle queues its work on.
    pub fn stream(&self) -> &Stream {
        &self.stream
    }

    /// How many algorithms the heuristic has chosen so far (one per distinct problem).
    pub fn cached_algorithms(&self) -> usize {
        self.plans.len()
    }

    /// Lets `f32` products use TF32 tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`), as
    /// [`super::Blas::set_allow_tf32`] does; off by default. `f16` and `bf16` are unaffected.
    pub fn set_allow_tf32(&mut self, allow: bool) {
        self.allow_tf32 = allow;
    }

    /// Whether `f32` products may use TF32 (see [`Lt::set_allow_tf32`]).
    pub fn allow_tf32(&self) -> bool {
        self.allow_tf32
    }

    /// Turns graph replay on or off (off by default). With it on, a [`Lt::matmul`] whose plan,
    /// addresses, `alpha` and `beta` all equal an earlier call's (of the last
    /// [`REMEMBERED_CALLS`](super::REMEMBERED_CALLS)) is captured as a CUDA graph on its
    /// second time, on a stream of the handle's own, and launched from that graph from then
    /// on: a `cuGraphLaunch` where the library call would cost several times the host time. The
    /// result is the same, as the graph is the call's own kernels with its own arguments. A
    /// stream under capture always gets the direct call.
    ///
    /// The trade-off, and why it is off unless asked for: a capture lasts one library call, and
    /// while it runs no other thread of the process may synchronise the whole context or device
    /// (`Context::synchronize`, `cudaDeviceSynchronize`, a memory pool waiting for memory):
    /// such a call fails with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`, and the capture fails
    /// with it. The handles of this crate wait for a capture to end before they are made or
    /// destroyed; other code does not. Turn replay on where no other thread synchronises the
    /// context while products run. A capture that fails stops replay for the handle (the call
    /// runs directly) until it is turned off and on again; setting the switch to its current
    /// value changes nothing, so a caller may set it before every call.
    pub fn set_replay(&mut self, replay: bool) {
        self.replays.set_enabled(replay);
    }

    /// Whether repeated calls are replayed as graphs now: switched on, and no capture failed
    /// since (see [`Lt::set_replay`]).
    pub fn replay(&self) -> bool {
        self.replays.enabled()
    }

    /// How many calls are held as graphs now (see [`Lt::set_replay`]).
    pub fn replayed_calls(&self) -> usize {
        self.replays.graphs()
    }

    /// Queues `C = epilogue(alpha * op(A) op(B) + beta * C [+ bias])` (row-major, see
    /// [`Gemm`]) on the handle's stream as one `cublasLtMatmul`: `relu(x @ w + b)` is
    /// `lt.matmul(&Gemm::new(m, n, k), Epilogue::ReluBias, &x, &w, Some(&b), &mut y)`.
    ///
    /// `bias` (`n` elements, one per column of `C`) is given exactly when the epilogue adds
    /// one. Shapes, leading dimensions, lengths and contexts are checked first, as for
    /// [`super::Blas::gemm`]. Every buffer is a whole allocation, so 256-byte aligned, as the
    /// heuristic assumes.
    ///
    /// cuBLASLt's fastest kernels read matrices (and the bias) in 16-byte vectors, and so may
    /// read up to 15 bytes past an operand's last element. Where an operand's memory ends before
    /// that (an exactly sized buffer whose last row, or bias, ends inside a vector), the problem
    /// is planned as if the operands were only element aligned, which picks kernels that read no
    /// byte outside them: slower, never out of bounds.
    pub fn matmul<T: LtElement>(
        &mut self,
        gemm: &Gemm,
        epilogue: Epilogue,
        a: &(impl Operand<T> + ?Sized),
        b: &(impl Operand<T> + ?Sized),
        bias: Option<&dyn Operand<T>>,
        c: &mut (impl Operand<T> + DeviceMemoryMut + ?Sized),
    ) -> Result<()> {
        let shape = gemm.check()?;
        let bias_span = match (epilogue.has_bias(), bias) {
            (true, Some(_)) => gemm.n,
            (false, None) => 0,
            (true, None) => {
                return Err(Error::InvalidValue(format!(
                    "epilogue {epilogue:?} adds a bias, and none was given"
                )))
            }
            (false, Some(_)) => {
                return Err(Error::InvalidValue(format!(
                    "epilogue {epilogue:?} adds no bias, and one was given"
                )))
            }
        };
        let lt = cuda_sys::cublaslt()?;
        let matmul = lt.cublasLtMatmul()?;
        let alignment = plan_alignment(
            size_of::<T>(),
            [
                (a.byte_len(), shape.a.span),
                (b.byte_len(), shape.b.span),
                (c.byte_len(), shape.c.span),
            ]
            .into_iter()
            .chain(bias.map(|bias| (bias.byte_len(), bias_span))),
        );
        let (a, _a_use) = operand::<T, _>("A", a, shape.a.span, &self.stream, Access::Read)?;
        let (b, _b_use) = operand::<T, _>("B", b, shape.b.span, &self.stream, Access::Read)?;
        let bias = bias
            .map(|bias| operand::<T, _>("bias", bias, bias_span, &self.stream, Access::Read))
            .transpose()?;
        let (c, _c_use) = operand::<T, _>("C", c, shape.c.span, &self.stream, Access::Write)?;
        for (name, address) in [("A", a), ("B", b), ("C", c)]
            .into_iter()
            .chain(bias.as_ref().map(|(p, _)| ("bias", *p)))
        {
            if address % u64::from(LT_ALIGNMENT) != 0 {
                return Err(Error::InvalidValue(format!(
                    "cuBLASLt operand {name} at {address:#x} is not {LT_ALIGNMENT}-byte aligned (the algorithm heuristic assumes it): use Blas::gemm"
                )));
            }
        }
        self.stream.context().set_current()?;

        let key = PlanKey {
            data_type: T::DATA_TYPE,
            compute_type: T::compute_type(self.allow_tf32),
            epilogue,
            transpose_a: gemm.transpose_a,
            transpose_b: gemm.transpose_b,
            shape,
            reads_c: gemm.beta != 0.0,
            alignment,
        };
        if !self.plans.contains_key(&key) {
            let plan = self.plan(lt, &key)?;
            self.plans.insert(key, plan);
        }
        let plan = &self.plans[&key];
        if let Some((bias, _)) = &bias {
            plan.descriptor
                .set(CublasAttr::CUBLASLT_MATMUL_DESC_BIAS_POINTER, &device_ptr(*bias))?;
        }
        let [layout_a, layout_b, layout_c] = &plan.layouts;
        let alpha = gemm.alpha as f32;
        let beta = gemm.beta as f32;
        let (handle, workspace) = (self.handle, &self.workspace);
        let call = |stream: &Stream| {
            // SAFETY: handle, descriptor and layouts are live, the context is current; the
            // layouts describe buffers that hold the elements they span (checked above); C is
            // read and written in place (same layout, as cuBLASLt allows); the workspace is this
            // handle's, of the size the heuristic was told; the stream belongs to the context.
            let status = unsafe {
                matmul(
                    handle,
                    plan.descriptor.0,
                    (&alpha as *const f32).cast::<c_void>(),
                    device_ptr(b),
                    layout_a.0,
                    device_ptr(a),
                    layout_b.0,
                    (&beta as *const f32).cast::<c_void>(),
                    device_ptr(c),
                    layout_c.0,
                    device_ptr(c),
                    layout_c.0,
                    &plan.algorithm,
                    device_ptr(workspace.as_raw()),
                    WORKSPACE_BYTES,
                    stream.as_raw().cast(),
                )
            };
            check(CUBLASLT, "cublasLtMatmul", status.0)
        };
        let call_key = CallKey {
            plan: key,
            addresses: [a, b, c, bias.as_ref().map_or(0, |(bias, _)| *bias)],
            scalars: [gemm.alpha.to_bits(), gemm.beta.to_bits()],
        };
        // SAFETY: the key holds the plan (descriptor, layouts and algorithm are the plan's,
        // never changed but for the bias pointer, which is in the key), every address, and
        // alpha and beta; the workspace is the handle's for its life. The memory the key names
        // is the operands of this call, alive for it.
        unsafe { self.replays.run(call_key, &self.stream, call) }
    }

    /// The descriptors and algorithm for `key` (see [`Plan`]).
    fn plan(&self, lt: &'static CublasLt, key: &PlanKey) -> Result<Plan> {
        let descriptor = MatmulDesc::new(lt, key.compute_type)?;
        // Column-major, as cuBLASLt sees it: C^T = op(B)^T op(A)^T (see the module docs).
        descriptor.set(CublasAttr::CUBLASLT_MATMUL_DESC_TRANSA, &transpose(key.transpose_b))?;
        descriptor.set(CublasAttr::CUBLASLT_MATMUL_DESC_TRANSB, &transpose(key.transpose_a))?;
        descriptor.set(CublasAttr::CUBLASLT_MATMUL_DESC_EPILOGUE, &key.epilogue.raw().0)?;
        let layouts = [
            Layout::new(lt, key.data_type, &key.shape.b)?,
            Layout::new(lt, key.data_type, &key.shape.a)?,
            Layout::new(lt, key.data_type, &key.shape.c)?,
        ];
        let algorithm = self.heuristic(lt, &descriptor, [&layouts[0], &layouts[1], &layouts[2]], key.alignment)?;
        Ok(Plan {
            descriptor,
            layouts,
            algorithm,
        })
    }

    /// The heuristic's first choice for this problem within the workspace, for matrices of
    /// `alignment` bytes.
    fn heuristic(
        &self,
        lt: &CublasLt,
        descriptor: &MatmulDesc,
        layouts: [&Layout; 3],
        alignment: u32,
    ) -> Result<cublasLtMatmulAlgo_t> {
        let create = lt.cublasLtMatmulPreferenceCreate()?;
        let destroy = lt.cublasLtMatmulPreferenceDestroy()?;
        let set = lt.cublasLtMatmulPreferenceSetAttribute()?;
        let get_heuristic = lt.cublasLtMatmulAlgoGetHeuristic()?;
        let mut preference: cublasLtMatmulPreference_t = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        check(
            CUBLASLT,
            "cublasLtMatmulPreferenceCreate",
            unsafe { create(&mut preference) }.0,
        )?;
        use cublasLtMatmulPreferenceAttributes_t as Pref;
        let workspace = WORKSPACE_BYTES as u64;
        // SAFETY: the preference is live; this attribute is a `uint64_t`.
        let status = unsafe {
            set(
                preference,
                Pref::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                (&workspace as *const u64).cast(),
                size_of::<u64>(),
            )
        };
        let alignments = [
            Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
            Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
            Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            Pref::CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
        ];
        let set_all = check(CUBLASLT, "cublasLtMatmulPreferenceSetAttribute", status.0).and_then(|()| {
            alignments.iter().try_for_each(|attribute| {
                // SAFETY: the preference is live; the alignment attributes are `uint32_t`.
                let status = unsafe {
                    set(
                        preference,
                        *attribute,
                        (&alignment as *const u32).cast(),
                        size_of::<u32>(),
                    )
                };
                check(CUBLASLT, "cublasLtMatmulPreferenceSetAttribute", status.0)
            })
        });
        let mut result = cublasLtMatmulHeuristicResult_t::default();
        let mut found = 0;
        let status = set_all.and_then(|()| {
            let [a, b, c] = layouts;
            // SAFETY: every descriptor is live; room for the one result asked for.
            let status = unsafe {
                get_heuristic(
                    self.handle,
                    descriptor.0,
                    a.0,
                    b.0,
                    c.0,
                    c.0,
                    preference,
                    1,
                    &mut result,
                    &mut found,
                )
            };
            check(CUBLASLT, "cublasLtMatmulAlgoGetHeuristic", status.0)
        });
        // SAFETY: created above, destroyed once.
        unsafe { destroy(preference) };
        status?;
        if found == 0 {
            // No algorithm for this problem on this GPU.
            return Err(status_error(
                CUBLASLT,
                "cublasLtMatmulAlgoGetHeuristic",
                cublasStatus_t::CUBLAS_STATUS_NOT_SUPPORTED.0,
            ));
        }
        Ok(result.algo)
    }
}

/// The alignment a plan tells the heuristic the operands have: [`LT_ALIGNMENT`] where every
/// operand's memory (`(bytes, elements spanned)`, of elements of `element_size` bytes: the
/// matrices and the bias vector, which the epilogue reads in vectors too) runs on to the end of
/// its last element's [`LT_VECTOR_BYTES`] vector; one element otherwise, which leaves out the
/// kernels that read whole vectors.
fn plan_alignment(element_size: usize, operands: impl IntoIterator<Item = (usize, usize)>) -> u32 {
    let whole_vectors = operands.into_iter().all(|(bytes, span)| {
        span.checked_mul(element_size)
            .is_some_and(|used| bytes >= used.next_multiple_of(LT_VECTOR_BYTES))
    });
    match whole_vectors {
        true => LT_ALIGNMENT,
        false => element_size as u32,
    }
}

/// `CUBLAS_OP_T` or `CUBLAS_OP_N` as the `int32_t` the transpose attributes take.
fn transpose(transposed: bool) -> i32 {
    let operation = if transposed {
        cuda_sys::cublas::cublasOperation_t::CUBLAS_OP_T
    } else {
        cuda_sys::cublas::cublasOperation_t::CUBLAS_OP_N
    };
    operation.0 as i32
}

type CublasAttr = cublasLtMatmulDescAttributes_t;

/// A matmul descriptor (`f32` scale; `f32` compute, or TF32 where the key allows), destroyed
/// on drop.
struct MatmulDesc(cublasLtMatmulDesc_t, &'static CublasLt);

impl MatmulDesc {
    fn new(lt: &'static CublasLt, compute_type: u32) -> Result<MatmulDesc> {
        let create = lt.cublasLtMatmulDescCreate()?;
        lt.cublasLtMatmulDescDestroy()?;
        let mut descriptor = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; compute and scale types are cuBLASLt's constants (a
        // 32F compute type, plain or TF32, with its f32 scale).
        let status = unsafe {
            create(
                &mut descriptor,
                cublasComputeType_t(compute_type),
                cudaDataType_t::CUDA_R_32F,
            )
        };
        check(CUBLASLT, "cublasLtMatmulDescCreate", status.0)?;
        Ok(MatmulDesc(descriptor, lt))
    }

    /// Sets one attribute to `value`, which must have the attribute's type.
    fn set<V: Copy>(&self, attribute: CublasAttr, value: &V) -> Result<()> {
        let set = self.1.cublasLtMatmulDescSetAttribute()?;
        // SAFETY: the descriptor is live; `value` is `size_of::<V>()` readable bytes, and every
        // caller passes the attribute's type (`int32_t`, `uint32_t` or a pointer).
        let status = unsafe { set(self.0, attribute, (value as *const V).cast(), size_of::<V>()) };
        check(CUBLASLT, "cublasLtMatmulDescSetAttribute", status.0)
    }
}

impl Drop for MatmulDesc {
    fn drop(&mut self) {
        if let Ok(destroy) = self.1.cublasLtMatmulDescDestroy() {
            // SAFETY: created by `MatmulDesc::new`, destroyed once.
            unsafe { destroy(self.0) };
        }
    }
}

/// A column-major matrix layout, destroyed on drop: a row-major `rows x cols` matrix of leading
/// dimension `ld` seen as the column-major `cols x rows` matrix it is.
struct Layout(cublasLtMatrixLayout_t, &'static CublasLt);

impl Layout {
    fn new(lt: &'static CublasLt, data_type: u32, matrix: &Matrix) -> Result<Layout> {
        let create = lt.cublasLtMatrixLayoutCreate()?;
        lt.cublasLtMatrixLayoutDestroy()?;
        let mut layout = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; the sizes were checked positive.
        let status = unsafe {
            create(
                &mut layout,
                cudaDataType_t(data_type),
                matrix.cols as u64,
                matrix.rows as u64,
                i64::from(matrix.ld),
            )
        };
        check(CUBLASLT, "cublasLtMatrixLayoutCreate", status.0)?;
        Ok(Layout(layout, lt))
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        if let Ok(destroy) = self.1.cublasLtMatrixLayoutDestroy() {
            // SAFETY: created by `Layout::new`, destroyed once.
            unsafe { destroy(self.0) };
        }
    }
}

impl Drop for Lt {
    fn drop(&mut self) {
        // The graphs hold the library's kernels: destroyed while the handle still lives.
        self.replays.clear();
        let Some(destroy) = cuda_sys::cublaslt().ok().and_then(|lt| lt.cublasLtDestroy().ok()) else {
            return;
        };
        if self.stream.context().set_current().is_err() {
            return;
        }
        let _lifecycle = handle_lifecycle();
        // SAFETY: the handle was created by `cublasLtCreate` and is destroyed once, here. Its
        // status cannot be returned from `drop`.
        let _ = unsafe { destroy(self.handle) };
    }
}

impl std::fmt::Debug for Lt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lt")
            .field("handle", &self.handle)
            .field("stream", &self.stream)
            .field("cached_algorithms", &self.plans.len())
            .field("allow_tf32", &self.allow_tf32)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_operand_plans_for_element_alignment_the_bias_included() {
        // f16 matrices of 64 elements (128 bytes, whole vectors) and a bias of 9 (18 bytes).
        let matrices = [(128, 64), (128, 64), (128, 64)];
        assert_eq!(plan_alignment(2, matrices), LT_ALIGNMENT);
        // A bias whose memory runs to the end of its last vector (32 bytes) keeps the fast plan.
        assert_eq!(plan_alignment(2, matrices.into_iter().chain([(32, 9)])), LT_ALIGNMENT);
        // An exactly sized bias ends inside a vector: element alignment, as for a short matrix.
        assert_eq!(plan_alignment(2, matrices.into_iter().chain([(18, 9)])), 2);
        assert_eq!(plan_alignment(4, [(128, 32), (100, 25)]), 4);
        // A span whose bytes overflow is not whole vectors.
        assert_eq!(plan_alignment(4, [(usize::MAX, usize::MAX)]), 4);
    }
}
