//! [`ElementwiseKernel`]: CuPy-style kernels generated from a per-element operation.

use std::fmt::Write;

use cuda_driver::Stream;

use crate::array::kernels::args::{
    arrays_aligned, bind_signature, broadcasts_to, call_args, check_args, check_signature, declared_type,
    strided_layout, Arg, ArgType, IndexWidth,
};
use crate::array::kernels::inline::Inline;
use crate::array::kernels::launch::Launch;
use crate::array::kernels::params::{check_unique, is_identifier, parse_params, Param};
use crate::array::kernels::registry::{grid_for, LoadedTable};
use crate::array::kernels::PRELUDE;
use crate::error::{Error, Result};

/// Threads per block of generated element-wise kernels.
const BLOCK: u32 = 256;
/// Resident blocks per SM the grid is sized to (2048 threads per SM on sm_80/sm_90).
const BLOCKS_PER_SM: u32 = 8;

/// A kernel generated from one operation applied to every element, like CuPy's
/// `ElementwiseKernel`: parameters use type placeholders (`T`) that the call's arguments bind,
/// and CUDA C++ for those concrete types is generated, compiled with NVRTC (through the
/// [kernel cache](crate::KernelCache)) and loaded on first use per signature and context.
///
/// ```no_run
/// use cuda_core::{Arg, Device, DeviceArray, ElementwiseKernel};
///
/// # fn main() -> cuda_core::Result<()> {
/// let axpy = ElementwiseKernel::new("T a, T x, T y", "T z", "z = a * x + y", "axpy")?;
/// let stream = Device::new(0)?.create_stream()?;
/// let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0, 3.0])?;
/// let y = DeviceArray::from_slice(&stream, &[10.0f32, 20.0, 30.0])?;
/// let mut z = DeviceArray::<f32>::empty(&stream, 3)?;
/// // SAFETY: the operation reads its inputs' elements and assigns its output's element only.
/// unsafe { axpy.launch(&stream, &[Arg::scalar(2.0f32), Arg::from(&x), Arg::from(&y), Arg::from(&mut z)])? };
/// assert_eq!(z.to_vec()?, [12.0, 24.0, 36.0]);
/// # Ok(())
/// # }
/// ```
///
/// Building a kernel is safe (a bad operation is a compile error, with NVRTC's log); launching
/// one is `unsafe`, because the operation is arbitrary device code: see
/// [`launch`](Self::launch)'s `# Safety`. Array expressions ([`Expr`](crate::Expr)), whose
/// code the crate writes, are safe to evaluate.
///
/// In the operation, each input is the current element (arrays) or the value (scalars), each
/// output a reference to its element, `i` the element's index and `n` the element count;
/// placeholders are `typedef`s. Arrays broadcast by NumPy's rule (a `(5, 5)` with a `(5,)` and a
/// `(5, 1)`); outputs have the broadcast shape. When every array is a C-contiguous run of that
/// shape, generated kernels use a grid-stride loop sized to the device's SMs, with 16-byte
/// vector loads and stores when every array is aligned to them, and an output the operation
/// only assigns (`z = ...` as its single statement, `z` not read) is not loaded first. Otherwise
/// (views, broadcasting) a strided kernel specialised on the number of (merged) axes computes
/// each array's offset, in 32-bit arithmetic when every index fits.
pub struct ElementwiseKernel {
    name: String,
    inputs: Vec<Param>,
    outputs: Vec<Param>,
    operation: String,
    /// Device code the operation may call, placed before it.
    prelude: String,
    loaded: LoadedTable,
}

impl ElementwiseKernel {
    /// A kernel from parameter lists (`"T x, float a"`), the operation and a name (a C
    /// identifier). Bad parameter lists and names are [`Error::InvalidValue`]; errors in the
    /// operation show when it is compiled, with NVRTC's log.
    pub fn new(in_params: &str, out_params: &str, operation: &str, name: &str) -> Result<Self> {
        Self::with_prelude(in_params, out_params, operation, name, "")
    }

    /// Like [`new`](Self::new), with device code (helper functions, constants) that the
    /// operation may use placed before it in the generated source.
    pub fn with_prelude(in_params: &str, out_params: &str, operation: &str, name: &str, prelude: &str) -> Result<Self> {
        let inputs = parse_params(in_params, "input")?;
        let outputs = parse_params(out_params, "output")?;
        check_unique(&[&inputs, &outputs])?;
        if outputs.is_empty() {
            return Err(Error::InvalidValue(format!(
                "elementwise kernel `{name}` needs at least one output"
            )));
        }
        if !is_identifier(name) {
            return Err(Error::InvalidValue(format!(
                "kernel name `{name}` is not a C identifier"
            )));
        }
        Ok(ElementwiseKernel {
            name: name.to_string(),
            inputs,
            outputs,
            operation: operation.to_string(),
            prelude: prelude.to_string(),
            loaded: LoadedTable::default(),
        })
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Each parameter (inputs, then outputs) with its argument type and whether it is an output.
    fn params(&self, signature: &[ArgType]) -> Vec<(&Param, ArgType, bool)> {
        self.inputs
            .iter()
            .map(|p| (p, false))
            .chain(self.outputs.iter().map(|p| (p, true)))
            .zip(signature)
            .map(|((p, out), &arg)| (p, arg, out))
            .collect()
    }

    /// The operation as a device function `_{name}_op` on references to the elements (values
    /// for scalars), the element index `i` and the count `n`.
    fn op_function(&self, params: &[(&Param, ArgType, bool)]) -> String {
        let op_params: Vec<String> = params
            .iter()
            .map(|(p, arg, out)| match (arg.is_array(), out) {
                (_, true) => format!("{} &{}", declared_type(p), p.name),
                (true, false) => format!("const {} &{}", declared_type(p), p.name),
                (false, false) => format!("const {} {}", declared_type(p), p.name),
            })
            .collect();
        format!(
            "__device__ __forceinline__ void _{}_op({}, const unsigned long long i, const unsigned long long n) {{\n{};\n}}\n",
            self.name,
            op_params.join(", "),
            self.operation
        )
    }

    /// The CUDA C++ generated for arguments of `signature` (inputs then outputs).
    pub fn source_for(&self, signature: &[ArgType]) -> Result<String> {
        let bindings = bind_signature(&self.name, &self.inputs, &self.outputs, signature)?;
        let width = self.vector_width(signature);
        let mut source = String::new();
        let name = &self.name;
        let params = self.params(signature);
        let _ = writeln!(source, "// generated by cuda-core: ElementwiseKernel `{name}`");
        source.push_str(PRELUDE);
        source.push_str(&bindings.typedefs());
        source.push_str(&self.prelude);
        source.push_str("template <typename _E, int _V> struct alignas(sizeof(_E) * _V) _Pack { _E v[_V]; };\n");
        // The operation, on references to the elements.
        source.push_str(&self.op_function(&params));
        let kernel_params: Vec<String> = params
            .iter()
            .map(|(p, arg, out)| match (arg.is_array(), out) {
                (true, false) => format!("const {} *__restrict__ _p_{}", declared_type(p), p.name),
                (true, true) => format!("{} *__restrict__ _p_{}", declared_type(p), p.name),
                (false, _) => format!("const {} {}", declared_type(p), p.name),
            })
            .collect();
        let kernel_params = format!("{}, const unsigned long long n", kernel_params.join(", "));
        let element_args = |index: &str| -> String {
            call_args(params.iter().map(|&(p, arg, _)| (p, arg)), |p| {
                format!("_p_{}[{index}]", p.name)
            })
        };
        let _ = write!(
            source,
            "extern \"C\" __global__ void {name}({kernel_params}) {{\n\
             \x20   const unsigned long long _stride = (unsigned long long)gridDim.x * blockDim.x;\n\
             \x20   for (unsigned long long _e = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; _e < n; _e += _stride) {{\n\
             \x20       _{name}_op({}, _e, n);\n\
             \x20   }}\n}}\n",
            element_args("_e")
        );
        if width > 1 {
            source.push_str(&self.vector_kernel(&params, &kernel_params, width, &element_args("_t")));
        }
        Ok(source)
    }

    /// The CUDA C++ of the strided kernel `{name}_strided` for arguments of `signature` over
    /// `ndim` axes, indexing as `width` says. Its parameters are those of the contiguous kernel
    /// followed by one struct, by value: the `ndim` extents, then each array argument's `ndim`
    /// strides in elements (all 64-bit; a negative stride as its two's complement).
    pub fn strided_source_for(&self, signature: &[ArgType], ndim: usize, width: IndexWidth) -> Result<String> {
        let bindings = bind_signature(&self.name, &self.inputs, &self.outputs, signature)?;
        let name = &self.name;
        let params = self.params(signature);
        let arrays = params.iter().filter(|(_, arg, _)| arg.is_array()).count();
        let mut source = String::new();
        let _ = writeln!(
            source,
            "// generated by cuda-core: ElementwiseKernel `{name}`, strided over {ndim} axes"
        );
        source.push_str(PRELUDE);
        source.push_str(&bindings.typedefs());
        source.push_str(&self.prelude);
        let _ = writeln!(
            source,
            "struct _Layout {{ unsigned long long extent[{ndim}]; unsigned long long stride[{arrays}][{ndim}]; }};"
        );
        source.push_str(&width.typedefs("_I", "_S"));
        source.push_str(&self.op_function(&params));
        let kernel_params: Vec<String> = params
            .iter()
            .map(|(p, arg, out)| match (arg.is_array(), out) {
                (true, false) => format!("const {} *_p_{}", declared_type(p), p.name),
                (true, true) => format!("{} *_p_{}", declared_type(p), p.name),
                (false, _) => format!("const {} {}", declared_type(p), p.name),
            })
            .collect();
        let mut offsets = String::new();
        let mut position = 0;
        let mut numbered = Vec::new();
        for (p, arg, _) in &params {
            if arg.is_array() {
                let _ = writeln!(offsets, "        _I _o{position} = 0;");
                numbered.push((p.name.clone(), position));
                position += 1;
            }
        }
        let mut steps = String::new();
        for k in 0..arrays {
            let _ = write!(steps, " _o{k} += _c * (_I)_l.stride[{k}][_d];");
        }
        let element_args = call_args(params.iter().map(|&(p, arg, _)| (p, arg)), |p| {
            let k = numbered
                .iter()
                .find(|(n, _)| *n == p.name)
                .map(|(_, k)| *k)
                .unwrap_or(0);
            format!("_p_{}[(_S)_o{k}]", p.name)
        });
        let _ = write!(
            source,
            "extern \"C\" __global__ void {name}_strided({}, const unsigned long long n, const _Layout _l) {{\n\
             \x20   const _I _stride = (_I)gridDim.x * blockDim.x;\n\
             \x20   for (_I _e = (_I)blockIdx.x * blockDim.x + threadIdx.x; _e < (_I)n; _e += _stride) {{\n\
             {offsets}\
             \x20       _I _r = _e;\n\
             \x20       #pragma unroll\n\
             \x20       for (int _d = {last}; _d >= 0; --_d) {{\n\
             \x20           const _I _x = (_I)_l.extent[_d];\n\
             \x20           const _I _c = _d == 0 ? _r : _r % _x;\n\
             \x20           _r = _d == 0 ? 0 : _r / _x;\n\
             \x20          {steps}\n\
             \x20       }}\n\
             \x20       _{name}_op({element_args}, _e, n);\n\
             \x20   }}\n}}\n",
            kernel_params.join(", "),
            last = ndim - 1,
        );
        Ok(source)
    }

    /// Elements per vector access: 16 bytes of the widest array element type.
    fn vector_width(&self, signature: &[ArgType]) -> usize {
        let widest = signature
            .iter()
            .filter(|a| a.is_array())
            .map(|a| a.dtype().size())
            .max()
            .unwrap_or(16);
        (16 / widest).max(1)
    }

    fn vector_kernel(
        &self,
        params: &[(&Param, ArgType, bool)],
        kernel_params: &str,
        width: usize,
        tail_args: &str,
    ) -> String {
        let name = &self.name;
        let pack = |p: &Param| format!("_Pack<{}, {width}>", declared_type(p));
        let mut body = String::new();
        // Loads (of inputs, and of outputs the operation reads) and declarations.
        let load = |body: &mut String, unroll: usize| {
            for (p, arg, out) in params.iter().filter(|(_, arg, _)| arg.is_array()) {
                let _ = arg;
                for u in 0..unroll {
                    let index = if u == 0 {
                        "_k".to_string()
                    } else {
                        "_k + _stride".to_string()
                    };
                    if *out && write_only(&self.operation, &p.name) {
                        let _ = writeln!(body, "        {} _{}{u};", pack(p), p.name);
                    } else {
                        let _ = writeln!(
                            body,
                            "        {} _{}{u} = reinterpret_cast<const {} *>(_p_{})[{index}];",
                            pack(p),
                            p.name,
                            pack(p),
                            p.name
                        );
                    }
                }
            }
        };
        let apply = |body: &mut String, unroll: usize| {
            let _ = writeln!(
                body,
                "        #pragma unroll\n        for (int _j = 0; _j < {width}; ++_j) {{"
            );
            for u in 0..unroll {
                let args = call_args(params.iter().map(|&(p, arg, _)| (p, arg)), |p| {
                    format!("_{}{u}.v[_j]", p.name)
                });
                let index = if u == 0 { "_k" } else { "(_k + _stride)" };
                let _ = writeln!(body, "            _{name}_op({args}, {index} * {width} + _j, n);");
            }
            body.push_str("        }\n");
            for (p, _, _) in params.iter().filter(|(_, arg, out)| arg.is_array() && *out) {
                for u in 0..unroll {
                    let index = if u == 0 { "_k" } else { "_k + _stride" };
                    let _ = writeln!(
                        body,
                        "        reinterpret_cast<{} *>(_p_{})[{index}] = _{}{u};",
                        pack(p),
                        p.name,
                        p.name
                    );
                }
            }
        };
        body.push_str("    for (; _k + _stride < _packs; _k += 2 * _stride) {\n");
        load(&mut body, 2);
        apply(&mut body, 2);
        body.push_str("    }\n    if (_k < _packs) {\n");
        load(&mut body, 1);
        apply(&mut body, 1);
        body.push_str("    }\n");
        format!(
            "extern \"C\" __global__ void {name}_vec({kernel_params}) {{\n\
             \x20   const unsigned long long _packs = n / {width};\n\
             \x20   const unsigned long long _stride = (unsigned long long)gridDim.x * blockDim.x;\n\
             \x20   const unsigned long long _tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;\n\
             \x20   unsigned long long _k = _tid;\n\
             {body}\
             \x20   const unsigned long long _t = _packs * {width} + _tid;\n\
             \x20   if (_t < n) _{name}_op({tail_args}, _t, n);\n}}\n"
        )
    }

    /// Runs the kernel on `stream` over every element. `args` are the inputs then the outputs,
    /// in declaration order: `Arg::from(&array)` for an input array, `Arg::scalar(v)` for a
    /// scalar, `Arg::from(&mut array)` for an output. Wrong count, types, shapes or contexts are
    /// errors, before anything is launched.
    ///
    /// # Safety
    ///
    /// The operation (and the prelude it calls) is device code that the crate cannot check, so
    /// the caller promises that for each element index `i` below `n` it:
    /// - reads only what it is given (its inputs' elements, its outputs' elements, the scalars,
    ///   `i` and `n`) and writes only through its outputs' references: it forms no other address
    ///   from them (no pointer arithmetic on `&x`, no indexing into neighbouring elements) and
    ///   dereferences no address passed in as a scalar;
    /// - causes no data race: invocations run in parallel, in no specified order, so each one
    ///   touches only its own elements (and any device variables the prelude declares only
    ///   without races);
    /// - has no other undefined behaviour of CUDA C++ that reaches memory (out-of-bounds
    ///   accesses to its own local arrays, reading uninitialised values, ...).
    ///
    /// The crate checks the rest: argument count, types, shapes, contexts, and that every
    /// element the generated loop passes to the operation lies inside its array.
    ///
    /// Calling it outside `unsafe` does not compile:
    ///
    /// ```compile_fail,E0133
    /// use cuda_core::{Arg, Device, DeviceArray, ElementwiseKernel};
    ///
    /// # fn main() -> cuda_core::Result<()> {
    /// let double = ElementwiseKernel::new("T x", "T y", "y = 2 * x", "double")?;
    /// let stream = Device::new(0)?.create_stream()?;
    /// let x = DeviceArray::from_slice(&stream, &[1.0f32, 2.0])?;
    /// let mut y = DeviceArray::<f32>::empty(&stream, 2)?;
    /// // error[E0133]: call to unsafe function requires unsafe block
    /// double.launch(&stream, &[Arg::from(&x), Arg::from(&mut y)])?;
    /// # Ok(())
    /// # }
    /// ```
    pub unsafe fn launch(&self, stream: &Stream, args: &[Arg<'_>]) -> Result<()> {
        let mut signature: Inline<ArgType, 8> = Inline::new();
        signature.extend(args.iter().map(Arg::arg_type));
        check_signature(&self.name, &self.inputs, &self.outputs, &signature)?;
        let call = check_args(&self.name, stream, args, self.inputs.len(), false)?;
        if call.len == 0 {
            return Ok(());
        }
        match call.contiguous {
            true => self.launch_contiguous(stream, args, &signature, call.len),
            false => self.launch_strided(stream, args, &signature, &call.shape),
        }
    }

    /// [`launch`](Self::launch) for kernels whose operation and prelude the crate wrote
    /// (fills, copies, `arange`/`linspace`, array expressions), which is why it is safe.
    pub(crate) fn launch_generated(&self, stream: &Stream, args: &[Arg<'_>]) -> Result<()> {
        // SAFETY: callers are the crate's own kernels, whose operations are single assignments
        // `out = f(inputs, scalars, i)` to their output's element from their input elements and
        // scalars (no addresses formed, no other element touched), so `launch`'s contract holds.
        unsafe { self.launch(stream, args) }
    }

    /// Launches the kernel an array expression's plan generated: `args` are the plan's inputs
    /// (each operand of a kernel parameter, in parameter order) and then `out`, the array
    /// written, on `out`'s stream. It checks what the expression's own construction does not
    /// settle: that every input array is of the stream's context and is `out`'s shape or
    /// broadcasts to it (NumPy's rule). The rest of [`launch`](Self::launch)'s checks hold by
    /// how the caller builds the call:
    /// - the signature: the kernel was generated for the plan's key, which holds each
    ///   parameter's type (the registry finds the kernel by that key), so each input argument
    ///   has its concrete parameter's type and there is one per parameter; the one output, a
    ///   placeholder, is bound by `out`, an array passed as `&mut`;
    /// - `out` is of the stream's context (the stream is `out`'s own) and is not a broadcast
    ///   view (`assign` refuses one; a staged temporary is compact);
    /// - no input overlaps `out` other than as the very same view (the expression checks that
    ///   first, to decide whether to go through a temporary).
    ///
    /// # Safety
    /// `self` is an expression's kernel (its operation the crate wrote: one assignment to the
    /// output's element from the input elements and scalars), and the caller has made sure of
    /// the last two points above, which this does not check.
    pub(crate) unsafe fn launch_expression(&self, stream: &Stream, args: &[Arg<'_>]) -> Result<()> {
        let Some((out, inputs)) = args.split_last() else {
            return Err(Error::InvalidValue(format!("kernel `{}`: no output", self.name)));
        };
        let Some(out) = out.array() else {
            return Err(Error::InvalidValue(format!(
                "kernel `{}`: the output is not an array",
                self.name
            )));
        };
        let shape = out.shape();
        let mut contiguous = true;
        for input in inputs.iter().filter_map(Arg::array) {
            if input.context() != stream.context() {
                return Err(cuda_driver::Error::WrongContext {
                    object: "array",
                    used_with: "stream",
                }
                .into());
            }
            if input.shape() == shape {
                contiguous = contiguous && input.is_contiguous();
            } else if broadcasts_to(input.shape(), shape) {
                contiguous = false;
            } else {
                return Err(Error::InvalidValue(format!(
                    "kernel `{}`: an operand of shape {:?} cannot be broadcast to the output's shape {shape:?}",
                    self.name,
                    input.shape()
                )));
            }
        }
        let len = out.len();
        if len == 0 {
            return Ok(());
        }
        let mut signature: Inline<ArgType, 8> = Inline::new();
        signature.extend(args.iter().map(Arg::arg_type));
        match contiguous && out.is_contiguous() {
            true => self.launch_contiguous(stream, args, &signature, len),
            false => self.launch_strided(stream, args, &signature, shape),
        }
    }

    fn launch_contiguous(&self, stream: &Stream, args: &[Arg<'_>], signature: &[ArgType], n: usize) -> Result<()> {
        let width = self.vector_width(signature);
        let loaded = self.loaded.get_or_load(stream.context(), signature, 0, || {
            let names = match width > 1 {
                true => vec![self.name.clone(), format!("{}_vec", self.name)],
                false => vec![self.name.clone()],
            };
            Ok((self.source_for(signature)?, names))
        })?;
        let element_bytes = signature
            .iter()
            .filter(|a| a.is_array())
            .map(|a| a.dtype().size())
            .max()
            .unwrap_or(1);
        let vectorised = width > 1 && arrays_aligned(args, width * element_bytes);
        let (function, units) = match vectorised {
            true => (&loaded.functions[1], (n / width) as u64),
            false => (&loaded.functions[0], n as u64),
        };
        let grid = grid_for(units, BLOCK, loaded.sm_count, BLOCKS_PER_SM);
        let mut launch = Launch::on(stream);
        launch.args(args)?.value(n as u64);
        // SAFETY: the generated kernel takes exactly these parameters in this order (one per
        // argument, the array device addresses and the scalars' bytes of the bound types, then
        // `n`); every array is a C-contiguous run of `n` elements of its type (checked), the
        // generated loop passes the operation elements below `n` only, and the operation
        // touches only those (the contract of `launch` and of `launch_expression`, which call
        // this); arrays are ordered on `stream` (noted above) and stay borrowed for the call,
        // and their memory is returned to the pool in stream order.
        unsafe { launch.run(function, (grid, 1), (BLOCK, 1))? };
        Ok(())
    }

    fn launch_strided(&self, stream: &Stream, args: &[Arg<'_>], signature: &[ArgType], shape: &[usize]) -> Result<()> {
        let (extents, strides) = strided_layout(args, shape);
        let n: usize = extents.iter().product();
        let grid = grid_for(n as u64, BLOCK, self.loaded.sm_count(stream.context())?, BLOCKS_PER_SM);
        let width = IndexWidth::of(&extents, &strides, u64::from(grid) * u64::from(BLOCK));
        let ndim = extents.len();
        let variant = (ndim as u64) << 2 | width.key();
        let loaded = self.loaded.get_or_load(stream.context(), signature, variant, || {
            Ok((
                self.strided_source_for(signature, ndim, width)?,
                vec![format!("{}_strided", self.name)],
            ))
        })?;
        let mut layout: Vec<u64> = extents.iter().map(|&d| d as u64).collect();
        layout.extend(strides.iter().flatten().map(|&s| s as i64 as u64));
        let mut launch = Launch::on(stream);
        launch.args(args)?.value(n as u64).words(&layout);
        // SAFETY: the strided kernel takes the arguments as the contiguous one does, then `n`,
        // then the `_Layout` struct by value: `ndim` 64-bit extents and `ndim` 64-bit strides
        // per array, which `layout` holds in that order. Each array's element at the offset its
        // strides give for an index below `n` (exact in the offset type `IndexWidth` chose)
        // lies inside the array (strides and extents come from the arrays themselves, broadcast
        // to the checked shape), and the operation touches only those elements (the contract of
        // `launch` and of `launch_expression`, which call this); arrays are ordered on `stream`
        // (noted above) and stay borrowed for the call.
        unsafe { launch.run(&loaded.functions[0], (grid, 1), (BLOCK, 1))? };
        Ok(())
    }
}

impl std::fmt::Debug for ElementwiseKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ElementwiseKernel")
            .field("name", &self.name)
            .field("operation", &self.operation)
            .finish()
    }
}

/// Whether `operation` is the single statement `name = expr` with `name` not in `expr`, so
/// the output's old value is never read.
fn write_only(operation: &str, name: &str) -> bool {
    let statement = operation.trim();
    let statement = statement.strip_suffix(';').unwrap_or(statement).trim_end();
    if statement.contains([';', '{', '}']) {
        return false;
    }
    let Some(rest) = statement.strip_prefix(name) else {
        return false;
    };
    let rest = rest.trim_start();
    let Some(expr) = rest.strip_prefix('=') else {
        return false;
    };
    if expr.starts_with('=') {
        return false;
    }
    !expr
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|token| token == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_only_outputs_are_recognised() {
        assert!(write_only("z = a * x + y", "z"));
        assert!(write_only(" z=x; ", "z"));
        assert!(!write_only("z = z * 2", "z"));
        assert!(!write_only("z += x", "z"));
        assert!(!write_only("z == x", "z"));
        assert!(!write_only("if (x > 0) z = x", "z"));
        assert!(!write_only("z = x; w = y", "z"));
        assert!(!write_only("zz = x", "z"));
        assert!(write_only("z = zz", "z"));
    }

    #[test]
    fn construction_checks_names_and_outputs() {
        assert!(ElementwiseKernel::new("T x", "T z", "z = x", "copy").is_ok());
        assert!(matches!(
            ElementwiseKernel::new("T x", "", "z = x", "copy"),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            ElementwiseKernel::new("T x", "T z", "z = x", "not-c"),
            Err(Error::InvalidValue(_))
        ));
        assert!(matches!(
            ElementwiseKernel::new("T x", "T x", "x = x", "dup"),
            Err(Error::InvalidValue(_))
        ));
    }
}
