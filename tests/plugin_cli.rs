//! `wasmlet plugin validate`, `test`, `new`, `push`, `pull` and `sign` driven through the
//! binary (the CLI wiring of the author tools in wasmlet-plugin-host), with real components
//! built from plugins/ and tests/guests/ (scripts/build-plugins.sh), and a real registry on
//! loopback for the OCI commands.

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

#[allow(dead_code)] // blob_data is for tests/plugins
#[path = "support/oci_registry.rs"]
mod oci_registry;

/// `openssl` with `args`, which must succeed.
fn openssl(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn plugin_push_pull_and_sign_commands() {
    let Some(server) = oci_registry::TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_wasmlet"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let component = wasm("eviction_batch_first");
    let tag = server.reference("cli/evict:v1");
    let (ok, out, err) = run(&["plugin", "push", component.to_str().unwrap(), &tag]);
    assert!(ok, "{err}");
    let digest = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("digest: "))
        .unwrap_or_else(|| panic!("no digest in {out}"))
        .to_string();
    assert!(out.contains("world: eviction-policy"), "{out}");

    // Only a plugin component is pushed.
    let garbage = dir.path().join("garbage.wasm");
    std::fs::write(&garbage, b"\0asm garbage").unwrap();
    let (ok, _, err) = run(&["plugin", "push", garbage.to_str().unwrap(), &tag]);
    assert!(!ok && err.contains("not a valid component"), "{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "push",
        component.to_str().unwrap(),
        "cli/evict:v1",
    ]);
    assert!(!ok && err.contains("oci://"), "{err}");

    let (ok, out, err) = run(&["plugin", "pull", &tag, "--out", "pulled.wasm"]);
    assert!(ok, "{err}");
    assert!(out.contains(&digest), "{out}");
    assert_eq!(
        std::fs::read(dir.path().join("pulled.wasm")).unwrap(),
        std::fs::read(&component).unwrap()
    );

    // A key pair made with openssl, as the docs say; `sign` resolves the tag to its digest.
    openssl(
        dir.path(),
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "key.pem",
        ],
    );
    openssl(
        dir.path(),
        &["pkey", "-in", "key.pem", "-pubout", "-out", "key.pub"],
    );
    openssl(
        dir.path(),
        &[
            "genpkey",
            "-algorithm",
            "EC",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-out",
            "other.pem",
        ],
    );
    openssl(
        dir.path(),
        &["pkey", "-in", "other.pem", "-pubout", "-out", "other.pub"],
    );
    let (ok, out, err) = run(&[
        "plugin", "pull", &tag, "--key", "key.pub", "--out", "x.wasm",
    ]);
    assert!(!ok && err.contains("unsigned"), "{out}{err}");
    let (ok, out, err) = run(&["plugin", "sign", &tag, "--key", "key.pem"]);
    assert!(ok, "{err}");
    assert!(out.contains(&digest), "{out}");
    let (ok, _, err) = run(&[
        "plugin", "pull", &tag, "--key", "key.pub", "--out", "x.wasm",
    ]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&[
        "plugin",
        "pull",
        &tag,
        "--key",
        "other.pub",
        "--out",
        "x.wasm",
    ]);
    assert!(
        !ok && err.contains("not signed by the configured key"),
        "{err}"
    );

    // The signature is stored as cosign stores one, and openssl verifies it: the manifest tagged
    // sha256-<hex>.sig, a simple-signing payload layer, the base64 DER signature annotation.
    let base = format!("http://{}/v2/cli/evict", server.address());
    let sig_tag = digest.replace(':', "-") + ".sig";
    let manifest: serde_json::Value = serde_json::from_str(
        &ureq::get(&format!("{base}/manifests/{sig_tag}"))
            .set("Accept", "application/vnd.oci.image.manifest.v1+json")
            .call()
            .unwrap()
            .into_string()
            .unwrap(),
    )
    .unwrap();
    let layer = &manifest["layers"][0];
    assert_eq!(
        layer["mediaType"],
        "application/vnd.dev.cosign.simplesigning.v1+json"
    );
    let payload = ureq::get(&format!(
        "{base}/blobs/{}",
        layer["digest"].as_str().unwrap()
    ))
    .call()
    .unwrap()
    .into_string()
    .unwrap();
    let payload_json: serde_json::Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(
        payload_json["critical"]["image"]["docker-manifest-digest"],
        digest.as_str()
    );
    assert_eq!(
        payload_json["critical"]["identity"]["docker-reference"],
        format!("{}/cli/evict", server.address())
    );
    std::fs::write(dir.path().join("payload.json"), &payload).unwrap();
    let signature = layer["annotations"]["dev.cosignproject.cosign/signature"]
        .as_str()
        .unwrap();
    std::fs::write(dir.path().join("sig.b64"), signature).unwrap();
    openssl(
        dir.path(),
        &["base64", "-d", "-A", "-in", "sig.b64", "-out", "sig.der"],
    );
    let verified = openssl(
        dir.path(),
        &[
            "dgst",
            "-sha256",
            "-verify",
            "key.pub",
            "-signature",
            "sig.der",
            "payload.json",
        ],
    );
    assert!(verified.contains("Verified OK"), "{verified}");
}
