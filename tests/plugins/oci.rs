//! `oci://` plugins against a real registry on loopback (Debian's docker-registry, the CNCF
//! distribution server): push, pull by tag and digest, a moved tag swapped in or refused, the
//! registry down and back, signatures required, and digests that do not match.

use super::*;
use oci_registry::TestRegistry;
use wasmlet_plugin_host::{pull_plugin, push_plugin, sign_plugin, RegistryAccess};

use wasmlet_test_support::oci_registry;
mod tls;

/// A registry over `plugins` whose `oci://` plugins are stored under `root`.
fn oci_registry(dir: &Path, root: &Path, plugins: &str) -> Arc<PluginRegistry> {
    std::fs::create_dir_all(dir).unwrap();
    let file = dir.join("plugins.yaml");
    std::fs::write(
        &file,
        format!("apiVersion: wasmlet.dev/v1alpha1\nkind: PluginConfiguration\nplugins:\n{plugins}"),
    )
    .unwrap();
    let engine = PluginEngine::new(Some(dir.join("cache"))).unwrap();
    PluginRegistry::with_root_dir(engine, Some(file), root)
}

fn entry(name: &str, reference: &str, extra: &str) -> String {
    format!("- name: {name}\n  world: eviction-policy\n  path: {reference}\n{extra}")
}

fn push(file: &Path, reference: &str) -> String {
    let report = push_plugin(file, reference, &RegistryAccess::default()).expect("push");
    report
        .lines()
        .find_map(|l| l.trim().strip_prefix("digest: "))
        .expect("a digest in the push report")
        .to_string()
}

fn file_sha(file: &Path) -> String {
    sha256_hex(&std::fs::read(file).unwrap())
}

fn serving_sha(registry: &PluginRegistry, name: &str) -> Option<String> {
    registry
        .slot_named(name)
        .and_then(|s| s.serving())
        .map(|v| v.sha256.clone())
}

fn report_of(registry: &PluginRegistry, name: &str) -> serde_json::Value {
    registry.report()["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == name)
        .cloned()
        .unwrap()
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn push_then_load_by_tag_and_by_digest_and_pull() {
    let Some(server) = TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let component = components::EVICTION_BATCH_FIRST.path();
    let tag = server.reference("plugins/evict:v1");
    let digest = push(&component, &tag);
    let by_digest = server.reference(&format!("plugins/evict@{digest}"));
    let registry = oci_registry(
        dir.path(),
        &root,
        &format!(
            "{}{}",
            entry("by-tag", &tag, ""),
            entry("by-digest", &by_digest, "  shadow: true\n")
        ),
    );
    let sha = file_sha(&component);
    assert_eq!(serving_sha(&registry, "by-tag"), Some(sha.clone()));
    assert_eq!(serving_sha(&registry, "by-digest"), Some(sha.clone()));
    let report = report_of(&registry, "by-tag");
    assert_eq!(report["path"], tag.as_str());
    assert_eq!(report["oci"]["digest"], digest.as_str());
    assert_eq!(report["oci"]["registry"], "reachable");
    // Content-addressed under the root dir: the manifest and the component, by digest.
    let blobs = root.join("plugins/oci/blobs/sha256");
    assert!(blobs.join(digest.trim_start_matches("sha256:")).is_file());
    assert!(blobs.join(&sha).is_file());
    // The decisions are the plugin's.
    let s = snapshot(&mut Lcg(3), 10, policy::Signal::MemoryAvailable);
    assert!(plugin_decided(&registry.rank(&s)));

    // `plugin pull` writes the same component.
    let out = dir.path().join("pulled.wasm");
    let pulled = pull_plugin(&tag, Some(&out), None, &RegistryAccess::default()).unwrap();
    assert_eq!(pulled.digest, digest);
    assert_eq!(pulled.sha256, sha);
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&component).unwrap()
    );
    let pulled = pull_plugin(&by_digest, Some(&out), None, &RegistryAccess::default()).unwrap();
    assert_eq!(pulled.digest, digest);
}

#[test]
fn a_moved_tag_is_swapped_in_and_a_broken_one_refused() {
    let Some(server) = TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let tag = server.reference("plugins/evict:stable");
    push(&components::EVICTION_BATCH_FIRST.path(), &tag);
    let registry = oci_registry(
        dir.path(),
        &dir.path().join("root"),
        &entry("moving", &tag, "  pollPeriod: 200ms\n"),
    );
    assert_eq!(
        serving_sha(&registry, "moving"),
        Some(file_sha(&components::EVICTION_BATCH_FIRST.path()))
    );

    // The tag moves to a new version: polled, validated, swapped in.
    let next = components::EVICTION_DEFAULT.path();
    let next_digest = push(&next, &tag);
    wait_for("the new version to serve", || {
        serving_sha(&registry, "moving") == Some(file_sha(&next))
    });
    assert_eq!(
        report_of(&registry, "moving")["oci"]["digest"],
        next_digest.as_str()
    );

    // The tag moves to a component of another world: refused, the last version keeps serving.
    let broken_digest = push(&components::GC_DEFAULT.path(), &tag);
    wait_for("the broken version to be refused", || {
        report_of(&registry, "moving")["lastRejected"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains(&broken_digest))
    });
    let report = report_of(&registry, "moving");
    let reason = report["lastRejected"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("does not implement world eviction-policy"),
        "{reason}"
    );
    assert_eq!(report["oci"]["refusedDigest"], broken_digest.as_str());
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(serving_sha(&registry, "moving"), Some(file_sha(&next)));
    let s = snapshot(&mut Lcg(4), 10, policy::Signal::MemoryAvailable);
    assert!(plugin_decided(&registry.rank(&s)));
    // Refused once: not pulled and refused again at every poll.
    assert_eq!(report_of(&registry, "moving")["swaps"], 2);
}

#[test]
fn with_the_registry_down_the_stored_version_serves_until_it_is_back() {
    let Some(mut server) = TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let tag = server.reference("plugins/evict:v1");
    let first = components::EVICTION_BATCH_FIRST.path();
    push(&first, &tag);
    let plugins = entry("cached", &tag, "  pollPeriod: 200ms\n");
    let running = oci_registry(&dir.path().join("a"), &root, &plugins);
    assert_eq!(serving_sha(&running, "cached"), Some(file_sha(&first)));

    server.stop();
    // A node that keeps running keeps serving, and says the registry is unreachable.
    wait_for("the poll to find the registry down", || {
        report_of(&running, "cached")["oci"]["registry"] == "unreachable"
    });
    assert_eq!(serving_sha(&running, "cached"), Some(file_sha(&first)));
    // A node that starts now loads the digest the tag resolved to last, from its store.
    let restarted = oci_registry(&dir.path().join("b"), &root, &plugins);
    assert_eq!(serving_sha(&restarted, "cached"), Some(file_sha(&first)));
    assert_eq!(
        report_of(&restarted, "cached")["oci"]["registry"],
        "unreachable"
    );
    // ...and counts what happened.
    let mut prometheus = prometheus_client::registry::Registry::with_prefix("wasmlet");
    restarted.register_metrics(&mut prometheus);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &prometheus).unwrap();
    assert!(
        text.contains(r#"wasmlet_plugin_pulls_total{plugin="cached",result="unreachable"}"#),
        "{text}"
    );

    // The registry comes back with a new version on the tag: both nodes recover and swap.
    server.resume();
    let next = components::EVICTION_DEFAULT.path();
    push(&next, &tag);
    for (name, registry) in [("running", &running), ("restarted", &restarted)] {
        wait_for(
            &format!("the {name} node to swap once the registry is back"),
            || serving_sha(registry, "cached") == Some(file_sha(&next)),
        );
        assert_eq!(
            report_of(registry, "cached")["oci"]["registry"],
            "reachable"
        );
    }
}

/// A P-256 key pair: the private key's PKCS#8 PEM, and the public key's PEM written to `dir`.
fn key_pair(dir: &Path, name: &str, seed: u8) -> (PathBuf, PathBuf) {
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey, LineEnding};
    let key = p256::SecretKey::from_slice(&[seed; 32]).unwrap();
    let private = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    std::fs::write(
        &private,
        key.to_pkcs8_pem(LineEnding::LF).unwrap().as_bytes(),
    )
    .unwrap();
    std::fs::write(
        &public,
        key.public_key().to_public_key_pem(LineEnding::LF).unwrap(),
    )
    .unwrap();
    (private, public)
}

#[test]
fn a_required_signature_must_be_there_and_by_the_key() {
    let Some(server) = TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let (trusted_key, trusted_pub) = key_pair(dir.path(), "trusted", 7);
    let (other_key, _) = key_pair(dir.path(), "other", 9);
    let tag = server.reference("plugins/signed:v1");
    let component = components::EVICTION_BATCH_FIRST.path();
    let digest = push(&component, &tag);
    let registry = oci_registry(
        dir.path(),
        &dir.path().join("root"),
        &entry(
            "signed",
            &tag,
            &format!(
                "  pollPeriod: 200ms\n  verify: {{publicKey: {}}}\n",
                trusted_pub.display()
            ),
        ),
    );
    let reason = || {
        report_of(&registry, "signed")["lastRejected"]["reason"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    // Unsigned: refused, nothing serves (the built-in default decides).
    assert_eq!(serving_sha(&registry, "signed"), None);
    assert!(reason().contains("unsigned"), "{}", reason());

    // Signed by another key: still refused.
    sign_plugin(&tag, &other_key, &RegistryAccess::default()).unwrap();
    wait_for("the wrong key to be refused", || {
        reason().contains("not signed by the configured key")
    });
    assert_eq!(serving_sha(&registry, "signed"), None);

    // Signed by the trusted key (beside the other signature): loaded at the next poll.
    let report = sign_plugin(&tag, &trusted_key, &RegistryAccess::default()).unwrap();
    assert!(report.contains(&digest), "{report}");
    wait_for("the signed version to serve", || {
        serving_sha(&registry, "signed") == Some(file_sha(&component))
    });

    // A new unsigned version on the tag is refused; the signed one keeps serving.
    let unsigned_digest = push(&components::EVICTION_DEFAULT.path(), &tag);
    wait_for("the unsigned version to be refused", || {
        let r = reason();
        r.contains(&unsigned_digest) || r.contains("unsigned")
    });
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(serving_sha(&registry, "signed"), Some(file_sha(&component)));

    // `plugin pull --key` checks the same way.
    let out = dir.path().join("out.wasm");
    let by_digest = server.reference(&format!("plugins/signed@{digest}"));
    pull_plugin(
        &by_digest,
        Some(&out),
        Some(&trusted_pub),
        &RegistryAccess::default(),
    )
    .unwrap();
    let err = pull_plugin(
        &tag,
        Some(&out),
        Some(&trusted_pub),
        &RegistryAccess::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("unsigned"), "{err}");
}

#[test]
fn digests_that_do_not_match_are_refused() {
    let Some(server) = TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let first = components::EVICTION_BATCH_FIRST.path();
    let tag = server.reference("plugins/evict:v1");
    let digest = push(&first, &tag);

    // A tampered layer in the registry's storage: the bytes do not match their digest.
    let blob = server.blob_data(&format!("sha256:{}", file_sha(&first)));
    let mut bytes = std::fs::read(&blob).unwrap();
    bytes[100] ^= 0xff;
    std::fs::write(&blob, &bytes).unwrap();
    let registry = oci_registry(
        dir.path(),
        &dir.path().join("root"),
        &entry(
            "tampered",
            &server.reference(&format!("plugins/evict@{digest}")),
            "",
        ),
    );
    assert_eq!(serving_sha(&registry, "tampered"), None);
    let reason = report_of(&registry, "tampered")["lastRejected"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("digest mismatch"), "{reason}");
    assert!(!dir
        .path()
        .join("root/plugins/oci/blobs/sha256")
        .join(file_sha(&first))
        .exists());

    // A component pin (`sha256:`) still applies to an OCI plugin: another component is refused.
    let second = components::EVICTION_DEFAULT.path();
    let other_tag = server.reference("plugins/other:v1");
    push(&second, &other_tag);
    let dir2 = tempfile::tempdir().unwrap();
    let pinned = oci_registry(
        dir2.path(),
        &dir2.path().join("root"),
        &entry(
            "pinned",
            &other_tag,
            &format!("  sha256: {}\n", file_sha(&first)),
        ),
    );
    assert_eq!(serving_sha(&pinned, "pinned"), None);
    let reason = report_of(&pinned, "pinned")["lastRejected"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains("does not match the pinned"), "{reason}");

    // A digest the repository does not have: refused with the registry's answer.
    let missing = format!("sha256:{}", "0".repeat(64));
    let absent = oci_registry(
        dir2.path(),
        &dir2.path().join("root"),
        &entry(
            "absent",
            &server.reference(&format!("plugins/evict@{missing}")),
            "",
        ),
    );
    let reason = report_of(&absent, "absent")["lastRejected"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.contains(&missing), "{reason}");
}

#[test]
fn credentials_come_from_a_docker_config_file() {
    let Some(server) = TestRegistry::start_with_login() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let component = components::EVICTION_BATCH_FIRST.path();
    let tag = server.reference("private/evict:v1");
    let err = push_plugin(&component, &tag, &RegistryAccess::default()).unwrap_err();
    assert!(
        err.to_string().to_lowercase().contains("authorized"),
        "{err}"
    );

    // `docker login` writes base64 user:password under auths.<registry>.auth.
    use base64::Engine as _;
    let docker_config = dir.path().join("docker-config.json");
    std::fs::write(
        &docker_config,
        serde_json::json!({"auths": {server.address(): {
            "auth": base64::engine::general_purpose::STANDARD.encode("alice:s3cret")}}})
        .to_string(),
    )
    .unwrap();
    let access = RegistryAccess {
        registry_config: Some(docker_config.clone()),
        ..Default::default()
    };
    push_plugin(&component, &tag, &access).expect("push with credentials");
    let registry = oci_registry(
        dir.path(),
        &dir.path().join("root"),
        &format!(
            "{}{}",
            entry(
                "with-login",
                &tag,
                &format!("  registryConfig: {}\n", docker_config.display())
            ),
            entry("anonymous", &tag, "  shadow: true\n"),
        ),
    );
    assert_eq!(
        serving_sha(&registry, "with-login"),
        Some(file_sha(&component))
    );
    assert_eq!(serving_sha(&registry, "anonymous"), None);
    let reason = report_of(&registry, "anonymous")["lastRejected"]["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(reason.to_lowercase().contains("authorized"), "{reason}");
}

#[test]
fn a_moved_tag_with_a_rollout_is_tried_then_promoted() {
    let Some(server) = TestRegistry::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    let tag = server.reference("plugins/evict:fleet");
    let old = components::EVICTION_DEFAULT.path();
    push(&old, &tag);
    let registry = oci_registry(
        dir.path(),
        &root,
        &entry(
            "rolled",
            &tag,
            "  pollPeriod: 200ms\n  rollout: {shadowCycles: 2}\n",
        ),
    );
    assert_eq!(serving_sha(&registry, "rolled"), Some(file_sha(&old)));

    // The tag moves: the new version is pulled, validated and put on trial, not swapped in.
    let new = components::EVICTION_BATCH_FIRST.path();
    let new_digest = push(&new, &tag);
    wait_for("the new version to go on trial", || {
        report_of(&registry, "rolled")["rollout"]["state"] == "trial"
    });
    let report = report_of(&registry, "rolled");
    assert_eq!(report["rollout"]["digest"], new_digest.as_str(), "{report}");
    assert_eq!(report["rollout"]["sha256"], file_sha(&new));
    // Polls of the same tag leave the trial alone.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(report_of(&registry, "rolled")["rollout"]["state"], "trial");
    assert_eq!(serving_sha(&registry, "rolled"), Some(file_sha(&old)));

    // Two eviction decisions later it serves, and the store records the tag's new digest.
    for _ in 0..2 {
        registry.rank(&super::rollout::pods(false));
    }
    assert_eq!(serving_sha(&registry, "rolled"), Some(file_sha(&new)));
    let report = report_of(&registry, "rolled");
    assert_eq!(report["rollout"]["state"], "promoted", "{report}");
    assert_eq!(report["oci"]["digest"], new_digest.as_str());
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(report_of(&registry, "rolled")["swaps"], 2);
    drop(server);
    let restarted = oci_registry(&dir.path().join("b"), &root, &entry("rolled", &tag, ""));
    assert_eq!(serving_sha(&restarted, "rolled"), Some(file_sha(&new)));
}
