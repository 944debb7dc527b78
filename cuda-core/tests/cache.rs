//! The kernel cache, with real NVRTC compiles: hits and misses, keys, damaged entries, and
//! several processes racing on one key.

mod common;

use std::process::{Command, Stdio};

use cuda_core::{Arch, CacheOutcome, CompileTarget, KernelCache, Program, ProgramOptions};

fn program() -> Program {
    Program::new(common::TEMPLATE_ADD, ProgramOptions::for_arch(Arch::Sm(90))).with_name_expressions(["add<float>"])
}

#[test]
fn miss_then_memory_hit_then_disk_hit() {
    let dir = common::temp_dir("hits");
    let cache = KernelCache::with_dir(&dir).unwrap();
    let (compiled, outcome) = program().compile_in(&cache, CompileTarget::Ptx).unwrap();
    assert_eq!(outcome, CacheOutcome::Compiled);
    let (again, outcome) = program().compile_in(&cache, CompileTarget::Ptx).unwrap();
    assert_eq!(outcome, CacheOutcome::MemoryHit);
    assert_eq!(again.code(), compiled.code());

    let key = program().cache_key(CompileTarget::Ptx).unwrap();
    assert!(cache.entry_path(&key).unwrap().is_file(), "the entry is on disk");

    let fresh = KernelCache::with_dir(&dir).unwrap();
    let (from_disk, outcome) = program().compile_in(&fresh, CompileTarget::Ptx).unwrap();
    assert_eq!(outcome, CacheOutcome::DiskHit);
    assert_eq!(from_disk.code(), compiled.code());
    assert_eq!(
        from_disk.lowered_name("add<float>").unwrap(),
        compiled.lowered_name("add<float>").unwrap()
    );
    assert_eq!(from_disk.arch(), Some(Arch::Sm(90)));
    let (_, outcome) = program().compile_in(&fresh, CompileTarget::Ptx).unwrap();
    assert_eq!(outcome, CacheOutcome::MemoryHit);

    assert_eq!((cache.stats().compiles, cache.stats().memory_hits), (1, 1));
    assert_eq!(
        (
            fresh.stats().disk_hits,
            fresh.stats().memory_hits,
            fresh.stats().compiles
        ),
        (1, 1, 0)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn memory_hit_costs_microseconds() {
    let cache = KernelCache::in_memory();
    program().compile_in(&cache, CompileTarget::Ptx).unwrap();
    let program = program();
    let rounds = 200;
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        let (_, outcome) = program.compile_in(&cache, CompileTarget::Ptx).unwrap();
        assert_eq!(outcome, CacheOutcome::MemoryHit);
    }
    let each = start.elapsed() / rounds;
    println!("memory hit: {each:?} per compile() (this build's optimisation level)");
    assert!(each < std::time::Duration::from_millis(1), "a memory hit took {each:?}");
}

#[test]
fn key_changes_with_every_input() {
    let base = program();
    let key = |p: &Program, target| p.cache_key(target).unwrap();
    let reference = key(&base, CompileTarget::Ptx);
    assert_eq!(
        reference,
        key(&program(), CompileTarget::Ptx),
        "the key is deterministic"
    );
    let with = |options: ProgramOptions| Program::new(base.source(), options).with_name_expressions(["add<float>"]);
    let o = base.options().clone();
    let variants = [
        (
            "source",
            Program::new(format!("{} ", base.source()), o.clone()).with_name_expressions(["add<float>"]),
        ),
        (
            "name expressions",
            Program::new(base.source(), o.clone()).with_name_expressions(["add<double>"]),
        ),
        ("no name expressions", Program::new(base.source(), o.clone())),
        (
            "arch",
            with(ProgramOptions {
                arch: Some(Arch::Sm(80)),
                ..o.clone()
            }),
        ),
        (
            "virtual arch",
            with(ProgramOptions {
                arch: Some(Arch::Compute(90)),
                ..o.clone()
            }),
        ),
        (
            "std",
            with(ProgramOptions {
                std: Some(cuda_core::Std::Cpp20),
                ..o.clone()
            }),
        ),
        (
            "debug",
            with(ProgramOptions {
                debug: true,
                ..o.clone()
            }),
        ),
        (
            "lineinfo",
            with(ProgramOptions {
                lineinfo: true,
                ..o.clone()
            }),
        ),
        (
            "define",
            with(ProgramOptions {
                defines: vec![("X".into(), None)],
                ..o.clone()
            }),
        ),
        (
            "define value",
            with(ProgramOptions {
                defines: vec![("X".into(), Some("1".into()))],
                ..o.clone()
            }),
        ),
        (
            "include path",
            with(ProgramOptions {
                include_paths: vec!["/inc".into()],
                ..o.clone()
            }),
        ),
        (
            "header",
            with(ProgramOptions {
                headers: vec![("h.h".into(), "int a;".into())],
                ..o.clone()
            }),
        ),
        (
            "header contents",
            with(ProgramOptions {
                headers: vec![("h.h".into(), "int b;".into())],
                ..o.clone()
            }),
        ),
        (
            "fast math",
            with(ProgramOptions {
                fast_math: true,
                ..o.clone()
            }),
        ),
        (
            "rdc",
            with(ProgramOptions {
                relocatable_device_code: true,
                ..o.clone()
            }),
        ),
        (
            "extra option",
            with(ProgramOptions {
                extra_options: vec!["--device-as-default-execution-space".into()],
                ..o.clone()
            }),
        ),
        (
            "program name",
            with(ProgramOptions {
                name: Some("other.cu".into()),
                ..o.clone()
            }),
        ),
    ];
    let grown = Program::new(base.source(), o.clone());
    let before = key(&grown, CompileTarget::Ptx);
    let grown = grown.with_name_expressions(["add<float>"]);
    assert_ne!(
        key(&grown, CompileTarget::Ptx),
        before,
        "adding name expressions after a key was computed"
    );
    assert_eq!(key(&grown, CompileTarget::Ptx), reference);
    let mut seen = std::collections::HashSet::from([reference]);
    for (what, variant) in &variants {
        assert!(
            seen.insert(key(variant, CompileTarget::Ptx)),
            "changing the {what} must change the key"
        );
    }
    for target in [CompileTarget::Cubin, CompileTarget::LtoIr] {
        assert!(seen.insert(key(&base, target)), "target {target:?} must change the key");
    }
    let untouched = with(ProgramOptions { cache: false, ..o });
    assert_eq!(
        key(&untouched, CompileTarget::Ptx),
        reference,
        "the cache switch is not part of the key"
    );
}

#[test]
fn damaged_entry_is_detected_and_recompiled() {
    let dir = common::temp_dir("corrupt");
    let key = program().cache_key(CompileTarget::Cubin).unwrap();
    let (good, _) = program()
        .compile_in(&KernelCache::with_dir(&dir).unwrap(), CompileTarget::Cubin)
        .unwrap();
    let path = KernelCache::with_dir(&dir).unwrap().entry_path(&key).unwrap();
    let intact = std::fs::read(&path).unwrap();

    let mut flipped = intact.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 0x01;
    for (what, damaged) in [
        ("a flipped bit", flipped),
        ("a truncated file", intact[..intact.len() - 7].to_vec()),
    ] {
        std::fs::write(&path, &damaged).unwrap();
        let cache = KernelCache::with_dir(&dir).unwrap();
        let (code, outcome) = program().compile_in(&cache, CompileTarget::Cubin).unwrap();
        assert_eq!(outcome, CacheOutcome::Compiled, "{what} is not a hit");
        assert_eq!(cache.stats().corrupt_entries, 1, "{what} is counted");
        assert_eq!(code.code(), good.code());
        assert_eq!(
            std::fs::read(&path).unwrap(),
            intact,
            "{what} is replaced by a good entry"
        );
        let (_, outcome) = program()
            .compile_in(&KernelCache::with_dir(&dir).unwrap(), CompileTarget::Cubin)
            .unwrap();
        assert_eq!(
            outcome,
            CacheOutcome::DiskHit,
            "after {what} the rewritten entry is used"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn disabled_cache_and_cache_option_bypass() {
    let (_, outcome) = program()
        .compile_in(&KernelCache::disabled(), CompileTarget::Ptx)
        .unwrap();
    assert_eq!(outcome, CacheOutcome::Bypassed);
    let off = Program::new(
        common::MY_ADD,
        ProgramOptions {
            cache: false,
            ..ProgramOptions::for_arch(Arch::Sm(90))
        },
    );
    let (_, outcome) = off.compile_with_outcome(CompileTarget::Ptx).unwrap();
    assert_eq!(outcome, CacheOutcome::Bypassed);
}

#[test]
fn unusable_cache_dir_is_an_error() {
    let dir = common::temp_dir("not-a-dir");
    let file = dir.join("file");
    std::fs::write(&file, b"x").unwrap();
    let error = KernelCache::with_dir(file.join("kernels")).unwrap_err();
    assert!(matches!(error, cuda_core::Error::Cache { .. }), "{error}");
    let _ = std::fs::remove_dir_all(dir);
}

const RACE_DIR: &str = "CUDA_CORE_TEST_RACE_DIR";
const RACE_ROUNDS: usize = 6;

/// Several processes compile the same program into one folder at once, each round with a fresh
/// cache and after deleting the entry, so writes and reads of one file overlap. No process may
/// ever see a damaged entry, and all must get identical code.
#[test]
fn processes_racing_on_one_key() {
    let dir = common::temp_dir("race");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..3)
        .map(|_| {
            Command::new(&exe)
                .args(["race_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
                .env(RACE_DIR, &dir)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut outcomes = String::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        outcomes.extend(
            stdout
                .lines()
                .filter_map(|l| l.find("race: pid").map(|at| format!("{}\n", &l[at..]))),
        );
    }
    println!("{outcomes}");
    assert_eq!(
        outcomes.lines().count(),
        3 * RACE_ROUNDS,
        "every child reported every round"
    );
    let reference = Program::new(common::TEMPLATE_ADD, ProgramOptions::for_arch(Arch::Sm(90)))
        .with_name_expressions(["add<float>"])
        .compile_uncached(CompileTarget::Cubin)
        .unwrap();
    let (cached, outcome) = program()
        .compile_in(&KernelCache::with_dir(&dir).unwrap(), CompileTarget::Cubin)
        .unwrap();
    assert_eq!(outcome, CacheOutcome::DiskHit);
    assert_eq!(cached.code(), reference.code());
    let _ = std::fs::remove_dir_all(dir);
}

/// The child side of [`processes_racing_on_one_key`]; does nothing when run on its own.
#[test]
#[ignore = "run by processes_racing_on_one_key"]
fn race_child() {
    let Some(dir) = std::env::var_os(RACE_DIR) else {
        println!("race_child only runs as a child of processes_racing_on_one_key");
        return;
    };
    let key = program().cache_key(CompileTarget::Cubin).unwrap();
    let mut first: Option<Vec<u8>> = None;
    for round in 0..RACE_ROUNDS {
        let cache = KernelCache::with_dir(&dir).unwrap();
        if round % 2 == 1 {
            let _ = std::fs::remove_file(cache.entry_path(&key).unwrap());
        }
        let (code, outcome) = program().compile_in(&cache, CompileTarget::Cubin).unwrap();
        let stats = cache.stats();
        assert_eq!(stats.corrupt_entries, 0, "a damaged or torn entry was read");
        assert_eq!(stats.write_failures, 0, "a write failed");
        assert!(
            matches!(outcome, CacheOutcome::Compiled | CacheOutcome::DiskHit),
            "{outcome:?}"
        );
        assert_eq!(code.lowered_name("add<float>").unwrap(), "_Z3addIfEvPKT_S2_PS0_j");
        match &first {
            Some(first) => assert_eq!(first, code.code(), "every round gets the same code"),
            None => first = Some(code.code().to_vec()),
        }
        println!("race: pid {} round {round}: {outcome:?}", std::process::id());
    }
}

const GLOBAL_CHILD: &str = "CUDA_CORE_TEST_GLOBAL_CACHE";

/// Runs [`global_cache_child`] under one environment and returns its output.
fn global_cache_with(env: &[(&str, &std::path::Path)], remove: &[&str], expect: &str) -> String {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["global_cache_child", "--exact", "--ignored", "--nocapture"])
        .env(GLOBAL_CHILD, expect);
    for name in ["CUDA_RS_CACHE", "CUDA_RS_CACHE_DIR", "XDG_CACHE_HOME"]
        .iter()
        .chain(remove)
    {
        command.env_remove(name);
    }
    for (name, value) in env {
        command.env(name, value);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("global-cache: checked"), "{stdout}");
    stdout
}

/// `KernelCache::global` follows `CUDA_RS_CACHE_DIR`, `XDG_CACHE_HOME`, `HOME` and `CUDA_RS_CACHE=0`.
#[test]
fn global_cache_follows_the_environment() {
    let dir = common::temp_dir("global");
    let explicit = dir.join("explicit");
    global_cache_with(
        &[("CUDA_RS_CACHE_DIR", &explicit), ("XDG_CACHE_HOME", &dir.join("xdg"))],
        &[],
        "cached",
    );
    assert!(
        std::fs::read_dir(&explicit).unwrap().count() == 1,
        "one entry in CUDA_RS_CACHE_DIR"
    );
    assert!(!dir.join("xdg").exists(), "CUDA_RS_CACHE_DIR wins over XDG_CACHE_HOME");

    global_cache_with(&[("XDG_CACHE_HOME", &dir.join("xdg"))], &[], "cached");
    assert_eq!(std::fs::read_dir(dir.join("xdg/cuda-rs/kernels")).unwrap().count(), 1);

    global_cache_with(&[("HOME", &dir.join("home"))], &[], "cached");
    assert_eq!(
        std::fs::read_dir(dir.join("home/.cache/cuda-rs/kernels"))
            .unwrap()
            .count(),
        1
    );

    let off = dir.join("off");
    global_cache_with(
        &[
            ("CUDA_RS_CACHE_DIR", &off),
            ("CUDA_RS_CACHE", std::path::Path::new("0")),
        ],
        &[],
        "off",
    );
    assert!(!off.exists(), "CUDA_RS_CACHE=0 writes nothing");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
#[ignore = "run by global_cache_follows_the_environment"]
fn global_cache_child() {
    let Ok(expect) = std::env::var(GLOBAL_CHILD) else {
        println!("global_cache_child only runs as a child of global_cache_follows_the_environment");
        return;
    };
    let (_, first) = program().compile_with_outcome(CompileTarget::Ptx).unwrap();
    let (_, second) = program().compile_with_outcome(CompileTarget::Ptx).unwrap();
    match expect.as_str() {
        "cached" => {
            assert!(KernelCache::global().is_enabled());
            assert_eq!((first, second), (CacheOutcome::Compiled, CacheOutcome::MemoryHit));
        }
        _ => {
            assert!(!KernelCache::global().is_enabled());
            assert_eq!((first, second), (CacheOutcome::Bypassed, CacheOutcome::Bypassed));
        }
    }
    println!("global-cache: checked");
}
