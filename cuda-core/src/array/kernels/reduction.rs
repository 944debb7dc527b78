//! [`ReductionKernel`]: CuPy-style reductions of whole arrays to one value (the axis form is in
//! `reduction_axis`).

use std::fmt::Write;

use cuda_driver::Stream;

use crate::array::dtype::DType;
use crate::array::kernels::args::{arrays_aligned, bind_signature, call_args, check_args, declared_type, Arg, ArgType};
use crate::array::kernels::launch::Launch;
use crate::array::kernels::params::{check_unique, is_identifier, parse_params, Bindings, Param, ParamType};
use crate::array::kernels::registry::{grid_for, LoadedTable};
use crate::array::memory::MemoryPool;
use crate::error::{Error, Result};

/// Threads per block of the first pass.
const BLOCK: u32 = 256;
/// Resident blocks per SM the first pass is sized to.
const BLOCKS_PER_SM: u32 = 8;
/// Threads of the single block of the second pass.
const FINAL_BLOCK: u32 = 1024;
/// Vector loads each thread has in flight per array in the first pass's main loop.
const UNROLL: usize = 4;

/// A reduction of every element of its input arrays to one value, like CuPy's
/// `ReductionKernel` without axes: `map_expr` turns an element (inputs as in
/// [`ElementwiseKernel`](crate::ElementwiseKernel), plus `i` and `n`) into a value of
/// `reduce_type`, `reduce_expr` combines two values `a` and `b`, `identity` is the neutral
/// value, and `post_map_expr` writes the result `a` to the output (a one-element array).
///
/// ```no_run
/// use cuda_core::{Arg, Device, DeviceArray, ReductionKernel};
///
/// # fn main() -> cuda_core::Result<()> {
/// let l2 = ReductionKernel::new("T x", "T y", "x * x", "a + b", "y = sqrt(a)", "0", "l2norm", None)?;
/// let stream = Device::new(0)?.create_stream()?;
/// let x = DeviceArray::from_slice(&stream, &[3.0f64, 4.0])?;
/// let mut y = DeviceArray::<f64>::empty(&stream, 1)?;
/// // SAFETY: the expressions only compute with the values they are given, and the post-map
/// // assigns the output element it is given.
/// unsafe { l2.launch(&stream, &[Arg::from(&x), Arg::from(&mut y)])? };
/// assert_eq!(y.to_vec()?, [5.0]);
/// # Ok(())
/// # }
/// ```
///
/// Building a reduction is safe; launching one is `unsafe`, because its expressions are
/// arbitrary device code: see [`launch`](Self::launch)'s `# Safety`. The crate's own reductions
/// ([`DeviceArray::sum`](crate::DeviceArray::sum) and the rest) are safe.
///
/// Two passes: a grid-stride pass sized to the device's SMs (16-byte vector loads when aligned,
/// warp shuffles, one partial per block into pooled memory), then one block reduces the partials
/// and applies `post_map_expr`. The order of combination is not specified, so floating-point
/// results may differ from a sequential sum in the last bits.
pub struct ReductionKernel {
    name: String,
    inputs: Vec<Param>,
    output: Param,
    map_expr: String,
    reduce_expr: String,
    post_map_expr: String,
    identity: String,
    reduce_type: ReduceType,
    prelude: String,
    pub(super) loaded: LoadedTable,
}

/// The type values are reduced in.
enum ReduceType {
    /// A declared element type or a placeholder.
    Param(ParamType),
    /// A C++ type the prelude declares, with its size in bytes (the crate's own reductions).
    Struct { c_type: String, size: usize },
}

/// The reduce type of one call: its C++ text and size in bytes.
pub(super) struct BoundReduce {
    pub(super) c_type: String,
    pub(super) size: usize,
}

impl ReductionKernel {
    /// A reduction: input parameters (`"T x"`), one output parameter (`"T y"`), the map, reduce
    /// and post-map expressions, the identity, a name (a C identifier), and the type values are
    /// reduced in (`None`: the output's type).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        in_params: &str,
        out_params: &str,
        map_expr: &str,
        reduce_expr: &str,
        post_map_expr: &str,
        identity: &str,
        name: &str,
        reduce_type: Option<&str>,
    ) -> Result<Self> {
        let inputs = parse_params(in_params, "input")?;
        let mut outputs = parse_params(out_params, "output")?;
        check_unique(&[&inputs, &outputs])?;
        if outputs.len() != 1 {
            return Err(Error::InvalidValue(format!(
                "reduction `{name}` needs exactly one output, {} declared",
                outputs.len()
            )));
        }
        if !inputs.iter().any(|p| p.name == "a" || p.name == "b") && is_identifier(name) {
            let output = outputs.remove(0);
            if output.name == "a" || output.name == "b" {
                return Err(Error::InvalidValue(format!(
                    "reduction `{name}`: `a` and `b` name the values being combined, not parameters"
                )));
            }
            let reduce_type = match reduce_type {
                None => output.ty.clone(),
                Some(text) => match DType::from_c_name(text) {
                    Some(dtype) => ParamType::Concrete(dtype),
                    None if is_identifier(text.trim()) => ParamType::Placeholder(text.trim().to_string()),
                    None => return Err(Error::InvalidValue(format!("reduce type `{text}` is not a known type"))),
                },
            };
            return Ok(ReductionKernel {
                name: name.to_string(),
                inputs,
                output,
                map_expr: map_expr.to_string(),
                reduce_expr: reduce_expr.to_string(),
                post_map_expr: post_map_expr.to_string(),
                identity: identity.to_string(),
                reduce_type: ReduceType::Param(reduce_type),
                prelude: String::new(),
                loaded: LoadedTable::default(),
            });
        }
        Err(Error::InvalidValue(format!(
            "reduction `{name}`: the name must be a C identifier and no input may be called `a` or `b`"
        )))
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// This reduction with device code (helper functions, types, constants) that its
    /// expressions may use, placed before them in the generated source.
    pub fn with_prelude(mut self, prelude: &str) -> Self {
        self.prelude = prelude.to_string();
        self
    }

    /// This reduction reducing in `c_type`, a C++ type of `size` bytes that the prelude declares.
    pub(crate) fn with_struct_reduce_type(mut self, c_type: &str, size: usize) -> Self {
        self.reduce_type = ReduceType::Struct {
            c_type: c_type.to_string(),
            size,
        };
        self
    }

    /// Input parameters.
    pub(super) fn inputs(&self) -> &[Param] {
        &self.inputs
    }

    /// The output parameter.
    pub(super) fn output_param(&self) -> &Param {
        &self.output
    }

    pub(super) fn bind(&self, signature: &[ArgType]) -> Result<(Bindings, BoundReduce)> {
        let bindings = bind_signature(&self.name, &self.inputs, std::slice::from_ref(&self.output), signature)?;
        let reduce = match &self.reduce_type {
            ReduceType::Param(param) => bindings
                .resolve(param)
                .map(|d| BoundReduce {
                    c_type: d.c_name().to_string(),
                    size: d.size(),
                })
                .ok_or_else(|| {
                    Error::InvalidValue(format!(
                        "reduction `{}`: the reduce type is a placeholder no argument binds",
                        self.name
                    ))
                })?,
            ReduceType::Struct { c_type, size } => BoundReduce {
                c_type: c_type.clone(),
                size: *size,
            },
        };
        Ok((bindings, reduce))
    }

    /// The device functions every form of this reduction shares: the types, the prelude, and
    /// `_{name}_identity`, `_reduce`, `_map`, `_post`, `_warp` (a warp's reduction, lane 0
    /// holding it) and `_block` (a one-dimensional block's, thread 0 holding it).
    pub(super) fn device_functions(&self, signature: &[ArgType]) -> Result<String> {
        let (bindings, reduce) = self.bind(signature)?;
        let name = &self.name;
        let inputs: Vec<(&Param, ArgType)> = self.inputs.iter().zip(signature.iter().copied()).collect();
        let mut s = String::new();
        let _ = writeln!(s, "// generated by cuda-core: ReductionKernel `{name}`");
        s.push_str(crate::array::kernels::PRELUDE);
        s.push_str(&bindings.typedefs());
        s.push_str(&self.prelude);
        s.push('\n');
        let _ = writeln!(s, "typedef {} _type_reduce;", reduce.c_type);
        s.push_str("template <typename _E, int _V> struct alignas(sizeof(_E) * _V) _Pack { _E v[_V]; };\n");
        let map_params: Vec<String> = inputs
            .iter()
            .map(|(p, a)| match a.is_array() {
                true => format!("const {} &{}", declared_type(p), p.name),
                false => format!("const {} {}", declared_type(p), p.name),
            })
            .collect();
        let _ = writeln!(
            s,
            "__device__ __forceinline__ _type_reduce _{name}_identity() {{ return _type_reduce({}); }}\n\
             __device__ __forceinline__ _type_reduce _{name}_reduce(const _type_reduce a, const _type_reduce b) {{ return ({}); }}\n\
             __device__ __forceinline__ _type_reduce _{name}_map({}, const unsigned long long i, const unsigned long long n) {{ return _type_reduce({}); }}",
            self.identity,
            self.reduce_expr,
            map_params.join(", "),
            self.map_expr
        );
        let mut post_params = vec![
            "const _type_reduce a".to_string(),
            format!("{} &{}", declared_type(&self.output), self.output.name),
        ];
        post_params.extend(self.scalar_decls(signature));
        post_params.push("const unsigned long long n".to_string());
        let _ = writeln!(
            s,
            "__device__ __forceinline__ void _{name}_post({}) {{\n{};\n}}",
            post_params.join(", "),
            self.post_map_expr
        );
        // Warp shuffle of any value, 32 bits at a time; a warp's reduction; then a block's.
        let _ = write!(
            s,
            "__device__ __forceinline__ _type_reduce _{name}_shfl_down(const _type_reduce v, const int d) {{\n\
             \x20   unsigned _u[(sizeof(_type_reduce) + 3) / 4] = {{}};\n\
             \x20   memcpy(_u, &v, sizeof(v));\n\
             \x20   #pragma unroll\n\
             \x20   for (int _w = 0; _w < (int)((sizeof(_type_reduce) + 3) / 4); ++_w) _u[_w] = __shfl_down_sync(0xffffffffu, _u[_w], d);\n\
             \x20   _type_reduce r;\n\
             \x20   memcpy(&r, _u, sizeof(r));\n\
             \x20   return r;\n\
             }}\n\
             __device__ __forceinline__ _type_reduce _{name}_warp(_type_reduce acc) {{\n\
             \x20   #pragma unroll\n\
             \x20   for (int d = 16; d > 0; d >>= 1) acc = _{name}_reduce(acc, _{name}_shfl_down(acc, d));\n\
             \x20   return acc;\n\
             }}\n\
             __device__ __forceinline__ _type_reduce _{name}_block(_type_reduce acc) {{\n\
             \x20   __shared__ _type_reduce _warps[32];\n\
             \x20   acc = _{name}_warp(acc);\n\
             \x20   const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;\n\
             \x20   if (lane == 0) _warps[warp] = acc;\n\
             \x20   __syncthreads();\n\
             \x20   if (warp == 0) {{\n\
             \x20       acc = lane < (blockDim.x + 31u) / 32u ? _warps[lane] : _{name}_identity();\n\
             \x20       acc = _{name}_warp(acc);\n\
             \x20   }}\n\
             \x20   return acc;\n\
             }}\n"
        );
        Ok(s)
    }

    /// The scalar inputs as const parameter declarations.
    pub(super) fn scalar_decls(&self, signature: &[ArgType]) -> Vec<String> {
        self.scalars(signature)
            .map(|p| format!("const {} {}", declared_type(p), p.name))
            .collect()
    }

    /// The scalar input parameters.
    pub(crate) fn scalars<'s>(&'s self, signature: &'s [ArgType]) -> impl Iterator<Item = &'s Param> + 's {
        self.inputs
            .iter()
            .zip(signature.iter())
            .filter(|(_, a)| !a.is_array())
            .map(|(p, _)| p)
    }

    /// The CUDA C++ generated for arguments of `signature` (inputs then the output).
    pub fn source_for(&self, signature: &[ArgType]) -> Result<String> {
        let mut s = self.device_functions(signature)?;
        let name = &self.name;
        let inputs: Vec<(&Param, ArgType)> = self.inputs.iter().zip(signature.iter().copied()).collect();
        let width = vector_width(&inputs);
        // First pass.
        let kernel_params: Vec<String> = inputs
            .iter()
            .map(|(p, a)| match a.is_array() {
                true => format!("const {} *__restrict__ _p_{}", declared_type(p), p.name),
                false => format!("const {} {}", declared_type(p), p.name),
            })
            .collect();
        let first_params = format!(
            "{}, {} *__restrict__ _p_{}, _type_reduce *__restrict__ _partials, const unsigned long long n",
            kernel_params.join(", "),
            declared_type(&self.output),
            self.output.name
        );
        let element =
            |index: &str| -> String { call_args(inputs.iter().copied(), |p| format!("_p_{}[{index}]", p.name)) };
        let _ = write!(
            s,
            "extern \"C\" __global__ void {name}_partial({first_params}) {{\n\
             \x20   _type_reduce _acc = _{name}_identity();\n\
             \x20   const unsigned long long _stride = (unsigned long long)gridDim.x * blockDim.x;\n\
             \x20   for (unsigned long long _e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; _e < n; _e += _stride)\n\
             \x20       _acc = _{name}_reduce(_acc, _{name}_map({}, _e, n));\n\
             \x20   _acc = _{name}_block(_acc);\n\
             \x20   if (threadIdx.x == 0) _partials[blockIdx.x] = _acc;\n\
             }}\n",
            element("_e")
        );
        if width > 1 {
            let arrays: Vec<&Param> = inputs.iter().filter(|(_, a)| a.is_array()).map(|(p, _)| *p).collect();
            let pack = |p: &Param| format!("_Pack<{}, {width}>", declared_type(p));
            let mut loads = String::new();
            for p in &arrays {
                let _ = writeln!(loads, "        {} _{}[{UNROLL}];", pack(p), p.name);
                let _ = writeln!(
                    loads,
                    "        #pragma unroll\n        for (int _u = 0; _u < {UNROLL}; ++_u) _{}[_u] = reinterpret_cast<const {} *>(_p_{})[_k + _u * _stride];",
                    p.name,
                    pack(p),
                    p.name
                );
            }
            let packed =
                |u: &str| -> String { call_args(inputs.iter().copied(), |p| format!("_{}[{u}].v[_j]", p.name)) };
            let single: Vec<String> = arrays
                .iter()
                .map(|p| {
                    format!(
                        "        {} _{}[1] = {{reinterpret_cast<const {} *>(_p_{})[_k]}};",
                        pack(p),
                        p.name,
                        pack(p),
                        p.name
                    )
                })
                .collect();
            let _ = write!(
                s,
                "extern \"C\" __global__ void {name}_partial_vec({first_params}) {{\n\
                 \x20   _type_reduce _acc = _{name}_identity();\n\
                 \x20   const unsigned long long _packs = n / {width};\n\
                 \x20   const unsigned long long _stride = (unsigned long long)gridDim.x * blockDim.x;\n\
                 \x20   const unsigned long long _tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n\
                 \x20   unsigned long long _k = _tid;\n\
                 \x20   for (; _k + {last} * _stride < _packs; _k += {UNROLL} * _stride) {{\n\
                 {loads}\
                 \x20       #pragma unroll\n\
                 \x20       for (int _u = 0; _u < {UNROLL}; ++_u)\n\
                 \x20           #pragma unroll\n\
                 \x20           for (int _j = 0; _j < {width}; ++_j)\n\
                 \x20               _acc = _{name}_reduce(_acc, _{name}_map({}, (_k + _u * _stride) * {width} + _j, n));\n\
                 \x20   }}\n\
                 \x20   for (; _k < _packs; _k += _stride) {{\n\
                 {}\n\
                 \x20       #pragma unroll\n\
                 \x20       for (int _j = 0; _j < {width}; ++_j) _acc = _{name}_reduce(_acc, _{name}_map({}, _k * {width} + _j, n));\n\
                 \x20   }}\n\
                 \x20   const unsigned long long _t = _packs * {width} + _tid;\n\
                 \x20   if (_t < n) _acc = _{name}_reduce(_acc, _{name}_map({}, _t, n));\n\
                 \x20   _acc = _{name}_block(_acc);\n\
                 \x20   if (threadIdx.x == 0) _partials[blockIdx.x] = _acc;\n\
                 }}\n",
                packed("_u"),
                single.join("\n"),
                packed("0"),
                element("_t"),
                last = UNROLL - 1,
            );
        }
        // Second pass.
        let mut final_params = vec![
            "const _type_reduce *__restrict__ _partials".to_string(),
            "const unsigned long long _count".to_string(),
            format!("{} *__restrict__ _p_{}", declared_type(&self.output), self.output.name),
        ];
        final_params.extend(self.scalar_decls(signature));
        final_params.push("const unsigned long long n".to_string());
        let mut post_args = vec!["_acc".to_string(), format!("_p_{}[0]", self.output.name)];
        post_args.extend(self.scalars(signature).map(|p| p.name.clone()));
        post_args.push("n".to_string());
        let _ = write!(
            s,
            "extern \"C\" __global__ void {name}_final({}) {{\n\
             \x20   _type_reduce _acc = _{name}_identity();\n\
             \x20   for (unsigned long long _e = threadIdx.x; _e < _count; _e += blockDim.x) _acc = _{name}_reduce(_acc, _partials[_e]);\n\
             \x20   _acc = _{name}_block(_acc);\n\
             \x20   if (threadIdx.x == 0) _{name}_post({});\n\
             }}\n",
            final_params.join(", "),
            post_args.join(", ")
        );
        Ok(s)
    }

    /// Reduces every element of the inputs into the output (a one-element array) on `stream`.
    /// `args` are the inputs then the output, as for
    /// [`ElementwiseKernel::launch`](crate::ElementwiseKernel::launch); input arrays must share
    /// one shape.
    ///
    /// # Safety
    ///
    /// The expressions (and the prelude they call) are device code that the crate cannot check,
    /// so the caller promises that:
    /// - `map_expr` reads only what it is given (its inputs' elements at `i`, the scalars, `i`
    ///   and `n`), `reduce_expr` only `a` and `b`, `identity` nothing, and `post_map_expr` only
    ///   `a`, the scalars and `n`, writing only through the output's element reference it is given;
    ///   none of them forms another address from a reference (no pointer arithmetic, no
    ///   indexing into neighbouring elements) or dereferences an address passed in as a scalar;
    /// - they cause no data race (evaluations run in parallel, in no specified order; any
    ///   device variables the prelude declares are used without races);
    /// - they have no other undefined behaviour of CUDA C++ that reaches memory (out-of-bounds
    ///   accesses to their own local arrays, reading uninitialised values, ...).
    ///
    /// The crate checks the rest: argument count, types, shapes and contexts, and that the
    /// generated passes read only the inputs' elements and write only the output's.
    pub unsafe fn launch(&self, stream: &Stream, args: &[Arg<'_>]) -> Result<()> {
        let signature: Vec<ArgType> = args.iter().map(Arg::arg_type).collect();
        let (_, reduce) = self.bind(&signature)?;
        let n = check_args(&self.name, stream, args, self.inputs.len(), true)?.len;
        if args[self.inputs.len()].array_len() == Some(0) {
            return Err(Error::InvalidValue(format!(
                "reduction `{}`: the output has no elements",
                self.name
            )));
        }
        let inputs: Vec<(&Param, ArgType)> = self.inputs.iter().zip(signature.iter().copied()).collect();
        let width = vector_width(&inputs);
        let loaded = self.loaded.get_or_load(stream.context(), &signature, 0, || {
            let mut names = vec![format!("{}_partial", self.name), format!("{}_final", self.name)];
            if width > 1 {
                names.push(format!("{}_partial_vec", self.name));
            }
            Ok((self.source_for(&signature)?, names))
        })?;
        let (first, units) = match aligned_width(&inputs, &args[..self.inputs.len()]) > 1 {
            true => (&loaded.functions[2], (n / width) as u64),
            false => (&loaded.functions[0], n as u64),
        };
        let grid = grid_for(units, BLOCK, loaded.sm_count, BLOCKS_PER_SM);
        let partials = MemoryPool::for_context(stream.context()).alloc(stream, grid as usize * reduce.size)?;
        let inputs = &args[..self.inputs.len()];
        let output = &args[self.inputs.len()];
        let mut launch = Launch::on(stream);
        launch.args(inputs)?.arg(output)?.value(partials.ptr()).value(n as u64);
        // SAFETY: the first pass takes the inputs (device addresses and scalars of the bound
        // types), the output's address (unused there), the partials' address and `n`, in this
        // order; inputs hold `n` elements (shapes checked) and it reads below `n` only; it writes
        // one partial per block into `grid` values of the reduce type. Arrays and partials are
        // ordered on `stream`.
        unsafe { launch.run(first, (grid, 1), (BLOCK, 1))? };
        let mut last = Launch::on(stream);
        last.value(partials.ptr()).value(u64::from(grid)).arg(output)?;
        for scalar in inputs.iter().filter(|a| a.array().is_none()) {
            last.arg(scalar)?;
        }
        last.value(n as u64);
        // SAFETY: the second pass takes the partials' address and count, the output's address,
        // the scalars and `n`, in this order; it reads `count` partials written by the first pass on the
        // same stream and writes element 0 of the output, which holds at least one (checked).
        unsafe { last.run(&loaded.functions[1], (1, 1), (FINAL_BLOCK, 1))? };
        // The partials go back to the pool in `stream`'s order, after both passes.
        drop(partials);
        Ok(())
    }
}

impl ReductionKernel {
    /// [`launch`](Self::launch) (whole arrays) or [`launch_axes`](Self::launch_axes) (`Some`
    /// axes) for the crate's own reductions (`sum`, `max`, `argmin`, ...), whose expressions
    /// the crate wrote, which is why it is safe.
    pub(crate) fn launch_generated(&self, stream: &Stream, args: &[Arg<'_>], axes: Option<&[usize]>) -> Result<()> {
        // SAFETY: callers are the crate's own reductions, whose map expressions read only the
        // input element (and the index for arg-reductions), whose reduce expressions combine
        // `a` and `b`, and whose post-maps assign the output element they are given: no
        // addresses formed, no shared state, so the contract of `launch`/`launch_axes` holds.
        unsafe {
            match axes {
                None => self.launch(stream, args),
                Some(axes) => self.launch_axes(stream, args, axes),
            }
        }
    }
}

/// Bytes of the widest input array type, if there is an input array.
fn widest_array(inputs: &[(&Param, ArgType)]) -> Option<usize> {
    inputs
        .iter()
        .filter(|(_, a)| a.is_array())
        .map(|(_, a)| a.dtype().size())
        .max()
}

/// Elements per vector load: 16 bytes of the widest input array type (1: no vector pass).
pub(crate) fn vector_width(inputs: &[(&Param, ArgType)]) -> usize {
    match widest_array(inputs) {
        Some(widest) => (16 / widest).max(1),
        None => 1,
    }
}

/// The vector width a launch reads its input arrays (`args`) with: [`vector_width`] when every
/// one is aligned to its packs, else 1.
pub(crate) fn aligned_width(inputs: &[(&Param, ArgType)], args: &[Arg<'_>]) -> usize {
    let width = vector_width(inputs);
    let widest = widest_array(inputs).unwrap_or(1);
    match width > 1 && arrays_aligned(args, width * widest) {
        true => width,
        false => 1,
    }
}

impl std::fmt::Debug for ReductionKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReductionKernel").field("name", &self.name).finish()
    }
}
