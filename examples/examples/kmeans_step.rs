//! One k-means iteration (Lloyd's step), ported line by line from this NumPy program:
//!
//! ```python
//! import numpy as np
//!
//! def kmeans_step(X, C):
//!     k = C.shape[0]
//!     d = ((X[:, None, :] - C[None, :, :]) ** 2).sum(axis=2)   # (n, k) squared distances
//!     labels = d.argmin(axis=1)                                  # nearest centroid
//!     onehot = labels[:, None] == np.arange(k)[None, :]          # (n, k) membership
//!     counts = onehot.sum(axis=0)                                # points per cluster
//!     C_new = (onehot[:, :, None] * X[:, None, :]).sum(axis=0) / counts[:, None]
//!     inertia = np.take_along_axis(d, labels[:, None], 1).sum()  # here: d.min(axis=1).sum()
//!     return C_new, labels, inertia
//! ```
//!
//! Each NumPy line is one line here: broadcasting views (`reshape` adds the `None` axes), a
//! fused `square` under the axis sum, `argmin_axis`, a comparison that broadcasts to the one-hot
//! matrix, and the per-cluster means (`f32 / i64` is `f64`, as in NumPy). The same step runs on
//! the host in `f32` with the same order of operations; labels must agree exactly and
//! centroids to 1e-4 (f32 sums against the host's f64), else the example exits non-zero.
//!
//! `cargo run --release --example kmeans_step`

use std::process::ExitCode;

use cuda_core::{Device, DeviceArray, ExprOps};

/// Points per cluster, clusters, dimensions.
const PER_CLUSTER: usize = 1024;
const K: usize = 4;
const D: usize = 2;

/// Points around `K` centres, from a fixed linear congruential generator.
fn points() -> Vec<f32> {
    let centres = [[0.0f32, 0.0], [5.0, 5.0], [-4.0, 6.0], [6.0, -3.0]];
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut uniform = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 40) as f32 / (1u64 << 24) as f32
    };
    let mut xs = Vec::with_capacity(PER_CLUSTER * K * D);
    for i in 0..PER_CLUSTER * K {
        let centre = centres[i % K];
        for c in centre.iter().take(D) {
            xs.push(c + 3.0 * (uniform() - 0.5));
        }
    }
    xs
}

/// The step on the host: (new centroids, labels, inertia).
fn host_step(xs: &[f32], cs: &[f32]) -> (Vec<f64>, Vec<i64>, f64) {
    let n = xs.len() / D;
    let mut sums = [0.0f64; K * D];
    let mut counts = [0i64; K];
    let mut labels = Vec::with_capacity(n);
    let mut inertia = 0.0f64;
    for i in 0..n {
        let distance = |j: usize| -> f32 {
            (0..D)
                .map(|a| {
                    let delta = xs[i * D + a] - cs[j * D + a];
                    delta * delta
                })
                .fold(0.0f32, |s, v| s + v)
        };
        let best = (0..K).fold(0, |best, j| if distance(j) < distance(best) { j } else { best });
        labels.push(best as i64);
        counts[best] += 1;
        inertia += f64::from(distance(best));
        for a in 0..D {
            sums[best * D + a] += f64::from(xs[i * D + a]);
        }
    }
    let centroids = (0..K * D).map(|i| sums[i] / counts[i / D] as f64).collect();
    (centroids, labels, inertia)
}

fn main() -> ExitCode {
    examples::run("kmeans_step", || {
        let stream = Device::new(0)?.create_stream()?;
        let xs = points();
        let n = xs.len() / D;
        // The first point of each cluster starts as its centroid.
        let cs: Vec<f32> = xs[..K * D].to_vec();
        let x = DeviceArray::from_slice(&stream, &xs)?.reshape([n, D])?;
        let c = DeviceArray::from_slice(&stream, &cs)?.reshape([K, D])?;

        let d = (&x.reshape([n, 1, D])? - &c.reshape([1, K, D])?)
            .square()
            .sum_axes([2], false)?;
        let labels = d.argmin_axis(1, false)?;
        let clusters = DeviceArray::<i64>::arange(&stream, 0, K as i64, 1)?;
        let onehot = labels.reshape([n, 1])?.eq(&clusters.reshape([1, K])?).eval()?;
        let counts = onehot.sum_axes([0], false)?;
        let sums = (&onehot.reshape([n, K, 1])? * &x.reshape([n, 1, D])?).sum_axes([0], false)?;
        let centroids = (&sums / &counts.reshape([K, 1])?).eval()?;
        let inertia = d.min_axes([1], false)?.sum()?.item()?;

        println!("counts per cluster: {:?}", counts.to_vec()?);
        println!("new centroids (f64, as NumPy's f32 / int64):\n{centroids}");
        println!("inertia: {inertia}");

        let (host_centroids, host_labels, host_inertia) = host_step(&xs, &cs);
        let got_labels = labels.to_vec()?;
        if let Some(i) = (0..n).find(|&i| got_labels[i] != host_labels[i]) {
            return Err(format!("label {i} is {}, the host says {}", got_labels[i], host_labels[i]).into());
        }
        let got = centroids.to_vec()?;
        let worst = got
            .iter()
            .zip(&host_centroids)
            .map(|(g, h)| (g - h).abs())
            .fold(0.0f64, f64::max);
        let inertia_error = (f64::from(inertia) - host_inertia).abs() / host_inertia;
        println!(
            "check: labels equal, largest centroid difference {worst:e}, inertia relative difference {inertia_error:e}"
        );
        if worst > 1e-4 || inertia_error > 1e-4 {
            return Err(format!(
                "centroids differ from the host by {worst} (inertia by {inertia_error}): {got:?} vs {host_centroids:?}"
            )
            .into());
        }
        Ok(())
    })
}
