//! [`Plan`]: one cuFFT plan, made with automatic workspace allocation off, executed on the
//! stream each call names with the workspace each call hands it.

use std::ffi::c_void;

use std::ffi::CString;

use cuda_driver::{Access, Context, DeviceBuffer, DeviceMemory, DeviceMemoryMut, Stream, StreamUse};
use cuda_sys::cufft::cufftHandle;
use cuda_sys::driver::CUdeviceptr;

use super::callback::{load_type, store_type, supports_load_callbacks, LoadCallback, StoreCallback};
use super::{check, Checked, Direction, Kind, PlanDesc};
use crate::{Error, Result};

/// A cuFFT plan for one [`PlanDesc`], bound to the context it was made in.
///
/// Automatic workspace allocation is off: an execution takes a workspace of at least
/// [`Plan::workspace_size`] bytes from the caller. Executions queue on the stream they name
/// (`cufftSetStream` each time). The plan is destroyed on drop, after every stream it ran on has
/// finished (cuFFT frees its device tables then): a host wait.
pub struct Plan {
    handle: cufftHandle,
    context: Context,
    desc: PlanDesc,
    checked: Checked,
    workspace_size: usize,
    /// Every stream the plan ran on (each once), waited for before the plan is destroyed.
    streams: Vec<Stream>,
    /// The caller info of a load callback, where the plan has one.
    load: Option<CallerInfo>,
    /// The caller info of a store callback, where the plan has one, with the words each
    /// execution writes there ([`Plan::set_store_info`]).
    store: Option<(CallerInfo, Vec<u64>)>,
}

/// A callback's caller info: device words the plan owns, written before each execution, and
/// the one-entry array of their address handed to `cufftXtSetJITCallback` (kept for the plan's
/// life, in case cuFFT keeps the array rather than its entry).
struct CallerInfo {
    words: DeviceBuffer<u64>,
    address: Box<[usize; 1]>,
}

/// A callback to attach before the plan is made.
enum Attach<'c> {
    Load(&'c LoadCallback<'c>),
    Store(&'c StoreCallback<'c>),
}

impl Plan {
    /// Makes the plan in `context`: `cufftCreate`, `cufftSetAutoAllocation(0)`, then
    /// `cufftMakePlanMany64` (single and double precision) or `cufftXtMakePlanMany` (half), both
    /// with 64-bit sizes. Sizes and layouts are checked first ([`Error::InvalidValue`]); a plan
    /// cuFFT refuses is [`Error::Status`] with its `cufftResult` name.
    pub fn new(context: &Context, desc: &PlanDesc) -> Result<Plan> {
        Plan::make(context, desc, None)
    }

    /// Makes the plan in `context` with a [`LoadCallback`] producing its input (see
    /// [`super::LoadCallback`]): `cufftCreate`, `cufftSetAutoAllocation(0)`, the caller info's
    /// device words allocated, `cufftXtSetJITCallback`, then `cufftMakePlanMany64` (where cuFFT
    /// links the callback). For complex-to-complex and real-to-complex plans of single or
    /// double precision, with a cuFFT that takes LTO callbacks
    /// ([`super::supports_load_callbacks`]); otherwise [`Error::InvalidValue`] before any call.
    /// A callback cuFFT cannot link is [`Error::Status`] (`CUFFT_NVJITLINK_FAILURE`, ...).
    /// Executions go through [`Plan::execute_loaded`].
    pub fn with_load_callback(context: &Context, desc: &PlanDesc, callback: &LoadCallback<'_>) -> Result<Plan> {
        load_type(desc.kind(), desc.precision())?;
        if let Some(why) = supports_load_callbacks()? {
            return Err(Error::InvalidValue(format!("no load callback: {why}")));
        }
        Plan::make(context, desc, Some(Attach::Load(callback)))
    }

    /// Makes the plan in `context` with a [`StoreCallback`] storing its output (see
    /// [`super::StoreCallback`]): `cufftCreate`, `cufftSetAutoAllocation(0)`, the caller info's
    /// device words allocated (zeros until [`Plan::set_store_info`]), `cufftXtSetJITCallback`
    /// with the output's `CUFFT_CB_ST_*` type, then `cufftMakePlanMany64`. For single and
    /// double precision, with a cuFFT that takes LTO callbacks
    /// ([`super::supports_load_callbacks`]); otherwise [`Error::InvalidValue`] before any call.
    /// A callback cuFFT cannot link is [`Error::Status`]. Executions go through the plain
    /// [`Plan::execute`], [`Plan::execute_c2r`] and [`Plan::execute_in_place`], each writing
    /// the caller info first, in stream order (so a capturing stream is refused, as by
    /// [`Plan::execute_loaded`]).
    ///
    /// # Safety
    /// Whatever caller info it is given, the callback writes only the element it is handed, as
    /// the plan's output type, at `offset` elements from `dataOut` (where cuFFT itself would
    /// write it), and reads nothing but the caller info and its arguments.
    pub unsafe fn with_store_callback(
        context: &Context,
        desc: &PlanDesc,
        callback: &StoreCallback<'_>,
    ) -> Result<Plan> {
        store_type(desc.kind(), desc.precision())?;
        if let Some(why) = supports_load_callbacks()? {
            return Err(Error::InvalidValue(format!("no store callback: {why}")));
        }
        Plan::make(context, desc, Some(Attach::Store(callback)))
    }

    fn make(context: &Context, desc: &PlanDesc, callback: Option<Attach<'_>>) -> Result<Plan> {
        let checked = desc.check()?;
        let symbol = callback
            .as_ref()
            .map(|c| {
                let name = match c {
                    Attach::Load(load) => load.symbol,
                    Attach::Store(store) => store.symbol,
                };
                CString::new(name).map_err(|_| Error::InvalidValue(format!("the callback name {name:?} holds a NUL")))
            })
            .transpose()?;
        let cufft = cuda_sys::cufft()?;
        let create = cufft.cufftCreate()?;
        let auto_allocation = cufft.cufftSetAutoAllocation()?;
        context.set_current()?;
        let mut handle: cufftHandle = 0;
        // SAFETY: `handle` is a valid out-pointer; the context is current.
        check("cufftCreate", unsafe { create(&mut handle) })?;
        // From here `drop` destroys the handle, whatever fails next.
        let mut plan = Plan {
            handle,
            context: context.clone(),
            desc: *desc,
            checked,
            workspace_size: 0,
            streams: Vec::new(),
            load: None,
            store: None,
        };
        // SAFETY: the handle is live and not yet made.
        check("cufftSetAutoAllocation", unsafe { auto_allocation(plan.handle, 0) })?;
        match (callback, &symbol) {
            (Some(Attach::Load(load)), Some(symbol)) => {
                let info = plan.attach_callback(
                    symbol,
                    load.lto_ir,
                    load.info_words,
                    load_type(desc.kind(), desc.precision())?,
                )?;
                plan.load = Some(info);
            }
            (Some(Attach::Store(store)), Some(symbol)) => {
                let info = plan.attach_callback(
                    symbol,
                    store.lto_ir,
                    store.info_words,
                    store_type(desc.kind(), desc.precision())?,
                )?;
                plan.store = Some((info, vec![0; store.info_words.max(1)]));
            }
            _ => {}
        }
        let Checked {
            rank,
            mut n,
            batch,
            mut input,
            mut output,
            cufft_type,
            types,
        } = checked;
        let mut work_size = 0usize;
        // SAFETY: `n` and both `embed` arrays hold `rank` (at most 3) sizes that cuFFT reads and
        // does not keep; `work_size` is a valid out-pointer; the context is current.
        let result = match cufft_type {
            Some(cufft_type) => unsafe {
                cufft.cufftMakePlanMany64()?(
                    plan.handle,
                    rank,
                    n.as_mut_ptr(),
                    input.embed.as_mut_ptr(),
                    input.stride,
                    input.distance,
                    output.embed.as_mut_ptr(),
                    output.stride,
                    output.distance,
                    cufft_type,
                    batch,
                    &mut work_size,
                )
            },
            None => unsafe {
                cufft.cufftXtMakePlanMany()?(
                    plan.handle,
                    rank,
                    n.as_mut_ptr(),
                    input.embed.as_mut_ptr(),
                    input.stride,
                    input.distance,
                    types[0],
                    output.embed.as_mut_ptr(),
                    output.stride,
                    output.distance,
                    types[1],
                    batch,
                    &mut work_size,
                    types[2],
                )
            },
        };
        let function = match cufft_type {
            Some(_) => "cufftMakePlanMany64",
            None => "cufftXtMakePlanMany",
        };
        check(function, result)?;
        plan.workspace_size = work_size;
        Ok(plan)
    }

    /// Allocates the caller info and hands the callback to cuFFT (before the plan is made):
    /// the caller info, which the plan keeps once cuFFT took it.
    fn attach_callback(
        &mut self,
        symbol: &CString,
        lto_ir: &[u8],
        info_words: usize,
        callback_type: cuda_sys::cufft::cufftXtCallbackType,
    ) -> Result<CallerInfo> {
        let set_callback = cuda_sys::cufft()?.cufftXtSetJITCallback()?;
        let words = DeviceBuffer::<u64>::zeroed(&self.context, info_words.max(1))?;
        // SAFETY: reads the address of a live buffer, kept by the plan for its whole life
        // (where cuFFT refuses the callback, cuFFT keeps nothing of it).
        let address = unsafe { words.as_raw() } as usize;
        let mut info = CallerInfo {
            words,
            address: Box::new([address]),
        };
        self.context.set_current()?;
        // SAFETY: the handle is live and not yet made; the name is a C string and the LTO-IR
        // a byte slice, both read during the call; the caller-info array holds one device
        // address (an `usize` is a pointer's width), owned by the plan until it is destroyed.
        let result = unsafe {
            set_callback(
                self.handle,
                symbol.as_ptr(),
                lto_ir.as_ptr().cast(),
                lto_ir.len(),
                callback_type,
                info.address.as_mut_ptr().cast(),
            )
        };
        check("cufftXtSetJITCallback", result)?;
        Ok(info)
    }

    /// Whether the plan has a load callback.
    pub fn has_load_callback(&self) -> bool {
        self.load.is_some()
    }

    /// Whether the plan has a store callback.
    pub fn has_store_callback(&self) -> bool {
        self.store.is_some()
    }

    /// The caller info of the plan's store callback from the next execution on: exactly the
    /// callback's words, written to the device before each execution, in stream order.
    /// [`Error::InvalidValue`] for a plan without a store callback or another number of words.
    pub fn set_store_info(&mut self, info: &[u64]) -> Result<()> {
        let Some((_, words)) = self.store.as_mut() else {
            return Err(Error::InvalidValue(
                "Plan::set_store_info is for plans made with a store callback".into(),
            ));
        };
        if info.len() != words.len() {
            return Err(Error::InvalidValue(format!(
                "the store callback takes {} words of caller info; {} were given",
                words.len(),
                info.len()
            )));
        }
        words.copy_from_slice(info);
        Ok(())
    }

    /// What this plan transforms.
    pub fn desc(&self) -> &PlanDesc {
        &self.desc
    }

    /// The context the plan belongs to.
    pub fn context(&self) -> &Context {
        &self.context
    }

    /// Bytes of workspace every execution needs (0: none).
    pub fn workspace_size(&self) -> usize {
        self.workspace_size
    }

    /// Bytes the input side spans (what the input buffer must hold at least).
    pub fn input_bytes(&self) -> usize {
        self.checked.input.bytes
    }

    /// Bytes the output side spans.
    pub fn output_bytes(&self) -> usize {
        self.checked.output.bytes
    }

    /// Queues the transform of `input` into `output` on `stream` (out of place; the buffers
    /// must not overlap). For [`Kind::C2C`] in either direction and [`Kind::R2C`] (forward);
    /// [`Kind::C2R`] overwrites its input and goes through [`Plan::execute_c2r`].
    ///
    /// Each buffer must belong to the plan's context, be dense, hold the bytes its side spans
    /// ([`Plan::input_bytes`], [`Plan::output_bytes`]) and be aligned to its element; the
    /// workspace must hold [`Plan::workspace_size`] bytes (it may be `None` when that is 0) and
    /// overlap neither. A refusal is a typed error before anything is queued.
    pub fn execute(
        &mut self,
        stream: &Stream,
        direction: Direction,
        input: &(impl DeviceMemory + ?Sized),
        output: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        if self.desc.kind() == Kind::C2R {
            return Err(Error::InvalidValue(
                "cuFFT's complex-to-real transforms overwrite their input: use Plan::execute_c2r, \
                 which takes it writable"
                    .into(),
            ));
        }
        self.out_of_place(stream, direction, input, Access::Read, output, workspace)
    }

    /// Queues a [`Kind::C2R`] transform (inverse) of `input` into `output` on `stream`, checked
    /// as [`Plan::execute`] is. cuFFT overwrites `input` (even out of place), so it is borrowed
    /// writable.
    pub fn execute_c2r(
        &mut self,
        stream: &Stream,
        input: &mut (impl DeviceMemoryMut + ?Sized),
        output: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        if self.desc.kind() != Kind::C2R {
            return Err(Error::InvalidValue(format!(
                "Plan::execute_c2r runs complex-to-real plans; this one is {:?}",
                self.desc.kind()
            )));
        }
        self.out_of_place(stream, Direction::Inverse, &*input, Access::Write, output, workspace)
    }

    /// Queues the transform in place: `data` holds both sides, so it must hold the larger span
    /// (a real transform in place needs the padded real layout cuFFT documents, given as the
    /// real side's [`super::Layout::Strided`]). Checked as [`Plan::execute`] is.
    pub fn execute_in_place(
        &mut self,
        stream: &Stream,
        direction: Direction,
        data: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        self.check_call(stream, direction)?;
        let Checked { input, output, .. } = self.checked;
        let larger = if input.bytes >= output.bytes { input } else { output };
        let alignment = input.element_bytes.max(output.element_bytes);
        let pointer = self.memory("data", &*data, larger.bytes, alignment)?;
        let workspace: Option<&dyn DeviceMemoryMut> = workspace.map(|w| &*w);
        let workspace_pointer = self.workspace(workspace, &[("data", pointer, larger.bytes)])?;
        let _data_use = data.begin_use(stream, Access::Write)?;
        let _workspace_use = begin_workspace_use(workspace, stream)?;
        self.enqueue(stream, direction, pointer, pointer, workspace_pointer)
    }

    /// Queues the transform of a plan with a load callback into `output` on `stream`: `info`
    /// (exactly the callback's words) is written to the caller info first, in stream order;
    /// `reads` are the memory the callback reads, whose uses are recorded on `stream`. cuFFT is
    /// handed the caller info's address as its input pointer, which the callback ignores
    /// (cuFFT reads a plan's input through its load callback only, and does not write the
    /// input of complex-to-complex and real-to-complex plans). `output` and `workspace` are
    /// checked as [`Plan::execute`] checks them. A capturing stream is refused
    /// ([`Error::InvalidValue`]): a graph would replay the caller info's write from `info`.
    ///
    /// # Safety
    /// Given `info`, the callback reads only memory inside `reads` (each belonging to the
    /// plan's context, none overlapping `output` or `workspace`: checked), and reads it as the
    /// type it holds, for every offset of the plan's input layout; it writes nothing.
    pub unsafe fn execute_loaded(
        &mut self,
        stream: &Stream,
        direction: Direction,
        info: &[u64],
        reads: &[&dyn DeviceMemory],
        output: &mut (impl DeviceMemoryMut + ?Sized),
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        let Some(words) = self.load.as_ref().map(|load| load.words.len()) else {
            return Err(Error::InvalidValue(
                "Plan::execute_loaded runs plans made with a load callback".into(),
            ));
        };
        if info.len() != words {
            return Err(Error::InvalidValue(format!(
                "the load callback takes {words} words of caller info; {} were given",
                info.len()
            )));
        }
        self.check_call(stream, direction)?;
        let output_side = self.checked.output;
        let output_pointer = self.memory("output", &*output, output_side.bytes, output_side.element_bytes)?;
        let workspace: Option<&dyn DeviceMemoryMut> = workspace.map(|w| &*w);
        let workspace_pointer = self.workspace(workspace, &[("output", output_pointer, output_side.bytes)])?;
        for read in reads {
            if read.context() != &self.context {
                return Err(Error::WrongContext {
                    object: "callback operand",
                    used_with: "cuFFT plan",
                });
            }
            // The callback reads while cuFFT writes the output and the workspace.
            let operand = ("callback operand", read.device_ptr(), read.byte_len());
            apart(operand, ("output", output_pointer, output_side.bytes))?;
            if workspace_pointer != 0 {
                apart(operand, ("workspace", workspace_pointer, self.workspace_size))?;
            }
        }
        // Out of the plan while its uses are open (`enqueue` notes the stream in the plan).
        let mut load = self
            .load
            .take()
            .ok_or_else(|| Error::InvalidValue("the plan lost its load callback".into()))?;
        let mut queue = |plan: &mut Plan| -> Result<()> {
            load.words.copy_from_host_async(info, stream)?;
            // SAFETY: reads the address of the plan's own caller-info buffer.
            let info_pointer = unsafe { load.words.as_raw() };
            let _info_use = load.words.begin_use(stream, Access::Read)?;
            let _read_uses = reads
                .iter()
                .map(|read| read.begin_use(stream, Access::Read))
                .collect::<cuda_driver::Result<Vec<_>>>()?;
            let _output_use = output.begin_use(stream, Access::Write)?;
            let _workspace_use = begin_workspace_use(workspace, stream)?;
            plan.enqueue(stream, direction, info_pointer, output_pointer, workspace_pointer)
        };
        let queued = queue(self);
        self.load = Some(load);
        queued
    }

    fn out_of_place<I: DeviceMemory + ?Sized, O: DeviceMemoryMut + ?Sized>(
        &mut self,
        stream: &Stream,
        direction: Direction,
        input: &I,
        input_access: Access,
        output: &mut O,
        workspace: Option<&mut dyn DeviceMemoryMut>,
    ) -> Result<()> {
        self.check_call(stream, direction)?;
        let Checked {
            input: input_side,
            output: output_side,
            ..
        } = self.checked;
        let input_pointer = self.memory("input", input, input_side.bytes, input_side.element_bytes)?;
        let output_pointer = self.memory("output", &*output, output_side.bytes, output_side.element_bytes)?;
        apart(
            ("input", input_pointer, input_side.bytes),
            ("output", output_pointer, output_side.bytes),
        )?;
        let workspace: Option<&dyn DeviceMemoryMut> = workspace.map(|w| &*w);
        let workspace_pointer = self.workspace(
            workspace,
            &[
                ("input", input_pointer, input_side.bytes),
                ("output", output_pointer, output_side.bytes),
            ],
        )?;
        let _input_use = input.begin_use(stream, input_access)?;
        let _output_use = output.begin_use(stream, Access::Write)?;
        let _workspace_use = begin_workspace_use(workspace, stream)?;
        self.enqueue(stream, direction, input_pointer, output_pointer, workspace_pointer)
    }

    /// The direction against the kind, and the stream's context against the plan's.
    fn check_call(&self, stream: &Stream, direction: Direction) -> Result<()> {
        let expected = match self.desc.kind() {
            Kind::C2C => direction,
            Kind::R2C => Direction::Forward,
            Kind::C2R => Direction::Inverse,
        };
        if direction != expected {
            return Err(Error::InvalidValue(format!(
                "a {:?} transform runs {expected:?} only; {direction:?} was asked",
                self.desc.kind()
            )));
        }
        if stream.context() != &self.context {
            return Err(Error::WrongContext {
                object: "stream",
                used_with: "cuFFT plan",
            });
        }
        // A captured execution of a callback plan would bake the plan's caller-info buffer into
        // the graph, and a copy from host memory (the words given now) that the graph replays
        // from wherever they were: the next execution rewrites the buffer, and the words may be
        // freed, before the graph runs.
        if (self.load.is_some() || self.store.is_some()) && stream.in_capture()? {
            return Err(Error::InvalidValue(
                "a cuFFT plan with a callback cannot run on a capturing stream: its caller info is \
                 written from host memory before each execution, which a graph would replay stale"
                    .into(),
            ));
        }
        Ok(())
    }

    /// One buffer's address, once its context, density, length and alignment are checked.
    fn memory<M: DeviceMemory + ?Sized>(
        &self,
        name: &'static str,
        memory: &M,
        bytes: usize,
        alignment: usize,
    ) -> Result<CUdeviceptr> {
        if memory.context() != &self.context {
            return Err(Error::WrongContext {
                object: name,
                used_with: "cuFFT plan",
            });
        }
        memory.check_dense()?;
        if memory.byte_len() < bytes {
            return Err(Error::InvalidValue(format!(
                "the {name} spans {bytes} bytes under the plan's layout but its memory holds {}",
                memory.byte_len()
            )));
        }
        let pointer = memory.device_ptr();
        if pointer % alignment as CUdeviceptr != 0 {
            return Err(Error::InvalidValue(format!(
                "the {name} starts at {pointer:#x}, not aligned to its {alignment}-byte elements"
            )));
        }
        Ok(pointer)
    }

    /// The workspace's address (0 where the plan needs none), once checked like the data and
    /// against overlap with it.
    fn workspace(
        &self,
        workspace: Option<&dyn DeviceMemoryMut>,
        data: &[(&'static str, CUdeviceptr, usize)],
    ) -> Result<CUdeviceptr> {
        if self.workspace_size == 0 {
            return Ok(0);
        }
        let Some(workspace) = workspace else {
            return Err(Error::InvalidValue(format!(
                "the plan needs {} bytes of workspace and none was given",
                self.workspace_size
            )));
        };
        let pointer = self.memory("workspace", workspace, self.workspace_size, 1)?;
        for &other in data {
            apart(("workspace", pointer, self.workspace_size), other)?;
        }
        Ok(pointer)
    }

    /// Sets the stream and work area and queues the transform.
    fn enqueue(
        &mut self,
        stream: &Stream,
        direction: Direction,
        input: CUdeviceptr,
        output: CUdeviceptr,
        workspace: CUdeviceptr,
    ) -> Result<()> {
        let cufft = cuda_sys::cufft()?;
        let set_stream = cufft.cufftSetStream()?;
        let set_work_area = cufft.cufftSetWorkArea()?;
        let exec = cufft.cufftXtExec()?;
        self.context.set_current()?;
        // SAFETY: reads the handle of a live stream of the plan's context; the plan keeps a clone
        // of the stream until it is destroyed.
        let raw_stream = unsafe { stream.as_raw() }.cast();
        // SAFETY: the handle is a live plan of the current context.
        check("cufftSetStream", unsafe { set_stream(self.handle, raw_stream) })?;
        self.note_stream(stream);
        if self.workspace_size > 0 {
            // SAFETY: the workspace holds at least `workspace_size` bytes of this context's memory,
            // its use on `stream` is open until the transform below is queued.
            check("cufftSetWorkArea", unsafe {
                set_work_area(self.handle, device_ptr(workspace))
            })?;
        }
        let sign = match direction {
            Direction::Forward => cuda_sys::cufft::CUFFT_FORWARD,
            Direction::Inverse => cuda_sys::cufft::CUFFT_INVERSE as i32,
        };
        // A store callback's caller info, written in stream order before the transform reads it.
        let _store_info_use = match self.store.as_mut() {
            Some((info, next)) => {
                info.words.copy_from_host_async(&next[..], stream)?;
                Some(info.words.begin_use(stream, Access::Read)?)
            }
            None => None,
        };
        // SAFETY: each side's buffer holds every element its layout reaches, is aligned to its
        // element and belongs to the plan's context; out-of-place buffers and the workspace do
        // not overlap; all are borrowed, with their stream uses open, until the call returns. A
        // store callback writes only the element cuFFT hands it, where cuFFT would (the
        // contract of `with_store_callback`).
        let result = unsafe { exec(self.handle, device_ptr(input), device_ptr(output), sign) };
        check("cufftXtExec", result)
    }
}

impl Plan {
    /// Keeps `stream` (once) for the wait before the plan is destroyed.
    fn note_stream(&mut self, stream: &Stream) {
        // SAFETY (both): the handles are only compared, while both streams are alive.
        let raw = unsafe { stream.as_raw() };
        if !self.streams.iter().any(|known| unsafe { known.as_raw() } == raw) {
            self.streams.push(stream.clone());
        }
    }
}

/// Opens the workspace's use on `stream`, where there is one.
fn begin_workspace_use<'w>(
    workspace: Option<&'w dyn DeviceMemoryMut>,
    stream: &Stream,
) -> Result<Option<StreamUse<'w>>> {
    Ok(workspace.map(|w| w.begin_use(stream, Access::Write)).transpose()?)
}

/// [`Error::InvalidValue`] where two byte ranges overlap.
fn apart(
    (a_name, a, a_bytes): (&str, CUdeviceptr, usize),
    (b_name, b, b_bytes): (&str, CUdeviceptr, usize),
) -> Result<()> {
    let a_end = a.saturating_add(a_bytes as CUdeviceptr);
    let b_end = b.saturating_add(b_bytes as CUdeviceptr);
    if a < b_end && b < a_end {
        return Err(Error::InvalidValue(format!(
            "the {a_name} ({a:#x}, {a_bytes} bytes) and the {b_name} ({b:#x}, {b_bytes} bytes) \
             overlap: out-of-place transforms need apart buffers (use execute_in_place for one)"
        )));
    }
    Ok(())
}

/// A device address as cuFFT's `void *`.
fn device_ptr(address: CUdeviceptr) -> *mut c_void {
    address as usize as *mut c_void
}

impl Drop for Plan {
    fn drop(&mut self) {
        let Some(destroy) = cuda_sys::cufft().ok().and_then(|cufft| cufft.cufftDestroy().ok()) else {
            return;
        };
        // cuFFT frees the plan's device tables at once: every transform must be done first.
        // Errors cannot be returned from `drop`; a failure to wait or to make the context
        // current still destroys the plan (leaking it would be worse: a failed wait means the
        // context is broken, and its work is not running).
        for stream in self.streams.drain(..) {
            let _ = stream.synchronize_quiet();
        }
        let _ = self.context.set_current();
        // SAFETY: the handle was made by `cufftCreate` and is destroyed once, here, after its
        // last stream was waited for.
        let _ = unsafe { destroy(self.handle) };
    }
}

impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("handle", &self.handle)
            .field("desc", &self.desc)
            .field("workspace_size", &self.workspace_size)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_overlap_by_address() {
        assert!(apart(("input", 0x1000, 0x100), ("output", 0x1100, 0x100)).is_ok());
        assert!(apart(("input", 0x1100, 0x100), ("output", 0x1000, 0x100)).is_ok());
        let overlap = apart(("input", 0x1000, 0x101), ("output", 0x1100, 0x100));
        assert!(matches!(overlap, Err(Error::InvalidValue(m)) if m.contains("overlap")));
        assert!(apart(("workspace", 0x1080, 8), ("data", 0x1000, 0x100)).is_err());
    }
}
