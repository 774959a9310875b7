//! Signatures across wasmlet and the real cosign (scripts/cosign.sh builds it from its Go
//! module), against the real registry on loopback: what `cosign sign --key` writes, in the
//! `.sig` tag layout and as a Sigstore bundle referrer (`--new-bundle-format`), is accepted by
//! `wasmlet plugin pull --key`; what `wasmlet plugin sign` writes with cosign's encrypted key
//! passes `cosign verify --key`; a signature for another digest, an altered payload or the
//! wrong key is refused by both. Everything runs offline (`--tlog-upload=false`,
//! `--insecure-ignore-tlog`).

use sha2::Digest as _;
use std::io::Read as _;
use std::path::PathBuf;
use std::process::Command;

use wasmlet_test_support::components::Component;
use wasmlet_test_support::{cosign, oci_registry};

const PASSWORD: &str = "correct horse";

/// Success, stdout and stderr of `command`.
fn outcome(command: &mut Command) -> (bool, String, String) {
    let out = command.output().expect("the command starts");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

/// One test's registry, cosign, working directory and key pairs (`cosign.key` with
/// [`PASSWORD`], `other.key` with another).
struct Setup {
    server: oci_registry::TestRegistry,
    cosign: PathBuf,
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Option<Self> {
        let cosign = cosign::binary()?;
        let server = oci_registry::TestRegistry::start()?;
        let dir = tempfile::tempdir().unwrap();
        let setup = Self {
            server,
            cosign,
            dir,
        };
        setup.cosign_ok(&["generate-key-pair"], PASSWORD);
        std::fs::create_dir(setup.dir.path().join("other")).unwrap();
        let (ok, _, err) = outcome(
            cosign::command(&setup.cosign, &setup.dir.path().join("other"), "other")
                .arg("generate-key-pair"),
        );
        assert!(ok, "cosign generate-key-pair: {err}");
        std::fs::write(
            setup.dir.path().join("trusted_root.json"),
            cosign::EMPTY_TRUSTED_ROOT,
        )
        .unwrap();
        let key = std::fs::read_to_string(setup.dir.path().join("cosign.key")).unwrap();
        assert!(
            key.starts_with("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----"),
            "{key}"
        );
        Some(setup)
    }

    /// `cosign ARGS` with `password`.
    fn cosign(&self, args: &[&str], password: &str) -> (bool, String, String) {
        outcome(cosign::command(&self.cosign, self.dir.path(), password).args(args))
    }

    fn cosign_ok(&self, args: &[&str], password: &str) -> String {
        let (ok, out, err) = self.cosign(args, password);
        assert!(ok, "cosign {args:?}:\n{out}\n{err}");
        out
    }

    /// `cosign sign --key cosign.key` of `repository@digest`, offline; `extra` adds flags.
    fn cosign_sign(&self, repository: &str, digest: &str, extra: &[&str]) {
        let image = format!("{}/{repository}@{digest}", self.server.address());
        let mut args = vec![
            "sign",
            "--key",
            "cosign.key",
            "--tlog-upload=false",
            "--allow-insecure-registry",
            "--yes",
        ];
        args.extend_from_slice(extra);
        args.push(&image);
        self.cosign_ok(&args, PASSWORD);
    }

    /// `cosign verify --key KEY` of `repository@digest`, offline (the empty trusted root lets
    /// it read bundles without sigstore's TUF repository).
    fn cosign_verify(&self, repository: &str, digest: &str, key: &str) -> (bool, String, String) {
        let image = format!("{}/{repository}@{digest}", self.server.address());
        self.cosign(
            &[
                "verify",
                "--key",
                key,
                "--insecure-ignore-tlog=true",
                "--allow-insecure-registry",
                "--trusted-root",
                "trusted_root.json",
                &image,
            ],
            "",
        )
    }

    /// `wasmlet ARGS` in the working directory with `COSIGN_PASSWORD` = `password`.
    fn wasmlet(&self, args: &[&str], password: Option<&str>) -> (bool, String, String) {
        let mut command = Command::new(env!("CARGO_BIN_EXE_wasmlet"));
        command.args(args).current_dir(self.dir.path());
        match password {
            Some(password) => command.env("COSIGN_PASSWORD", password),
            None => command.env_remove("COSIGN_PASSWORD"),
        };
        outcome(&mut command)
    }

    /// Pushes the plugin `name` to `repository:v1`; returns its manifest digest.
    fn push(&self, name: &str, repository: &str) -> String {
        let tag = self.server.reference(&format!("{repository}:v1"));
        let file = Component::named(name).path();
        let (ok, out, err) = self.wasmlet(&["plugin", "push", file.to_str().unwrap(), &tag], None);
        assert!(ok, "push {name}: {err}");
        out.lines()
            .find_map(|l| l.trim().strip_prefix("digest: "))
            .unwrap_or_else(|| panic!("no digest in {out}"))
            .to_string()
    }

    /// `wasmlet plugin pull oci://.../repository@digest --key KEY`.
    fn pull(&self, repository: &str, digest: &str, key: &str) -> (bool, String, String) {
        let reference = self.server.reference(&format!("{repository}@{digest}"));
        self.wasmlet(
            &[
                "plugin",
                "pull",
                &reference,
                "--key",
                key,
                "--out",
                "pulled.wasm",
            ],
            None,
        )
    }

    fn base(&self, repository: &str) -> String {
        format!("http://{}/v2/{repository}", self.server.address())
    }

    fn tags(&self, repository: &str) -> Vec<String> {
        let body = ureq::get(&format!("{}/tags/list", self.base(repository)))
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        let body: serde_json::Value = serde_json::from_str(&body).unwrap();
        body["tags"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_str().unwrap().to_string())
            .collect()
    }

    /// The bytes of a manifest or index.
    fn manifest_bytes(&self, repository: &str, reference: &str) -> Vec<u8> {
        let mut bytes = Vec::new();
        ureq::get(&format!("{}/manifests/{reference}", self.base(repository)))
            .set(
                "Accept",
                "application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json",
            )
            .call()
            .unwrap()
            .into_reader()
            .read_to_end(&mut bytes)
            .unwrap();
        bytes
    }

    fn manifest(&self, repository: &str, reference: &str) -> serde_json::Value {
        serde_json::from_slice(&self.manifest_bytes(repository, reference)).unwrap()
    }

    fn put_manifest(
        &self,
        repository: &str,
        reference: &str,
        manifest: &serde_json::Value,
    ) -> String {
        let bytes = serde_json::to_vec(manifest).unwrap();
        let media_type = manifest["mediaType"].as_str().unwrap().to_string();
        ureq::put(&format!("{}/manifests/{reference}", self.base(repository)))
            .set("Content-Type", &media_type)
            .send_bytes(&bytes)
            .unwrap();
        sha256(&bytes)
    }

    fn blob(&self, repository: &str, digest: &str) -> Vec<u8> {
        let mut bytes = Vec::new();
        ureq::get(&format!("{}/blobs/{digest}", self.base(repository)))
            .call()
            .unwrap()
            .into_reader()
            .read_to_end(&mut bytes)
            .unwrap();
        bytes
    }

    fn put_blob(&self, repository: &str, bytes: &[u8]) -> String {
        let digest = sha256(bytes);
        let started = ureq::post(&format!("{}/blobs/uploads/", self.base(repository)))
            .call()
            .unwrap();
        let location = started.header("Location").unwrap().to_string();
        let location = if location.starts_with("http") {
            location
        } else {
            format!("http://{}{location}", self.server.address())
        };
        let separator = if location.contains('?') { '&' } else { '?' };
        ureq::put(&format!("{location}{separator}digest={digest}"))
            .set("Content-Type", "application/octet-stream")
            .send_bytes(bytes)
            .unwrap();
        digest
    }
}

/// The referrers-tag-schema tag of `digest`, where a registry without the referrers API (this
/// one) keeps the index of its referrers.
fn referrers_tag(digest: &str) -> String {
    digest.replace(':', "-")
}

#[test]
fn cosign_signatures_are_accepted_in_both_layouts() {
    let Some(setup) = Setup::new() else {
        return;
    };
    // The `.sig` tag, what `cosign sign --key` writes by default.
    let digest = setup.push("eviction_batch_first", "cosign/legacy");
    let (ok, out, err) = setup.pull("cosign/legacy", &digest, "cosign.pub");
    assert!(!ok && err.contains("unsigned"), "{out}{err}");
    setup.cosign_sign("cosign/legacy", &digest, &[]);
    let tags = setup.tags("cosign/legacy");
    assert!(
        tags.contains(&format!("{}.sig", referrers_tag(&digest))),
        "{tags:?}"
    );
    assert!(
        !tags.contains(&referrers_tag(&digest)),
        "no referrer by default: {tags:?}"
    );
    let (ok, out, err) = setup.pull("cosign/legacy", &digest, "cosign.pub");
    assert!(ok, "{out}{err}");
    assert!(out.contains(&digest), "{out}");
    let (ok, _, err) = setup.pull("cosign/legacy", &digest, "other/cosign.pub");
    assert!(
        !ok && err.contains("not signed by the configured key"),
        "{err}"
    );

    // A Sigstore bundle as an OCI 1.1 referrer (`--new-bundle-format`, cosign v3's default):
    // this registry has no referrers API, so cosign keeps the referrer index under the fallback
    // tag `sha256-<hex>`, and writes no `.sig` tag.
    let digest = setup.push("eviction_default", "cosign/bundle");
    setup.cosign_sign("cosign/bundle", &digest, &["--new-bundle-format"]);
    let tags = setup.tags("cosign/bundle");
    assert!(tags.contains(&referrers_tag(&digest)), "{tags:?}");
    assert!(
        !tags.contains(&format!("{}.sig", referrers_tag(&digest))),
        "{tags:?}"
    );
    let index = setup.manifest("cosign/bundle", &referrers_tag(&digest));
    let referrer = setup.manifest(
        "cosign/bundle",
        index["manifests"][0]["digest"].as_str().unwrap(),
    );
    assert_eq!(referrer["subject"]["digest"], digest.as_str(), "{referrer}");
    assert!(
        referrer["layers"][0]["mediaType"]
            .as_str()
            .unwrap()
            .starts_with("application/vnd.dev.sigstore.bundle"),
        "{referrer}"
    );
    let (ok, out, err) = setup.cosign_verify("cosign/bundle", &digest, "cosign.pub");
    assert!(ok, "cosign verifies its own bundle: {out}{err}");
    let (ok, out, err) = setup.pull("cosign/bundle", &digest, "cosign.pub");
    assert!(ok, "{out}{err}");
    let (ok, _, err) = setup.pull("cosign/bundle", &digest, "other/cosign.pub");
    assert!(
        !ok && err.contains("not signed by the configured key"),
        "{err}"
    );
}

#[test]
fn wasmlet_signatures_with_cosign_keys_pass_cosign_verify() {
    let Some(setup) = Setup::new() else {
        return;
    };
    let digest = setup.push("eviction_batch_first", "wasmlet/signed");
    let tag = setup.server.reference("wasmlet/signed:v1");
    // The encrypted key opens only with its password; the error names the key file.
    let (ok, _, err) = setup.wasmlet(
        &["plugin", "sign", &tag, "--key", "cosign.key"],
        Some("wrong"),
    );
    assert!(!ok && err.contains("cosign.key"), "{err}");
    assert!(
        err.contains("password") && err.contains("COSIGN_PASSWORD"),
        "{err}"
    );
    let (ok, _, err) = setup.wasmlet(&["plugin", "sign", &tag, "--key", "cosign.key"], None);
    assert!(!ok && err.contains("COSIGN_PASSWORD is not set"), "{err}");
    let (ok, out, err) = setup.cosign_verify("wasmlet/signed", &digest, "cosign.pub");
    assert!(!ok, "nothing signed yet: {out}{err}");

    let (ok, out, err) = setup.wasmlet(
        &["plugin", "sign", &tag, "--key", "cosign.key"],
        Some(PASSWORD),
    );
    assert!(ok, "{err}");
    assert!(out.contains(&digest), "{out}");
    let tags = setup.tags("wasmlet/signed");
    assert!(
        tags.contains(&format!("{}.sig", referrers_tag(&digest))),
        "{tags:?}"
    );

    let (ok, out, err) = setup.cosign_verify("wasmlet/signed", &digest, "cosign.pub");
    assert!(ok, "cosign verify: {out}{err}");
    assert!(out.contains(&digest), "{out}");
    let (ok, out, err) = setup.cosign_verify("wasmlet/signed", &digest, "other/cosign.pub");
    assert!(!ok, "the wrong key: {out}{err}");
    let (ok, out, err) = setup.pull("wasmlet/signed", &digest, "cosign.pub");
    assert!(ok, "{out}{err}");
}

#[test]
fn tampered_signatures_fail_in_wasmlet_and_cosign() {
    let Some(setup) = Setup::new() else {
        return;
    };
    let repository = "tampered/plugin";
    let signed = setup.push("eviction_batch_first", repository);
    let tag = setup.server.reference(&format!("{repository}:v1"));
    let (ok, _, err) = setup.wasmlet(
        &["plugin", "sign", &tag, "--key", "cosign.key"],
        Some(PASSWORD),
    );
    assert!(ok, "{err}");
    let signature_manifest = setup.manifest(repository, &format!("{}.sig", referrers_tag(&signed)));

    // A signature made for another digest: the signed manifest's `.sig` copied to another's.
    let other = setup.push("eviction_default", repository);
    setup.put_manifest(
        repository,
        &format!("{}.sig", referrers_tag(&other)),
        &signature_manifest,
    );
    let (ok, out, err) = setup.pull(repository, &other, "cosign.pub");
    assert!(
        !ok && err.contains(&format!("for the manifest {signed}")),
        "{out}{err}"
    );
    let (ok, out, err) = setup.cosign_verify(repository, &other, "cosign.pub");
    assert!(
        !ok,
        "cosign accepted a signature for another digest: {out}{err}"
    );

    // The payload altered after signing (the same signature annotation over other bytes).
    let third = setup.push("eviction_psi_guard", repository);
    let layer = &signature_manifest["layers"][0];
    let payload = setup.blob(repository, layer["digest"].as_str().unwrap());
    let altered = String::from_utf8(payload)
        .unwrap()
        .replace(&signed, &third)
        .into_bytes();
    let altered_digest = setup.put_blob(repository, &altered);
    let mut forged = signature_manifest.clone();
    forged["layers"][0]["digest"] = altered_digest.into();
    forged["layers"][0]["size"] = altered.len().into();
    setup.put_manifest(
        repository,
        &format!("{}.sig", referrers_tag(&third)),
        &forged,
    );
    let (ok, out, err) = setup.pull(repository, &third, "cosign.pub");
    assert!(
        !ok && err.contains("not signed by the configured key"),
        "{out}{err}"
    );
    let (ok, out, err) = setup.cosign_verify(repository, &third, "cosign.pub");
    assert!(!ok, "cosign accepted an altered payload: {out}{err}");

    // A Sigstore bundle made for another digest: cosign's referrer of one manifest, re-pointed
    // (its `subject`) at another and listed under that one's fallback tag.
    let bundled = setup.push("gc_default", repository);
    setup.cosign_sign(repository, &bundled, &["--new-bundle-format"]);
    let (ok, out, err) = setup.pull(repository, &bundled, "cosign.pub");
    assert!(ok, "{out}{err}");
    let index = setup.manifest(repository, &referrers_tag(&bundled));
    let mut referrer = setup.manifest(
        repository,
        index["manifests"][0]["digest"].as_str().unwrap(),
    );
    let target = setup.push("gc_keep_prefixes", repository);
    let target_size = setup.manifest_bytes(repository, &target).len();
    referrer["subject"]["digest"] = target.clone().into();
    referrer["subject"]["size"] = target_size.into();
    let moved = setup.put_manifest(repository, "moved", &referrer);
    let mut moved_index = index.clone();
    moved_index["manifests"][0]["digest"] = moved.into();
    moved_index["manifests"][0]["size"] = serde_json::to_vec(&referrer).unwrap().len().into();
    setup.put_manifest(repository, &referrers_tag(&target), &moved_index);
    let (ok, out, err) = setup.pull(repository, &target, "cosign.pub");
    assert!(!ok && err.contains(&format!("not {target}")), "{out}{err}");
    let (ok, out, err) = setup.cosign_verify(repository, &target, "cosign.pub");
    assert!(
        !ok,
        "cosign accepted a bundle for another digest: {out}{err}"
    );
}
