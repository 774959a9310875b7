//! `wasmlet plugin validate`, `test` and `new` driven through the binary (the CLI wiring of the
//! author tools in wasmlet-plugin-host), with real components built from plugins/ and
//! tests/guests/ (scripts/build-plugins.sh).

use std::path::{Path, PathBuf};

/// A component built by the test command (`cargo build --target wasm32-wasip2`).
fn wasm(name: &str) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for dir in [
        "plugins/target/wasm32-wasip2/release",
        "tests/guests/target/wasm32-wasip2/release",
    ] {
        let path = root.join(dir).join(format!("{name}.wasm"));
        if path.exists() {
            return path.canonicalize().unwrap();
        }
    }
    panic!("{name}.wasm is not built: run scripts/build-plugins.sh (the test command does)");
}

#[test]
fn plugin_validate_and_test_commands() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasmlet"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let file = wasm("eviction_batch_first");
    let (ok, out, err) = run(&["plugin", "validate", file.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.contains("world: eviction-policy") && out.contains("sha256: "),
        "{out}"
    );

    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        wasm("guest_loop").to_str().unwrap(),
        "--config",
        r#"{"faultIn":"self-check"}"#,
        "--deadline-ms",
        "20",
    ]);
    assert!(!ok);
    assert!(err.contains("deadline"), "{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        file.to_str().unwrap(),
        "--world",
        "gc-strategy",
    ]);
    assert!(
        !ok && err.contains("does not implement world gc-strategy"),
        "{err}"
    );

    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/plugins/snapshot.yaml");
    let (ok, out, err) = run(&[
        "plugin",
        "test",
        file.to_str().unwrap(),
        "--fixture",
        fixture.to_str().unwrap(),
        "--config",
        r#"{"protectNamespaces":["kube-system"]}"#,
    ]);
    assert!(ok, "{err}");
    let result: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(result["decidedBy"]["kind"], "plugin", "{result}");
    assert_eq!(
        result["order"][0], "default/report",
        "the batch pod first: {result}"
    );
    assert!(!result["order"]
        .as_array()
        .unwrap()
        .iter()
        .any(|p| p == "kube-system/dns"));
    assert_eq!(result["builtInOrder"][0], "default/cache", "{result}");

    // A plugin that reads a file validates only with its directory granted.
    let keep = tempfile::tempdir().unwrap();
    std::fs::write(keep.path().join("prefixes"), "registry.local/\n").unwrap();
    let gc = wasm("gc_keep_prefixes");
    let config = r#"{"keepPrefixesFile":"/keep/prefixes"}"#;
    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        gc.to_str().unwrap(),
        "--config",
        config,
    ]);
    assert!(!ok && err.contains("capabilities.directories"), "{err}");
    let grant = format!("{}:/keep", keep.path().display());
    let (ok, out, err) = run(&[
        "plugin",
        "validate",
        gc.to_str().unwrap(),
        "--config",
        config,
        "--grant-dir",
        &grant,
    ]);
    assert!(ok && out.contains("world: gc-strategy"), "{out}{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "validate",
        gc.to_str().unwrap(),
        "--grant-dir",
        "x:rel",
    ]);
    assert!(!ok && err.contains("must be absolute"), "{err}");
}

#[test]
fn plugin_new_writes_a_crate_that_builds_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let sdk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugins/sdk");
    let wasmlet = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wasmlet"))
            .args(args)
            .output()
            .unwrap()
    };
    for world in [
        "eviction-policy",
        "gc-strategy",
        "probe-handler",
        "lifecycle-hooks",
    ] {
        let out = wasmlet(&[
            "plugin",
            "new",
            &format!("my-{world}"),
            "--world",
            world,
            "--dir",
            dir.path().to_str().unwrap(),
            "--sdk",
            sdk.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lib =
            std::fs::read_to_string(dir.path().join(format!("my-{world}/src/lib.rs"))).unwrap();
        assert!(lib.contains("export!("), "{lib}");
    }
    let again = wasmlet(&[
        "plugin",
        "new",
        "my-gc-strategy",
        "--world",
        "gc-strategy",
        "--dir",
        dir.path().to_str().unwrap(),
        "--sdk",
        sdk.to_str().unwrap(),
    ]);
    assert!(
        !again.status.success()
            && String::from_utf8_lossy(&again.stderr).contains("already exists")
    );

    // The generated eviction plugin builds as a component and passes validation.
    let krate = dir.path().join("my-eviction-policy");
    let build = std::process::Command::new("cargo")
        .args(["build", "--release", "--target", "wasm32-wasip2", "--quiet"])
        .current_dir(&krate)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/guests/target/plugin-new"),
        )
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{}",
        String::from_utf8_lossy(&build.stderr)
    );
    let wasm_file = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/guests/target/plugin-new/wasm32-wasip2/release/my_eviction_policy.wasm");
    let out = wasmlet(&["plugin", "validate", wasm_file.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("world: eviction-policy"));
}
