//! A training-like step of about twenty array operations (a one-layer tanh model fitted by
//! gradient descent with momentum: forward pass, loss, gradients, updates), captured once as a
//! CUDA graph by `CapturedStep` and replayed for every later batch: one graph launch per step
//! instead of twenty kernel launches. The same steps run eagerly on a second copy of the
//! parameters; the example prints both checksums (the loss of every step and the final weights)
//! and the host time per step of each, and exits non-zero if the checksums differ.
//!
//! `cargo run --release --example graph_training_step`

use std::process::ExitCode;
use std::time::Instant;

use cuda_core::graph::CapturedStep;
use cuda_core::{Device, DeviceArray, ExprOps, Stream};

/// Elements per batch, batches cycled through, steps.
const N: usize = 1 << 20;
const BATCHES: usize = 4;
const STEPS: usize = 50;
const LEARNING_RATE: f32 = 0.05;
const MOMENTUM: f32 = 0.9;

/// The model's parameters and their momenta: `w` per element, `b` one bias.
struct Params {
    w: DeviceArray<f32>,
    b: DeviceArray<f32>,
    w_velocity: DeviceArray<f32>,
    b_velocity: DeviceArray<f32>,
}

impl Params {
    fn new(stream: &Stream) -> cuda_core::Result<Params> {
        Ok(Params {
            w: DeviceArray::full(stream, [N], 0.5f32)?,
            b: DeviceArray::zeros(stream, [1])?,
            w_velocity: DeviceArray::zeros(stream, [N])?,
            b_velocity: DeviceArray::zeros(stream, [1])?,
        })
    }

    /// One step on the batch `(x, target)`: updates the parameters in place and returns the
    /// loss (mean squared error plus the weight-decay term) as a one-element array. About
    /// twenty launches.
    fn step(&mut self, x: &DeviceArray<f32>, target: &DeviceArray<f32>) -> cuda_core::Result<DeviceArray<f32>> {
        let scale = 2.0 / N as f32;
        let z = (&self.w * x + &self.b).eval()?; // 1
        let a = z.tanh().eval()?; // 2
        let error = (&a - target).eval()?; // 3
        let squared = (&error * &error).eval()?; // 4
        let loss = squared.mean()?.reshape([1])?; // 5, 6
        let slope = (1.0 - &a * &a).eval()?; // 7
        let dz = (&error * &slope * scale).eval()?; // 8
        let grad_w = (&dz * x).eval()?; // 9
        let grad_b = dz.sum()?.reshape([1])?; // 10
        let clipped = grad_w.clip(-1.0f32, 1.0f32).eval()?; // 11
        self.w_velocity.update(|v| v * MOMENTUM + &clipped)?; // 12
        self.b_velocity.update(|v| v * MOMENTUM + &grad_b)?; // 13
        self.w.update(|w| w - &self.w_velocity * LEARNING_RATE)?; // 14
        self.b.update(|b| b - &self.b_velocity * LEARNING_RATE)?; // 15
        let decay = (&self.w * 1e-4f32).eval()?; // 16
        self.w.update(|w| w - &decay)?; // 17
        let norm = (&self.w * &self.w).eval()?.sum()?.reshape([1])?; // 18, 19
        (&loss + &norm * 5e-5f32).eval() // 20: the loss with its weight-decay term
    }

    /// The sum of the weights and the bias, on the host.
    fn checksum(&self) -> cuda_core::Result<f64> {
        let w: f64 = self.w.to_vec()?.iter().map(|&v| f64::from(v)).sum();
        Ok(w + f64::from(self.b.to_vec()?[0]))
    }
}

/// Batch `index`: inputs in [-1, 1) and targets `tanh(0.8 x - 0.1)`.
fn batch(stream: &Stream, index: usize) -> cuda_core::Result<(DeviceArray<f32>, DeviceArray<f32>)> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ index as u64;
    let xs: Vec<f32> = (0..N)
        .map(|_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect();
    let targets: Vec<f32> = xs.iter().map(|x| (0.8 * x - 0.1).tanh()).collect();
    Ok((
        DeviceArray::from_slice(stream, &xs)?,
        DeviceArray::from_slice(stream, &targets)?,
    ))
}

fn main() -> ExitCode {
    examples::run("graph_training_step", || {
        let device = Device::new(0)?;
        let stream = device.create_stream()?;
        let batches = (0..BATCHES)
            .map(|i| batch(&stream, i))
            .collect::<cuda_core::Result<Vec<_>>>()?;

        let mut eager = Params::new(&stream)?;
        let mut eager_losses = Vec::with_capacity(STEPS);
        eager.step(&batches[0].0, &batches[0].1)?; // warm-up: kernels compiled and loaded
        eager = Params::new(&stream)?;
        stream.synchronize()?;
        let started = Instant::now();
        for step in 0..STEPS {
            let (x, target) = &batches[step % BATCHES];
            eager_losses.push(eager.step(x, target)?);
        }
        stream.synchronize()?;
        let eager_us = started.elapsed().as_secs_f64() * 1e6 / STEPS as f64;

        let mut replayed = Params::new(&stream)?;
        let mut graph_losses = Vec::with_capacity(STEPS);
        {
            let (x0, t0) = &batches[0];
            // SAFETY: the closure reaches the parameters through a unique borrow, which keeps them
            // alive (at their addresses) as long as the step.
            let mut captured = unsafe {
                CapturedStep::new(&stream, &[x0, t0], |inputs: &[DeviceArray<f32>]| {
                    Ok(vec![replayed.step(&inputs[0], &inputs[1])?])
                })
            }?;
            // The first call runs eagerly, then captures: timed apart from the replays.
            graph_losses.push(captured.run(&[x0, t0])?[0].try_clone()?);
            stream.synchronize()?;
            let started = Instant::now();
            for step in 1..STEPS {
                let (x, target) = &batches[step % BATCHES];
                graph_losses.push(captured.run(&[x, target])?[0].try_clone()?);
            }
            stream.synchronize()?;
            let graph_us = started.elapsed().as_secs_f64() * 1e6 / (STEPS - 1) as f64;
            println!("host time per step: {eager_us:.1} us eager (20 launches), {graph_us:.1} us replayed (copies in, one graph launch, a copy out)");
        }

        let losses = |all: &[DeviceArray<f32>]| -> cuda_core::Result<f64> {
            let mut sum = 0.0;
            for loss in all {
                sum += f64::from(loss.to_vec()?[0]);
            }
            Ok(sum)
        };
        let eager_sum = losses(&eager_losses)? + eager.checksum()?;
        let graph_sum = losses(&graph_losses)? + replayed.checksum()?;
        println!(
            "loss: first {:.6}, last {:.6}",
            eager_losses[0].to_vec()?[0],
            eager_losses[STEPS - 1].to_vec()?[0]
        );
        println!("checksum: eager {eager_sum:.6}, graph {graph_sum:.6}");
        if (eager_sum - graph_sum).abs() > 1e-6 * eager_sum.abs().max(1.0) {
            return Err(format!("the replayed steps differ from the eager ones: {graph_sum} vs {eager_sum}").into());
        }
        Ok(())
    })
}
