use super::cosign::{self, Signature};
use super::*;
use base64::Engine as _;

#[test]
fn references_name_their_registry() {
    let r = OciReference::parse("127.0.0.1:5000/plugins/evict:v1").unwrap();
    assert_eq!(r.registry(), "127.0.0.1:5000");
    assert_eq!(r.repository(), "plugins/evict");
    assert_eq!(r.tag(), Some("v1"));
    assert!(r.is_loopback());
    assert_eq!(r.to_string(), "oci://127.0.0.1:5000/plugins/evict:v1");
    let hex = "a".repeat(64);
    let d = OciReference::parse(&format!("registry.example/p@sha256:{hex}")).unwrap();
    assert_eq!(d.tag(), None);
    assert_eq!(d.digest(), Some(format!("sha256:{hex}").as_str()));
    assert!(!d.is_loopback());
    let latest = OciReference::parse("localhost:5000/p").unwrap();
    assert_eq!(latest.tag(), Some("latest"));
    assert!(latest.is_loopback());
    // The reference grammar (distribution's) has no IPv6 literals.
    assert!(OciReference::parse("[::1]:5000/p:t").is_err());
    for bad in [
        "plugins/evict:v1",
        "evict",
        "registry.example/p@sha256:1234",
        "registry.example/UPPER:tag",
    ] {
        let err = OciReference::parse(bad).unwrap_err();
        assert!(err.to_string().contains(bad), "{err}");
    }
}

#[test]
fn the_store_is_content_addressed_and_remembers_tags() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().to_path_buf());
    let digest = store.put_blob(b"component").unwrap();
    assert_eq!(store.blob(&digest).as_deref(), Some(&b"component"[..]));
    // A blob changed on disk is not served, and is removed.
    std::fs::write(store.blob_path(&digest).unwrap(), b"tampered").unwrap();
    assert_eq!(store.blob(&digest), None);
    assert!(!store.blob_path(&digest).unwrap().exists());
    assert_eq!(store.blob("sha256:../../etc/passwd"), None);
    let tag = OciReference::parse("localhost:5000/a/b:v1").unwrap();
    assert_eq!(store.cached_ref(&tag), None);
    store.record_ref(&tag, &digest).unwrap();
    assert_eq!(store.cached_ref(&tag), Some(digest.clone()));
    let other = OciReference::parse("localhost:5000/a/b:v2").unwrap();
    assert_eq!(store.cached_ref(&other), None);
}

#[test]
fn artifacts_have_one_wasm_layer() {
    let wasm = b"\0asm\x0d\0\x01\0";
    let config = artifact::config(wasm, &artifact::ComponentInfo::default());
    let config_json: serde_json::Value = serde_json::from_slice(&config).unwrap();
    assert_eq!(config_json["architecture"], "wasm");
    assert_eq!(config_json["os"], "wasip2");
    assert_eq!(config_json["layerDigests"][0], store::digest_of(wasm));
    let manifest_bytes = artifact::manifest(&config, wasm);
    let manifest_json: serde_json::Value = serde_json::from_slice(&manifest_bytes).unwrap();
    assert_eq!(
        manifest_json["config"]["mediaType"],
        artifact::CONFIG_MEDIA_TYPE
    );
    assert_eq!(manifest_json["config"]["digest"], store::digest_of(&config));
    let manifest = artifact::Manifest::parse(&manifest_bytes).unwrap();
    assert_eq!(
        manifest.wasm_layer().unwrap().digest,
        store::digest_of(wasm)
    );
    let legacy = serde_json::json!({"schemaVersion": 2, "config": {"mediaType": "application/vnd.wasm.config.v1+json", "digest": "sha256:00", "size": 2},
        "layers": [{"mediaType": artifact::LEGACY_WASM_LAYER_MEDIA_TYPE, "digest": "sha256:00", "size": 8}]});
    let legacy = artifact::Manifest::parse(legacy.to_string().as_bytes()).unwrap();
    assert!(legacy.wasm_layer().is_ok());
    let image = serde_json::json!({"schemaVersion": 2, "config": {"mediaType": "x", "digest": "sha256:00", "size": 1},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": "sha256:00", "size": 8}]});
    let image = artifact::Manifest::parse(image.to_string().as_bytes()).unwrap();
    assert!(image
        .wasm_layer()
        .unwrap_err()
        .to_string()
        .contains("not a wasm artifact"));
}

/// A P-256 key in PKCS#8 PEM, as `openssl genpkey -algorithm EC -pkeyopt
/// ec_paramgen_curve:P-256` writes one.
fn private_key() -> String {
    use p256::pkcs8::{EncodePrivateKey, LineEnding};
    let key = p256::SecretKey::from_slice(&[7u8; 32]).unwrap();
    key.to_pkcs8_pem(LineEnding::LF).unwrap().to_string()
}

#[test]
fn signatures_verify_only_with_the_key_and_the_digest() {
    let digest = format!("sha256:{}", "b".repeat(64));
    let key = private_key();
    let public = cosign::public_key_pem(&key).unwrap();
    let payload = cosign::payload("localhost:5000/p", &digest);
    let text: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    assert_eq!(
        text["critical"]["image"]["docker-manifest-digest"],
        digest.as_str()
    );
    assert_eq!(text["critical"]["type"], "cosign container image signature");
    let signature = Signature {
        payload: base64::engine::general_purpose::STANDARD.encode(&payload),
        signature: cosign::sign(&key, &payload).unwrap(),
    };
    cosign::verify(&public, std::slice::from_ref(&signature), &digest).unwrap();
    let unsigned = cosign::verify(&public, &[], &digest)
        .unwrap_err()
        .to_string();
    assert!(unsigned.contains("unsigned"), "{unsigned}");
    let other_digest = format!("sha256:{}", "c".repeat(64));
    let err = cosign::verify(&public, std::slice::from_ref(&signature), &other_digest)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not "), "{err}");
    let other_key = {
        use p256::pkcs8::{EncodePrivateKey, LineEnding};
        let k = p256::SecretKey::from_slice(&[9u8; 32]).unwrap();
        cosign::public_key_pem(&k.to_pkcs8_pem(LineEnding::LF).unwrap()).unwrap()
    };
    let err = cosign::verify(&other_key, std::slice::from_ref(&signature), &digest)
        .unwrap_err()
        .to_string();
    assert!(err.contains("not signed by the configured key"), "{err}");
    assert!(cosign::sign("not a key", &payload).is_err());
    assert_eq!(
        cosign::signature_tag(&digest),
        format!("sha256-{}.sig", "b".repeat(64))
    );
}

#[test]
fn docker_config_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.json");
    let auth = base64::engine::general_purpose::STANDARD.encode("alice:s3cret");
    std::fs::write(
        &file,
        serde_json::json!({"auths": {
            "registry.example:5000": {"auth": auth},
            "https://other.example/v2/": {"username": "bob", "password": "pw"},
        }})
        .to_string(),
    )
    .unwrap();
    let basic = |registry: &str| match auth::credentials(registry, Some(&file)).unwrap() {
        oci_client::secrets::RegistryAuth::Basic(u, p) => Some((u, p)),
        _ => None,
    };
    assert_eq!(
        basic("registry.example:5000"),
        Some(("alice".into(), "s3cret".into()))
    );
    assert_eq!(basic("other.example"), Some(("bob".into(), "pw".into())));
    assert_eq!(basic("unknown.example"), None);
    let missing = dir.path().join("none.json");
    assert!(auth::credentials("r.example", Some(&missing)).is_err());
}

#[test]
fn a_ca_file_must_hold_a_usable_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.pem");
    let e = tls::ca_certificates(&missing).unwrap_err();
    assert!(
        matches!(e, tls::CaFileError::Read { .. }) && e.to_string().contains("missing.pem"),
        "{e}"
    );
    let empty = dir.path().join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let e = tls::ca_certificates(&empty).unwrap_err();
    assert!(
        matches!(e, tls::CaFileError::Empty { .. }) && e.to_string().contains("empty.pem"),
        "{e}"
    );
    let garbage = dir.path().join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let e = tls::ca_certificates(&garbage).unwrap_err();
    assert!(
        matches!(e, tls::CaFileError::Invalid { index: 1, .. })
            && e.to_string().contains("garbage.pem"),
        "{e}"
    );
    // insecure and a CA file contradict each other.
    let reference = OciReference::parse("registry.example/p:v1").unwrap();
    let access = RegistryAccess {
        insecure: true,
        ca_file: Some(garbage),
        registry_config: None,
    };
    let e = Remote::new(&reference, &access).err().unwrap();
    assert!(e.to_string().contains("exclude each other"), "{e}");
}

#[test]
fn https_unless_insecure_or_loopback_without_a_ca() {
    let remote = OciReference::parse("registry.example:5000/p:v1").unwrap();
    let local = OciReference::parse("127.0.0.1:5000/p:v1").unwrap();
    let none = RegistryAccess::default();
    let insecure = RegistryAccess {
        insecure: true,
        ..Default::default()
    };
    let ca = RegistryAccess {
        ca_file: Some("ca.pem".into()),
        ..Default::default()
    };
    assert!(!none.plain_http(&remote));
    assert!(insecure.plain_http(&remote));
    assert!(none.plain_http(&local));
    assert!(!ca.plain_http(&local));
    assert_eq!(
        tls::address("registry.example:5000", false),
        "registry.example:5000"
    );
    assert_eq!(tls::address("ghcr.io", false), "ghcr.io:443");
    assert_eq!(tls::address("ghcr.io", true), "ghcr.io:80");
}

/// An error whose source is an io::Error around a rustls error, as a TLS connector reports one.
#[derive(Debug)]
struct Wrapped(std::io::Error);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("error sending request")
    }
}

impl std::error::Error for Wrapped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn tls_failures_are_found_in_the_chain_and_explained() {
    use rustls::CertificateError;
    use tls::TlsFailure;
    let wrapped =
        |e: rustls::Error| Wrapped(std::io::Error::new(std::io::ErrorKind::InvalidData, e));
    let failure = TlsFailure::in_chain(&wrapped(rustls::Error::InvalidCertificate(
        CertificateError::UnknownIssuer,
    )))
    .unwrap();
    assert!(
        matches!(failure, TlsFailure::UnknownIssuer(_)),
        "{failure:?}"
    );
    let message = failure.message("10.0.0.5:5000");
    assert!(
        message.contains("10.0.0.5:5000")
            && message.contains("caFile")
            && message.contains("--ca-file"),
        "{message}"
    );
    let failure = TlsFailure::in_chain(&wrapped(rustls::Error::InvalidCertificate(
        CertificateError::NotValidForName,
    )))
    .unwrap();
    assert!(matches!(failure, TlsFailure::WrongName(_)), "{failure:?}");
    let failure = TlsFailure::in_chain(&wrapped(rustls::Error::InvalidMessage(
        rustls::InvalidMessage::InvalidContentType,
    )))
    .unwrap();
    assert!(matches!(failure, TlsFailure::NotTls(_)), "{failure:?}");
    assert!(failure.message("10.0.0.5:5000").contains("insecure: true"));
    let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    assert_eq!(TlsFailure::in_chain(&Wrapped(refused)), None);
    // Over plain HTTP, a TLS registry answers 400 asking for HTTPS.
    let answer = OciDistributionError::ServerError {
        code: 400,
        url: "http://127.0.0.1:5000/v2/".into(),
        message: "Client sent an HTTP request to an HTTPS server.".into(),
    };
    let failure = TlsFailure::of(&answer, true).unwrap();
    assert!(failure.message("127.0.0.1:5000").contains("caFile"));
    assert_eq!(TlsFailure::of(&answer, false), None);
}
