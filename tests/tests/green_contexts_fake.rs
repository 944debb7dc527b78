//! cuda-driver's green contexts on the stand-in driver (132 SMs, partitions of at least 8 SMs
//! rounded up to 4): a device's SM resource, splits into groups and a remainder, a green context
//! over a group whose stream runs a kernel of the primary context and keeps the green context
//! alive; splits larger than the resource refused before any driver call, naming its SM count;
//! resources of another device or split refused; every driver call of a green context's life
//! (its resource, context handle and streams of each priority, with tiled and im2col tensor maps
//! encoded over a buffer of its context) failing once leaks nothing.

use cuda_driver::{
    Context, Device, DeviceBuffer, Error, GreenContext, Im2colTensorMap, LaunchConfig, Module, TensorDataType,
    TiledTensorMap,
};
use tests::fake::{self, Kind};
use tests::faults;

fn oversized(result: cuda_driver::Result<cuda_driver::SmSplit>, sms: u32) -> Error {
    let error = result.expect_err("an oversized split");
    assert!(
        matches!(error, Error::SmSplit { available, .. } if available == sms),
        "{error:?}"
    );
    assert!(error.to_string().contains(&format!("{sms} SMs")), "{error}");
    error
}

#[test]
fn splits_larger_than_the_device_are_refused_before_the_driver_is_called() {
    let fake = fake::session();
    let device = Device::get(0).unwrap();
    let sms = device.sm_resource().unwrap();
    assert_eq!(
        (sms.sm_count(), sms.min_partition_size(), sms.coscheduled_alignment()),
        (132, 8, 4)
    );
    fake.reset();
    for (groups, per_group) in [(1, 133), (9, 16), (2, 67), (u32::MAX, 2)] {
        let error = oversized(sms.split(groups, per_group), 132);
        assert!(
            matches!(error, Error::SmSplit { groups: g, sms_per_group: s, made: None, .. } if g == groups && s == per_group),
            "{error:?}"
        );
    }
    for (groups, per_group) in [(0, 16), (1, 0)] {
        assert!(matches!(sms.split(groups, per_group), Err(Error::InvalidValue(_))));
    }
    assert_eq!(fake.calls(), 0, "{}", fake.trace());

    // Within the count, but the driver rounds each group of 4 up to 8: 16 groups fit, not 33.
    let error = sms.split(33, 4).expect_err("rounded up past the device");
    assert!(
        matches!(
            error,
            Error::SmSplit {
                groups: 33,
                sms_per_group: 4,
                available: 132,
                made: Some(16)
            }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("only 16 of 33"), "{error}");

    // A group cannot be split again; a green context's resource can.
    let split = sms.split(2, 16).unwrap();
    assert_eq!(split.groups.len(), 2);
    assert!(split.groups.iter().all(|g| g.sm_count() == 16));
    assert_eq!(split.remainder.map(|r| r.sm_count()), Some(100));
    assert!(matches!(split.groups[0].split(1, 8), Err(Error::InvalidValue(_))));
    let green = GreenContext::new(&device, &split.groups[..1]).unwrap();
    let inner = green.sm_resource().unwrap();
    assert_eq!(inner.sm_count(), 16);
    oversized(inner.split(1, 17), 16);
    let halves = inner.split(2, 8).unwrap();
    assert_eq!(halves.groups.len(), 2);
    assert!(halves.remainder.is_none());
    drop(green);
    assert!(fake.counts().is_clean(), "{}", fake.counts());
}

#[test]
fn a_green_stream_runs_kernels_of_the_primary_context_and_keeps_its_green_context() {
    let fake = fake::session();
    let device = Device::get(0).unwrap();
    let split = device.sm_resource().unwrap().split(1, 16).unwrap();
    // Two groups of one split make one green context too.
    let both = device.sm_resource().unwrap().split(2, 8).unwrap();
    let pair = GreenContext::new(&device, &both.groups).unwrap();
    assert_eq!(pair.sm_resource().unwrap().sm_count(), 16);
    drop(pair);

    let green = GreenContext::new(&device, &split.groups).unwrap();
    assert_eq!(green.device(), device);
    let context = Context::primary(&device).unwrap();
    assert_eq!(green.context(), &context);
    // SAFETY: the handle is only compared.
    assert_eq!(unsafe { green.raw_context().unwrap() }, unsafe { context.as_raw() });
    let stream = green.stream().unwrap();
    assert_eq!(stream.context(), &context);
    let module = Module::from_ptx(&context, fake::KERNELS).unwrap();
    let fill = module.function("fill").unwrap();
    let mut out = DeviceBuffer::<f32>::zeroed(&context, 64).unwrap();
    drop(green);
    // SAFETY: `fill` writes 64 floats of a 64-float buffer.
    unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(64), (&mut out, 2.5f32, 64u32)) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![2.5; 64]);
    // The green context (through its primary retain) lives until its last stream is gone (the
    // buffer the stream wrote keeps a clone of it).
    let retains = fake.live(Kind::PrimaryRetain);
    drop(stream);
    assert_eq!(fake.live(Kind::PrimaryRetain), retains);
    drop(out);
    assert_eq!(fake.live(Kind::PrimaryRetain), retains - 1);
    drop((fill, module, context));
    assert!(fake.counts().is_clean(), "{}", fake.counts());
}

#[test]
fn resources_of_another_device_or_split_are_refused() {
    let fake = fake::session();
    let (zero, one) = (Device::get(0).unwrap(), Device::get(1).unwrap());
    let first = zero.sm_resource().unwrap().split(2, 16).unwrap();
    let second = zero.sm_resource().unwrap().split(2, 16).unwrap();
    let other = one.sm_resource().unwrap();
    for resources in [
        vec![],
        vec![other],
        vec![first.groups[0], second.groups[1]],
        vec![zero.sm_resource().unwrap(), first.groups[0]],
    ] {
        let error = GreenContext::new(&zero, &resources).expect_err("refused");
        assert!(matches!(error, Error::InvalidValue(_)), "{error:?}");
    }
    assert!(fake.counts().is_clean(), "{}", fake.counts());
}

#[test]
fn every_failure_point_of_a_green_context_leaks_nothing() {
    let fake = fake::session();
    for deferred in [false, true] {
        fake.set_deferred(deferred);
        let report = faults::exercise(&fake, "green context", &|| {
            let device = Device::get(0)?;
            let split = device.sm_resource()?.split(1, 16)?;
            let green = GreenContext::new(&device, &split.groups)?;
            let stream = green.stream()?;
            let module = Module::from_ptx(green.context(), fake::KERNELS)?;
            let fill = module.function("fill")?;
            let mut out = DeviceBuffer::<f32>::zeroed(green.context(), 16)?;
            TiledTensorMap::new(TensorDataType::F32, &[16], &[], &[4]).encode(&out)?;
            // [C, W, N] = [4, 2, 2] floats: 64 bytes, the buffer's.
            Im2colTensorMap::new(TensorDataType::F32, &[4, 2, 2], &[16, 32], &[0], &[0], 4, 1).encode(&out)?;
            let held = green.sm_resource()?;
            tests::sequences::expect("the group's SMs", held.sm_count() >= 16, true)?;
            // SAFETY: only read, while `green` is alive; never made current.
            tests::sequences::expect("a context handle", unsafe { green.raw_context()? }.is_null(), false)?;
            let (_, greatest) = green.context().stream_priority_range()?;
            drop(green.stream_with_priority(greatest)?);
            drop(green);
            // SAFETY: `fill` writes 16 floats of a 16-float buffer.
            unsafe { stream.launch(&fill, &LaunchConfig::for_num_elems(16), (&mut out, 1.0f32, 16u32))? };
            stream.synchronize()?;
            tests::sequences::expect("filled", out.to_vec()?, vec![1.0; 16])
        });
        assert!(report.points > 50, "{} points", report.points);
        let problems: Vec<String> = report.failures.into_iter().chain(report.skipped_releases).collect();
        assert!(problems.is_empty(), "{problems:#?}");
    }
    fake.set_deferred(false);
}
