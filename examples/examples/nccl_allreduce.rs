//! Data-parallel gradient averaging with NCCL: one process drives every GPU of the machine (one
//! rank each, `N` from the devices present), each rank holds its own gradients, and one
//! `all_reduce` with [`ReduceOp::Avg`] leaves their mean on every GPU, checked against the host.
//!
//! `NCCL_NVLS_ENABLE=0 cargo run --release --example nccl_allreduce`
//!
//! With several processes (one GPU each), rank 0 makes a [`UniqueId`] and sends its bytes to
//! the others, which all call [`Communicator::init_rank`]: see the `cuda_libs::nccl` module
//! docs for that form, with the id exchanged over a local TCP socket.
//!
//! [`UniqueId`]: cuda_libs::nccl::UniqueId

use std::process::ExitCode;

use cuda_driver::{Device, DeviceBuffer, Stream};
use cuda_libs::nccl::{self, Communicator, ReduceOp};

/// Parameters per rank: enough to take several NCCL chunks.
const PARAMETERS: usize = (1 << 20) + 17;

/// Rank `rank`'s gradient for parameter `i`: small values, exact in `f32`.
fn gradient(rank: usize, i: usize) -> f32 {
    ((i % 97) as f32 - 48.0) * 0.25 + rank as f32
}

fn main() -> ExitCode {
    examples::run("nccl_allreduce", || {
        // NVLink SHARP (multicast) stays off; set before NCCL reads its environment.
        if std::env::var_os("NCCL_NVLS_ENABLE").is_none() {
            std::env::set_var("NCCL_NVLS_ENABLE", "0");
        }
        let devices = Device::all()?;
        let contexts = devices
            .iter()
            .map(Device::primary_context)
            .collect::<Result<Vec<_>, _>>()?;
        let (major, minor, patch) = nccl::version()?;
        println!("NCCL {major}.{minor}.{patch}, {} GPU(s)", contexts.len());
        let comms = Communicator::init_all(&contexts)?;
        let streams = contexts.iter().map(Stream::new).collect::<Result<Vec<_>, _>>()?;
        let mut grads = contexts
            .iter()
            .enumerate()
            .map(|(rank, context)| {
                let host: Vec<f32> = (0..PARAMETERS).map(|i| gradient(rank, i)).collect();
                DeviceBuffer::from_slice(context, &host)
            })
            .collect::<Result<Vec<_>, _>>()?;

        // One thread drives every rank: the step's calls go in one group.
        nccl::group(|g| {
            for ((comm, grad), stream) in comms.iter().zip(&mut grads).zip(&streams) {
                g.all_reduce_in_place::<f32>(comm, grad, PARAMETERS, ReduceOp::Avg, stream)?;
            }
            Ok(())
        })?;

        let n = comms.len();
        let mut wrong = 0;
        for (rank, (grad, stream)) in grads.iter().zip(&streams).enumerate() {
            stream.synchronize()?;
            let averaged = grad.to_vec()?;
            let bad = (0..PARAMETERS)
                .filter(|&i| {
                    let mean = (0..n).map(|r| f64::from(gradient(r, i))).sum::<f64>() / n as f64;
                    (f64::from(averaged[i]) - mean).abs() > 1e-5 * mean.abs().max(1.0)
                })
                .count();
            println!(
                "rank {rank} (device {}): {PARAMETERS} averaged gradients, {bad} wrong; first {:?}",
                comms[rank].device().ordinal(),
                &averaged[..3]
            );
            wrong += bad;
        }
        // One thread's communicators end together (each alone might wait for the others').
        Communicator::finalize_all(comms)?;
        if wrong > 0 {
            return Err(format!("{wrong} averaged gradients differ from the host's mean").into());
        }
        println!("ok: the mean of {n} rank(s)' gradients is on every GPU");
        Ok(())
    })
}
