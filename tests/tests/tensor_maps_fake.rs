//! cuda-driver's tensor maps on the stand-in driver: a tiled and an im2col map encode over device
//! memory and pass to a kernel as 128 bytes by value; every rule `cuTensorMapEncodeTiled` and
//! `cuTensorMapEncodeIm2col` document is refused on the host with the `TensorMapError` naming it
//! (no driver call made), and so is a tensor reaching past its memory.

use cuda_driver::{
    Context, Device, DeviceBuffer, Error, Im2colTensorMap, KernelArg, L2Promotion, OobFill, Stream, TensorDataType,
    TensorInterleave, TensorMapError, TensorSwizzle, TiledTensorMap,
};
use tests::fake;

const F32: TensorDataType = TensorDataType::F32;

/// A rule, what encoding a description that breaks it gave, and whether that is its error.
type Case<'a> = (
    &'static str,
    cuda_driver::Result<cuda_driver::TensorMap<'a>>,
    fn(&TensorMapError) -> bool,
);

fn refused(result: cuda_driver::Result<cuda_driver::TensorMap<'_>>) -> TensorMapError {
    match result {
        Err(Error::TensorMap(error)) => {
            assert!(!error.to_string().is_empty());
            error
        }
        other => panic!("expected a TensorMapError, got {other:?}"),
    }
}

#[test]
fn tiled_and_im2col_maps_encode_over_their_memory_and_pass_by_value() {
    let _fake = fake::session();
    let context = Context::primary(&Device::get(0).unwrap()).unwrap();
    let (rows, cols) = (64u64, 128u64);
    let matrix = DeviceBuffer::<f32>::zeroed(&context, (rows * cols) as usize).unwrap();
    let tiled = TiledTensorMap::new(F32, &[cols, rows], &[cols * 4], &[32, 16])
        .swizzle(TensorSwizzle::Bytes128)
        .l2_promotion(L2Promotion::Bytes128)
        .oob_fill(OobFill::NanRequestZeroFma);
    let map = tiled.encode(&matrix).unwrap();
    // The stand-in writes the address, rank and dims into the opaque words.
    assert_eq!(map.as_raw().opaque[..4], [matrix.as_ptr_value(), 2, cols, rows]);
    let stream = Stream::new(&context).unwrap();
    assert_eq!((&map).param_size(), 128);
    assert_eq!((&map).param_ptr() as usize % 64, 0);
    (&map).check_use(&context, &stream).unwrap();
    let other = Context::primary(&Device::get(1).unwrap()).unwrap();
    assert!(matches!(
        (&map).check_use(&other, &stream),
        Err(Error::WrongContext { .. })
    ));

    // NHWC 2 x 8 x 8 x 16 f16 for im2col; a mutable map over it.
    let mut image = DeviceBuffer::<u16>::zeroed(&context, 2 * 8 * 8 * 16).unwrap();
    let im2col = Im2colTensorMap::new(
        TensorDataType::F16,
        &[16, 8, 8, 2],
        &[32, 256, 2048],
        &[-1, -1],
        &[1, 1],
        16,
        64,
    );
    let map = im2col.encode_mut(&mut image).unwrap();
    assert_eq!(map.as_raw().opaque[1], 4);
    drop((image, matrix, stream, other, context));
}

trait PtrValue {
    fn as_ptr_value(&self) -> u64;
}

impl<T: cuda_driver::DeviceCopy> PtrValue for DeviceBuffer<T> {
    fn as_ptr_value(&self) -> u64 {
        cuda_driver::DeviceMemory::device_ptr(self)
    }
}

#[test]
fn every_documented_rule_is_checked_on_the_host() {
    let fake = fake::session();
    let context = Context::primary(&Device::get(0).unwrap()).unwrap();
    let memory = DeviceBuffer::<u8>::zeroed(&context, 1 << 20).unwrap();
    let tiled = |dims: &[u64], strides: &[u64], boxes: &[u32]| TiledTensorMap::new(F32, dims, strides, boxes);
    let (at8, at16) = (memory.slice(8..), memory.slice(16..));
    fake.reset();

    use TensorMapError as E;
    let cases: Vec<Case<'_>> = vec![
        ("rank 0", tiled(&[], &[], &[]).encode(&memory), |e| {
            matches!(
                e,
                E::Rank {
                    rank: 0,
                    min: 1,
                    max: 5
                }
            )
        }),
        ("rank 6", tiled(&[4; 6], &[16; 5], &[4; 6]).encode(&memory), |e| {
            matches!(e, E::Rank { rank: 6, .. })
        }),
        (
            "interleave needs rank 3",
            tiled(&[8, 8], &[32], &[8, 8])
                .interleave(TensorInterleave::Bytes16)
                .encode(&memory),
            |e| matches!(e, E::Rank { rank: 2, min: 3, .. }),
        ),
        ("strides length", tiled(&[8, 8], &[], &[4, 4]).encode(&memory), |e| {
            matches!(
                e,
                E::Length {
                    what: "global strides",
                    expected: 1,
                    given: 0
                }
            )
        }),
        ("box length", tiled(&[8, 8], &[32], &[4]).encode(&memory), |e| {
            matches!(
                e,
                E::Length {
                    what: "box dims",
                    expected: 2,
                    given: 1
                }
            )
        }),
        (
            "element strides length",
            tiled(&[8, 8], &[32], &[4, 4]).element_strides(&[1]).encode(&memory),
            |e| {
                matches!(
                    e,
                    E::Length {
                        what: "element strides",
                        ..
                    }
                )
            },
        ),
        (
            "address 16-byte aligned",
            tiled(&[8, 8], &[32], &[4, 4]).encode(&at8),
            |e| matches!(e, E::Address { alignment: 16, .. }),
        ),
        (
            "address 32-byte aligned for 32-byte interleave",
            tiled(&[8, 8, 8], &[32, 256], &[8, 8, 8])
                .interleave(TensorInterleave::Bytes32)
                .swizzle(TensorSwizzle::Bytes32)
                .encode(&at16),
            |e| matches!(e, E::Address { alignment: 32, .. }),
        ),
        ("global dim zero", tiled(&[8, 0], &[32], &[4, 4]).encode(&memory), |e| {
            matches!(e, E::GlobalDim { index: 1, dim: 0 })
        }),
        (
            "global dim above 2^32",
            tiled(&[(1 << 32) + 1], &[], &[4]).encode(&memory),
            |e| matches!(e, E::GlobalDim { index: 0, .. }),
        ),
        (
            "stride multiple of 16",
            tiled(&[8, 8], &[40], &[4, 4]).encode(&memory),
            |e| {
                matches!(
                    e,
                    E::StrideAlignment {
                        index: 1,
                        stride: 40,
                        multiple: 16
                    }
                )
            },
        ),
        (
            "stride multiple of 32 for 32-byte interleave",
            tiled(&[8, 8, 8], &[48, 384], &[8, 8, 8])
                .interleave(TensorInterleave::Bytes32)
                .swizzle(TensorSwizzle::Bytes32)
                .encode(&memory),
            |e| matches!(e, E::StrideAlignment { multiple: 32, .. }),
        ),
        (
            "stride below 2^40",
            tiled(&[8, 2], &[1 << 40], &[4, 2]).encode(&memory),
            |e| matches!(e, E::StrideTooLarge { index: 1, .. }),
        ),
        ("box dim zero", tiled(&[8, 8], &[32], &[4, 0]).encode(&memory), |e| {
            matches!(e, E::BoxDim { index: 1, dim: 0 })
        }),
        (
            "box dim above 256",
            tiled(&[1024, 8], &[4096], &[4, 257]).encode(&memory),
            |e| matches!(e, E::BoxDim { index: 1, dim: 257 }),
        ),
        (
            "box inner bytes multiple of 16",
            tiled(&[8, 8], &[32], &[3, 4]).encode(&memory),
            |e| matches!(e, E::BoxInnerBytes { bytes: 12 }),
        ),
        (
            "element stride zero",
            tiled(&[8, 8], &[32], &[4, 4]).element_strides(&[1, 0]).encode(&memory),
            |e| matches!(e, E::ElementStride { index: 1, stride: 0 }),
        ),
        (
            "element stride above 8",
            tiled(&[8, 8], &[32], &[4, 4]).element_strides(&[1, 9]).encode(&memory),
            |e| matches!(e, E::ElementStride { index: 1, stride: 9 }),
        ),
        (
            "32-byte interleave needs the 32-byte swizzle",
            tiled(&[8, 8, 8], &[32, 256], &[8, 8, 8])
                .interleave(TensorInterleave::Bytes32)
                .encode(&memory),
            |e| {
                matches!(
                    e,
                    E::InterleaveSwizzle {
                        swizzle: TensorSwizzle::None
                    }
                )
            },
        ),
        (
            "swizzle span bounds the inner box",
            tiled(&[64, 8], &[256], &[16, 4])
                .swizzle(TensorSwizzle::Bytes32)
                .encode(&memory),
            |e| {
                matches!(
                    e,
                    E::SwizzleSpan {
                        inner_bytes: 64,
                        span: 32
                    }
                )
            },
        ),
        (
            "NaN fill needs a float type",
            TiledTensorMap::new(TensorDataType::I32, &[8, 8], &[32], &[4, 4])
                .oob_fill(OobFill::NanRequestZeroFma)
                .encode(&memory),
            |e| {
                matches!(
                    e,
                    E::OobFillNotFloat {
                        data_type: TensorDataType::I32
                    }
                )
            },
        ),
        (
            "tensor inside its memory",
            tiled(&[1024, 257], &[4096], &[4, 4]).encode(&memory),
            |e| matches!(e, E::OutOfBounds { needed, available: 1048576 } if *needed == 4096 * 256 + 4096),
        ),
        (
            "im2col rank 3..=5",
            Im2colTensorMap::new(F32, &[8, 8], &[32], &[], &[], 8, 8).encode(&memory),
            |e| {
                matches!(
                    e,
                    E::Rank {
                        rank: 2,
                        min: 3,
                        max: 5
                    }
                )
            },
        ),
        (
            "im2col corner count",
            Im2colTensorMap::new(F32, &[8, 8, 8, 2], &[32, 256, 2048], &[0], &[0, 0], 8, 8).encode(&memory),
            |e| {
                matches!(
                    e,
                    E::Length {
                        what: "lower corner offsets",
                        expected: 2,
                        given: 1
                    }
                )
            },
        ),
        (
            "im2col rank-4 corner range",
            Im2colTensorMap::new(F32, &[8, 8, 8, 2], &[32, 256, 2048], &[0, -129], &[0, 0], 8, 8).encode(&memory),
            |e| {
                matches!(
                    e,
                    E::PixelCorner {
                        index: 1,
                        offset: -129,
                        rank: 4
                    }
                )
            },
        ),
        (
            "im2col rank-5 corner range",
            Im2colTensorMap::new(
                F32,
                &[8, 8, 8, 8, 2],
                &[32, 256, 2048, 16384],
                &[0, 0, 0],
                &[0, 16, 0],
                8,
                8,
            )
            .encode(&memory),
            |e| {
                matches!(
                    e,
                    E::PixelCorner {
                        index: 1,
                        offset: 16,
                        rank: 5
                    }
                )
            },
        ),
        (
            "im2col box not empty",
            Im2colTensorMap::new(F32, &[8, 4, 8, 2], &[32, 128, 1024], &[4, 0], &[0, 0], 8, 8).encode(&memory),
            |e| matches!(e, E::EmptyPixelBox { index: 1 }),
        ),
        (
            "im2col channels per pixel",
            Im2colTensorMap::new(F32, &[8, 8, 8, 2], &[32, 256, 2048], &[0, 0], &[0, 0], 257, 8).encode(&memory),
            |e| matches!(e, E::ChannelsPerPixel { channels: 257 }),
        ),
        (
            "im2col pixels per column",
            Im2colTensorMap::new(F32, &[8, 8, 8, 2], &[32, 256, 2048], &[0, 0], &[0, 0], 8, 1025).encode(&memory),
            |e| matches!(e, E::PixelsPerColumn { pixels: 1025 }),
        ),
        (
            "im2col swizzle span bounds the channels",
            Im2colTensorMap::new(F32, &[64, 8, 8, 2], &[256, 2048, 16384], &[0, 0], &[0, 0], 64, 8)
                .swizzle(TensorSwizzle::Bytes64)
                .encode(&memory),
            |e| {
                matches!(
                    e,
                    E::SwizzleSpan {
                        inner_bytes: 256,
                        span: 64
                    }
                )
            },
        ),
    ];
    for (rule, result, expected) in cases {
        let error = refused(result);
        assert!(expected(&error), "{rule}: {error:?}");
    }
    // Refused before any driver call.
    assert_eq!(fake.calls(), 0, "{}", fake.trace());
    drop(memory);
    drop(context);
    assert!(fake.counts().is_clean(), "{}", fake.counts());
}
