//! The CuPy snippet a NumPy user writes first, in Rust:
//!
//! ```python
//! x = cp.random.rand(1 << 20, dtype=cp.float32)
//! y = cp.random.rand(1 << 20, dtype=cp.float32)
//! z = 2.0 * x + y
//! print(float(cp.sum(z)))
//! print(z)
//! ```
//!
//! `2.0 * &x + &y` is one fused kernel (CuPy's is two and a temporary), `sum` one reduction
//! with no host round trip, `item` the `float(...)`. Then a view, broadcasting and axis
//! reductions, each checked against the same work on the host; the printed array must be the
//! line README.md shows.
//!
//! `cargo run --release --example numpy_style`

use std::process::ExitCode;

use cuda_core::{random, Device, DeviceArray, ExprOps, Slice};

fn main() -> ExitCode {
    examples::run("numpy_style", || {
        let stream = Device::new(0)?.create_stream()?;

        let x = random::rand::<f32>(&stream, 1 << 20, 1)?;
        let y = random::rand::<f32>(&stream, 1 << 20, 2)?;
        let z = (2.0 * &x + &y).eval()?;
        let total = z.sum()?.item()?;
        println!("{total}");
        let printed = z.to_string();
        println!("{printed}");
        // The README shows this line; the generator is counter-based, so every GPU prints it.
        let shown = examples::readme_output(examples::NUMPY_STYLE_PRINT).ok_or("README.md shows no output")?;
        if printed != shown {
            return Err(format!("printed {printed}, README.md shows {shown}").into());
        }

        // The same on the host.
        let (xs, ys, zs) = (x.to_vec()?, y.to_vec()?, z.to_vec()?);
        if let Some(i) = (0..zs.len()).find(|&i| zs[i] != 2.0 * xs[i] + ys[i]) {
            return Err(format!("z[{i}] is {}, the host says {}", zs[i], 2.0 * xs[i] + ys[i]).into());
        }
        let host_total: f64 = zs.iter().map(|&v| f64::from(v)).sum();
        if (f64::from(total) - host_total).abs() > 1e-5 * host_total {
            return Err(format!("sum is {total}, the host says {host_total}").into());
        }

        // Views, broadcasting and reductions along axes: the mean of each column of a
        // (1024, 1024) matrix, subtracted from every row, leaves columns that sum to about zero.
        let m = z.reshape([1024, 1024])?;
        let centred = (&m - &m.mean_axes([0], true)?).eval()?;
        let column_sums = centred.sum_axes([0], false)?;
        let worst = column_sums.abs().eval()?.max()?.item()?;
        println!("largest column sum after centring: {worst:e}");
        if worst > 1e-2 {
            return Err(format!("centred columns should sum to about 0, not {worst}").into());
        }
        let corner = m.slice(&[Slice::from(..2), Slice::from(..3)])?;
        println!("corner of z as a matrix:\n{corner}");
        let flat = corner.to_vec()?;
        if flat != [zs[0], zs[1], zs[2], zs[1024], zs[1025], zs[1026]] {
            return Err(format!("the corner view reads {flat:?}").into());
        }
        let ones = DeviceArray::<f32>::ones(&stream, [2, 3])?;
        let argmax = (&corner * &ones).eval()?.argmax_axis(1, false)?;
        println!("argmax of each row of the corner: {argmax}");
        let host_argmax: Vec<i64> = flat
            .chunks(3)
            .map(|row| (0..3).fold(0, |best, i| if row[i] > row[best] { i } else { best }) as i64)
            .collect();
        if argmax.to_vec()? != host_argmax {
            return Err(format!("argmax is {argmax}, the host says {host_argmax:?}").into());
        }
        Ok(())
    })
}
